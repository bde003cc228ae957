import Foundation
import MLToolCore
import MLToolData
import MLToolTrain

/// Predicts labels for strings with a text model (NaturalLanguage's `NLModel`): the model's own tokenizer and
/// vectorizer → sparse rows → softmax(x·W + b). Quantized weights (int8, palettes, fp16) are dequantized on load.
public struct TextClassifier: Sendable {
    public let vectorizer: TextVectorizer
    public let head: LogisticRegressionModel
    public let labels: [String]

    /// `path` names the model in errors.
    public init(model: Model, path: String = "model") throws {
        let md = model.metadata
        guard md.task == .textClassifier, let config = md.text else {
            throw PipelineError.badInput(file: path, reason: "not a text model (task \(md.task.rawValue))")
        }
        func tensor(_ name: String) throws -> StoredTensor {
            guard let t = model.tensor(named: name) else {
                throw PipelineError.badInput(file: path, reason: "text model has no tensor '\(name)'")
            }
            return t
        }
        var vocabulary: [UInt8]?
        if let name = config.vocabularyTensor {
            let t = try tensor(name)
            guard t.dtype == .u8, t.shape.count == 1, t.shape[0] == t.bytes.count else {
                throw PipelineError.badInput(file: path, reason: "tensor '\(name)': expected u8 [\(t.bytes.count)], got \(t.dtype.name) \(t.shape)")
            }
            vocabulary = Array(t.bytes.buffer)
        }
        let idf = try config.idfTensor.map { try tensor($0).floats() }
        vectorizer = try TextVectorizer(config: config, vocabularyBytes: vocabulary, idf: idf,
                                        tensor: config.vocabularyTensor ?? "text.vocabulary")
        labels = md.labels
        let k = labels.count, d = vectorizer.featureCount
        let w = try tensor(config.weightsTensor), b = try tensor(config.biasTensor)
        guard w.shape == [d, k], b.shape == [k], k >= 2 else {
            throw PipelineError.badInput(file: path, reason: "text model weights \(w.shape) and bias \(b.shape), expected [\(d), \(k)] and [\(k)] for \(d) features and \(k) labels")
        }
        head = LogisticRegressionModel(weights: try w.floats(), bias: try b.floats(), classes: k, features: d, chosenL2: 0)
    }

    /// Loads the text model at `url`.
    public init(contentsOf url: URL) throws {
        try self.init(model: try ModelLoader.load(url.path), path: url.path)
    }

    /// The most probable label for `text` (`NLModel.predictedLabel(for:)`).
    public func predictedLabel(for text: String) throws -> String? {
        try classify(text, options: .init(maximumCount: 1)).first?.identifier
    }

    /// The `maximumCount` most probable labels with their probabilities
    /// (`NLModel.predictedLabelHypotheses(for:maximumCount:)`).
    public func predictedLabelHypotheses(for text: String, maximumCount: Int) throws -> [String: Double] {
        var out = [String: Double]()
        for c in try classify(text, options: .init(maximumCount: maximumCount)) { out[c.identifier] = Double(c.confidence) }
        return out
    }

    /// The classes of `text`, most probable first.
    public func classify(_ text: String, options: ClassificationOptions = .init()) throws -> [Classification] {
        Classification.ranked(try probabilities([text]), labels: labels, options: options)
    }

    /// Probabilities for `texts`, n × classes row-major (one vectorizer pass for all of them).
    public func probabilities(_ texts: [String]) throws -> [Float] {
        guard !texts.isEmpty else { return [] }
        return try head.probabilities(sparse: try vectorizer.transform(texts))
    }

    /// For each class, the `k` features with the largest weights, strongest first (hashed features as "#bucket").
    public func strongestFeatures(_ k: Int) -> [[(feature: String, weight: Float)]] {
        let classes = labels.count, d = vectorizer.featureCount
        guard k > 0 else { return Array(repeating: [], count: classes) }
        return (0..<classes).map { c in
            var top = [(index: Int, weight: Float)]()   // kept sorted, strongest first; one pass over the features
            for i in 0..<d {
                let w = head.weights[i * classes + c]
                guard top.count < k || w > top[top.count - 1].weight else { continue }
                let at = top.firstIndex { w > $0.weight } ?? top.count
                top.insert((i, w), at: at)
                if top.count > k { top.removeLast() }
            }
            return top.map { (i, w) in (i < vectorizer.vocabulary.count ? vectorizer.vocabulary[i] : "#bucket\(i)", w) }
        }
    }
}
