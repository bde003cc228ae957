import Foundation
import MLToolCore
import MLToolData
import MLToolEngine

/// A recording's windows and their embeddings: `features` is windows × 96, row-major.
public struct SoundEmbedding: Sendable, Equatable {
    public var windows: SoundWindows.Layout
    public var features: [Float]
}

/// Google's speech embedding over a recording: decode → 16 kHz (`AudioResampler`) → windows (`SoundWindows`) → the
/// mel front end over the whole padded clip (`MelSpectrogram`, so the −80 dB floor is the clip's) → each window's
/// 76 frames, /10 + 2, through the imported `embedding_model.tflite` (`models/speech-embedding.bin`) in one batch.
/// `embed(file:)` files the result in a `FeatureCache` under the SHA-256 of the file's bytes, the model's digest and
/// the overlap, so a second run decodes nothing.
public struct SpeechEmbedding: Sendable {
    public static let dimensions = 96
    let engine: Engine
    let input: String
    let mel = MelSpectrogram()
    /// What identifies the extractor in cache keys.
    public let digest: String

    /// `model`: the imported embedding (input 76 × 32 × 1, output 96); `digest` names it in cache keys.
    public init(model: Model, digest: String, threads: Int = 1) throws {
        guard let graph = model.metadata.graph, let input = graph.inputs.first?.name else {
            throw AudioError.invalidHeader(file: digest, what: "the speech embedding's graph input", value: "missing")
        }
        engine = try Engine(model: model, threads: threads)
        self.input = input
        self.digest = digest
    }

    /// The embeddings of `clip`'s windows.
    public func embed(_ clip: AudioClip, overlap: Double, minimumSamples: Int = SoundWindows.samples) throws -> SoundEmbedding {
        let (layout, batch) = try mel.windowBatch(clip, overlap: overlap, minimumSamples: minimumSamples)
        let out = try engine.run([input: batch])
        guard let features = out.values.first?.data, features.count == layout.starts.count * Self.dimensions else {
            throw AudioError.invalidHeader(file: digest, what: "the speech embedding's output size",
                                           value: "\(out.values.first?.data.count ?? 0), expected \(layout.starts.count * Self.dimensions)")
        }
        return SoundEmbedding(windows: layout, features: features)
    }

    /// The embeddings of `file`, from `cache` when it holds them (then nothing is decoded).
    public func embed(file: String, overlap: Double, minimumSamples: Int = SoundWindows.samples, cache: FeatureCache?) throws -> SoundEmbedding {
        let bytes = try ImageDecoder.readFile(file)
        var h = SHA256()
        h.update(bytes)
        let hash = h.finalize().map { String(format: "%02x", $0) }.joined()
        let key = FeatureCache.key(contentHash: hash, extractor: digest, preprocessing: "speech-mel-v1 overlap \(overlap) min \(minimumSamples)", variant: "")
        if let stored = cache?.get(key: key), let hit = SoundEmbedding(cached: stored, overlap: overlap, minimumSamples: minimumSamples) {
            return hit
        }
        let e = try embed(try AudioDecoder.decode(bytes: bytes, file: file), overlap: overlap, minimumSamples: minimumSamples)
        try cache?.put(key: key, features: e.cached)
        return e
    }
}

extension SoundEmbedding {
    /// The cache entry: the clip's 16 kHz sample count as two floats (⌊n / 2²⁰⌋, n mod 2²⁰: exact in float32), then
    /// the features.
    var cached: [Float] {
        [Float(windows.clipSamples >> 20), Float(windows.clipSamples & 0xFFFFF)] + features
    }

    init?(cached v: [Float], overlap: Double, minimumSamples: Int) {
        guard v.count >= 2, v[0] >= 0, v[1] >= 0, v[0] < 1_048_576, v[1] < 1_048_576 else { return nil }
        let samples = Int(v[0]) << 20 | Int(v[1])
        let layout = SoundWindows.Layout(clipSamples: samples, overlap: overlap, minimumSamples: minimumSamples)
        guard v.count - 2 == layout.starts.count * SpeechEmbedding.dimensions else { return nil }
        self.init(windows: layout, features: Array(v[2...]))
    }
}
