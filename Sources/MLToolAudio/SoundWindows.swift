/// The windows a recording is classified in: runs of 76 mel frames (the embedding's input, 0.7825 s of audio: 75 hops
/// of 10 ms and one 32 ms frame), started every `hop` frames, where hop = round(76 · (1 − overlap)) (Create ML's
/// overlap factor; 0.5 by default) and at least 1; the last window ends with the clip. A clip shorter than one window
/// is padded with silence, centred, to one window.
public struct SoundWindows: Sendable, Equatable {
    public static let frames = 76
    /// Samples one window covers at 16 kHz.
    public static let samples = (frames - 1) * MelSpectrogram.hop + MelSpectrogram.fftLength

    /// The 16 kHz samples, padded to at least one window.
    public var samples: [Float]
    /// Where the original clip starts in `samples` (the padding before it).
    public var offset: Int
    /// The first mel frame of each window.
    public var starts: [Int]

    public init(clip: [Float], overlap: Double) {
        var padded = clip, offset = 0
        if clip.count < Self.samples {
            offset = (Self.samples - clip.count) / 2
            padded = [Float](repeating: 0, count: offset) + clip + [Float](repeating: 0, count: Self.samples - clip.count - offset)
        }
        samples = padded
        self.offset = offset
        let frames = MelSpectrogram.frameCount(padded.count)
        let hop = max(1, Int((Double(Self.frames) * (1 - overlap)).rounded()))
        var starts = Array(stride(from: 0, through: frames - Self.frames, by: hop))
        if let last = starts.last, last + Self.frames < frames { starts.append(frames - Self.frames) }
        self.starts = starts
    }

    /// Window `i`'s time range in the original clip, in seconds (clamped to the clip).
    public func timeRange(_ i: Int, clipSamples: Int) -> ClosedRange<Double> {
        let rate = Double(MelSpectrogram.sampleRate)
        let start = starts[i] * MelSpectrogram.hop - offset
        let lo = max(0, Double(start) / rate)
        let hi = min(Double(clipSamples) / rate, Double(start + Self.samples) / rate)
        return lo...max(lo, hi)
    }
}
