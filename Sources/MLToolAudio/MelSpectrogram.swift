import Foundation

/// The mel front end of Google's speech embedding, as the `melspectrogram.tflite` that pyopen-wakeword ships computes
/// it (facts read from that file's constants and ops, and from the wheel's Python around it):
///
///     input      16 kHz mono samples at int16 scale (−32768…32767 as floats)
///     frames     512 samples every 160, no padding: ⌊(N − 512)/160⌋ + 1 of them
///     window     a periodic Hann of 400 samples in the middle of the 512 (56 zeros each side)
///     power      |DFT|² at the 257 bins 0…8000 Hz
///     mel        × librosa's Slaney filter bank (Slaney scale and area norm): 32 bands, 60–3800 Hz
///     decibels   10·log10(max(mel, 1e-10)), then floored at (the largest value over the whole input) − 80
///
/// and the embedding's input is decibels/10 + 2 (`embeddingInput`). `decibels` runs a radix-2 FFT;
/// `decibelsReference` the DFT as the TFLite file does (two convolutions with cos and sin kernels).
public struct MelSpectrogram: Sendable {
    public static let sampleRate = 16000
    public static let fftLength = 512
    public static let windowLength = 400
    public static let hop = 160
    public static let bands = 32
    public static let minHz = 60.0
    public static let maxHz = 3800.0
    public static let topDecibels: Float = 80
    static let bins = fftLength / 2 + 1

    /// The 512-sample analysis window.
    let window: [Float]
    /// The filter bank, bins × bands, row-major (the TFLite's `Const_3`).
    let filters: [Float]
    /// cos and −sin of 2πj/512, j < 512 (Double, rounded once).
    let cosines: [Float]
    let sines: [Float]
    /// Bit reversal of 9-bit indices.
    let reversed: [Int]

    public init() {
        let n = Self.fftLength, pad = (Self.fftLength - Self.windowLength) / 2
        window = (0..<n).map { i in
            let j = i - pad
            guard j >= 0 && j < Self.windowLength else { return 0 }
            return Float(0.5 - 0.5 * cos(2 * Double.pi * Double(j) / Double(Self.windowLength)))
        }
        filters = Self.slaneyFilterBank()
        cosines = (0..<n).map { Float(cos(2 * Double.pi * Double($0) / Double(n))) }
        sines = (0..<n).map { Float(-sin(2 * Double.pi * Double($0) / Double(n))) }
        let bits = n.trailingZeroBitCount
        reversed = (0..<n).map { i in (0..<bits).reduce(0) { r, b in r | ((i >> b) & 1) << (bits - 1 - b) } }
    }

    /// The number of frames of `samples` samples.
    public static func frameCount(_ samples: Int) -> Int { samples < fftLength ? 0 : (samples - fftLength) / hop + 1 }

    /// The decibel frames of `samples` (int16 scale), frames × 32 row-major.
    public func decibels(_ samples: [Float]) -> [Float] {
        let frames = Self.frameCount(samples.count), n = Self.fftLength
        var out = [Float](repeating: 0, count: frames * Self.bands)
        var re = [Float](repeating: 0, count: n), im = [Float](repeating: 0, count: n)
        var power = [Float](repeating: 0, count: Self.bins)
        for f in 0..<frames {
            let start = f * Self.hop
            for i in 0..<n {
                let r = reversed[i]
                re[r] = samples[start + i] * window[i]
                im[r] = 0
            }
            fft(&re, &im)
            for k in 0..<Self.bins { power[k] = re[k] * re[k] + im[k] * im[k] }
            project(power, into: &out, frame: f)
        }
        floorAtTop(&out)
        return out
    }

    /// `decibels` by the defining sums: re_k = Σ w[i]x[i]cos(2πki/512), im_k = −Σ w[i]x[i]sin(2πki/512).
    public func decibelsReference(_ samples: [Float]) -> [Float] {
        let frames = Self.frameCount(samples.count), n = Self.fftLength
        var out = [Float](repeating: 0, count: frames * Self.bands)
        var power = [Float](repeating: 0, count: Self.bins)
        for f in 0..<frames {
            for k in 0..<Self.bins {
                var re: Float = 0, im: Float = 0
                for i in 0..<n {
                    let x = samples[f * Self.hop + i]
                    re += window[i] * cosines[(k * i) % n] * x
                    im += window[i] * sines[(k * i) % n] * x
                }
                power[k] = re * re + im * im
            }
            project(power, into: &out, frame: f)
        }
        floorAtTop(&out)
        return out
    }

    /// What the embedding reads: `decibels` of `clip` (−1…1, scaled to int16) divided by 10, plus 2.
    public func embeddingInput(_ clip: [Float]) -> [Float] {
        decibels(clip.map { $0 * 32768 }).map { $0 / 10 + 2 }
    }

    /// power (257) × filters → 10·log10(max(·, 1e-10)) in frame `f` of `out`, in the TFLite's order of operations.
    private func project(_ power: [Float], into out: inout [Float], frame f: Int) {
        for b in 0..<Self.bands {
            var s: Float = 0
            for k in 0..<Self.bins { s += power[k] * filters[k * Self.bands + b] }
            out[f * Self.bands + b] = log(max(s, 1e-10)) * 10 * 0.43429446
        }
    }

    private func floorAtTop(_ out: inout [Float]) {
        guard let top = out.max() else { return }
        let floor = top - Self.topDecibels
        for i in out.indices { out[i] = max(out[i], floor) }
    }

    /// In-place iterative radix-2 FFT of 512 points whose input is already in bit-reversed order.
    private func fft(_ re: inout [Float], _ im: inout [Float]) {
        let n = Self.fftLength
        var size = 2
        while size <= n {
            let half = size / 2, step = n / size
            var start = 0
            while start < n {
                for j in 0..<half {
                    let c = cosines[j * step], s = sines[j * step]
                    let a = start + j, b = a + half
                    let tr = re[b] * c - im[b] * s, ti = re[b] * s + im[b] * c
                    re[b] = re[a] - tr; im[b] = im[a] - ti
                    re[a] += tr; im[a] += ti
                }
                start += size
            }
            size *= 2
        }
    }

    /// librosa.filters.mel(sr=16000, n_fft=512, n_mels=32, fmin=60, fmax=3800) (htk=False, norm="slaney"): triangles
    /// between consecutive points equally spaced on the Slaney mel scale, each scaled to unit area; Double, rounded
    /// once to Float. bins × bands.
    static func slaneyFilterBank() -> [Float] {
        func mel(_ hz: Double) -> Double { hz < 1000 ? hz * 3 / 200 : 15 + log(hz / 1000) / (log(6.4) / 27) }
        func hz(_ m: Double) -> Double { m < 15 ? m * 200 / 3 : 1000 * exp((log(6.4) / 27) * (m - 15)) }
        let lo = mel(minHz), hi = mel(maxHz)
        let points = (0..<(bands + 2)).map { hz(lo + (hi - lo) * Double($0) / Double(bands + 1)) }
        var w = [Float](repeating: 0, count: bins * bands)
        for b in 0..<bands {
            let norm = 2 / (points[b + 2] - points[b])
            for k in 0..<bins {
                let f = Double(k) * Double(sampleRate) / Double(fftLength)
                let lower = (f - points[b]) / (points[b + 1] - points[b])
                let upper = (points[b + 2] - f) / (points[b + 2] - points[b + 1])
                w[k * bands + b] = Float(max(0, min(lower, upper)) * norm)
            }
        }
        return w
    }
}
