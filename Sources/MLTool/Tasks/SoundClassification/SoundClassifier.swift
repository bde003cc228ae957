import Foundation
import MLToolAudio
import MLToolCore
import MLToolEngine

/// Classifies recordings with a sound model (SoundAnalysis' `SNClassifySoundRequest`): decode → 16 kHz → the
/// model's windows (its `sound` settings) → the graph (embedding and head) → one result per window with its time
/// range, and the whole recording's (the mean of its windows' probabilities).
public struct SoundClassifier: Sendable {
    /// One window's classes (`SNClassificationResult`: `timeRange` and `classifications`).
    public struct WindowResult: Sendable, Equatable {
        /// Seconds into the recording.
        public var timeRange: ClosedRange<Double>
        /// Every class, most probable first.
        public var classifications: [Classification]
    }

    /// A recording's windows and its overall classes.
    public struct Result: Sendable, Equatable {
        public var windows: [WindowResult]
        /// The recording's classes, most probable first: the mean of the windows' probabilities.
        public var classifications: [Classification]
        /// Seconds of audio.
        public var duration: Double
        /// Every sample was 0 (the windows then get the embedding of silence).
        public var isSilent: Bool
        /// The probabilities of `classifications`, in label order.
        public var probabilities: [Float]
    }

    public let labels: [String]
    public let config: SoundConfig
    let engine: Engine
    let input: String
    let mel = MelSpectrogram()

    /// `path` names the model in errors; `threads` are the engine's (0: all cores).
    public init(model: Model, path: String = "model", threads: Int = 0) throws {
        let md = model.metadata
        guard md.task == .soundClassifier, let config = md.sound, let input = md.graph?.inputs.first?.name else {
            throw PipelineError.badInput(file: path, reason: "not a sound model (task \(md.task.rawValue))")
        }
        labels = md.labels
        self.config = config
        self.input = input
        engine = try Engine(model: model, threads: threads)
    }

    /// Loads the sound model at `url`.
    public init(contentsOf url: URL, threads: Int = 0) throws {
        try self.init(model: try ModelLoader.load(url.path), path: url.path, threads: threads)
    }

    /// The recording at `url`.
    public func classify(_ url: URL) throws -> Result { try classify(try AudioDecoder.decode(file: url.path)) }

    /// A decoded recording.
    public func classify(_ clip: AudioClip) throws -> Result {
        let (layout, batch) = try mel.windowBatch(clip, overlap: config.overlap, minimumSamples: config.minimumSamples)
        let k = labels.count
        guard let p = try engine.run([input: batch])["probabilities"]?.data, p.count == layout.starts.count * k else {
            throw PipelineError.badInput(file: "sound model", reason: "its graph gave no probabilities for \(layout.starts.count) windows × \(k) labels")
        }
        let n = layout.starts.count
        let windows = (0..<n).map { i in
            WindowResult(timeRange: layout.timeRange(i), classifications: Classification.ranked(Array(p[(i * k)..<((i + 1) * k)]), labels: labels))
        }
        let mean = (0..<k).map { c in (0..<n).reduce(Float(0)) { $0 + p[$1 * k + c] } / Float(max(n, 1)) }
        return Result(windows: windows, classifications: Classification.ranked(mean, labels: labels), duration: clip.duration,
                      isSilent: clip.isSilent, probabilities: mean)
    }
}
