import Foundation
import MLToolCore
import MLToolFormat
import MLToolTrain

/// A trained classifier and what its training measured.
public struct TrainingResult: Sendable {
    /// The model, ready to write or to use (`ImageClassifier(model:)`, `TextClassifier(model:)`).
    public var model: Model
    /// "train.accuracy", "validation.accuracy", "holdout.accuracy" (when there is a holdout) and "l2".
    public var metrics: [String: Double]
    public var trainCount: Int
    public var validationCount: Int
    public var holdoutCount: Int
    /// The L2 strength of the final fit, its iterations and why it stopped.
    public var l2: Double
    public var iterations: Int
    public var stopReason: StopReason
    /// Images: features computed now (the rest came from the cache). Text: 0.
    public var extractedCount: Int
    public var featureSeconds: Double
    public var fitSeconds: Double
    public var totalSeconds: Double
    /// Images: the head trained out of core (the features exceeded the memory budget).
    public var outOfCore = false
    /// Text: the number of features (terms or hashed buckets).
    public var featureCount: Int?
    /// The files the model was made from: writing the model over one of them is refused.
    public var inputs: [String]

    /// Writes the model to `path` atomically (never over one of its inputs).
    public func write(to path: String) throws {
        try ModelFile.write(model, to: path, inputs: inputs)
    }
}

extension SplitManifest {
    /// `path` relative to `root` when it lies below it, else absolute.
    public static func relative(_ path: String, to root: String) -> String {
        let abs = (URL(fileURLWithPath: path).path as NSString).standardizingPath
        return abs.hasPrefix(root + "/") ? String(abs.dropFirst(root.count + 1)) : abs
    }
}
