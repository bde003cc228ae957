/// How a sound classifier turns a recording into the windows its graph classifies (docs/FORMAT.md section 4.7):
/// the front end that computes each window's input from samples at `sampleRate`, the clip length short recordings
/// are padded to, and Create ML's overlap factor between neighbouring windows.
public struct SoundConfig: Codable, Equatable, Sendable {
    /// The front end: "speech-mel-v1" (Google's speech embedding's mel spectrogram: 76 frames × 32 bands per window,
    /// decibels / 10 + 2; `MLToolAudio/MelSpectrogram.swift`).
    public var frontEnd: String
    /// The rate recordings are resampled to, in Hz.
    public var sampleRate: Int
    /// Recordings shorter than this many samples (at `sampleRate`) are padded with silence, centred, to it.
    public var minimumSamples: Int
    /// The overlap of neighbouring windows, 0 ≤ overlap < 1: windows start every round(76 · (1 − overlap)) frames.
    public var overlap: Double

    /// The front end this version of mltool computes.
    public static let speechMel = "speech-mel-v1"

    public init(frontEnd: String = SoundConfig.speechMel, sampleRate: Int = 16000, minimumSamples: Int, overlap: Double) {
        self.frontEnd = frontEnd; self.sampleRate = sampleRate; self.minimumSamples = minimumSamples; self.overlap = overlap
    }
}
