import Foundation
import MLToolCore
import MLToolData
import MLToolTrain

/// Predicts labels for strings with a text model (NaturalLanguage's `NLModel`): the model's own tokenizer and
/// vectorizer → sparse rows (→ with a sentence encoder inside the model, its standardised embedding appended) →
/// softmax(x·W + b). Quantized weights (int8, palettes, fp16) are dequantized on load.
public struct TextClassifier: Sendable {
    public let vectorizer: TextVectorizer
    public let head: LogisticRegressionModel
    public let labels: [String]
    /// The sentence encoder the model holds (trained with `--embedding`), nil for n-gram features alone.
    public let encoder: SentenceEncoder?
    private let block: EmbeddingBlock?

    /// `path` names the model in errors; `threads` (0: every core) runs the sentence encoder, when there is one.
    public init(model: Model, path: String = "model", threads: Int = 0) throws {
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
        (encoder, block) = try Self.embedding(model, config, path: path, threads: threads, tensor: tensor)
        let k = labels.count, d = vectorizer.featureCount + (block?.dimension ?? 0)
        let w = try tensor(config.weightsTensor), b = try tensor(config.biasTensor)
        guard w.shape == [d, k], b.shape == [k], k >= 2 else {
            throw PipelineError.badInput(file: path, reason: "text model weights \(w.shape) and bias \(b.shape), expected [\(d), \(k)] and [\(k)] for \(d) features and \(k) labels")
        }
        head = LogisticRegressionModel(weights: try w.floats(), bias: try b.floats(), classes: k, features: d, chosenL2: 0)
    }

    /// The encoder and the standardisation of its embedding, when the text section names them (docs/FORMAT.md).
    private static func embedding(_ model: Model, _ config: TextConfig, path: String, threads: Int,
                                  tensor: (String) throws -> StoredTensor) throws -> (SentenceEncoder?, EmbeddingBlock?) {
        guard let meanName = config.embeddingMeanTensor, let scaleName = config.embeddingScaleTensor else {
            return (nil, nil)
        }
        let encoder = try SentenceEncoder(model: model, name: path, threads: threads)
        let mean = try tensor(meanName).floats(), scale = try tensor(scaleName).floats()
        guard mean.count == encoder.dimension, scale.count == encoder.dimension else {
            throw PipelineError.badInput(file: path, reason: "tensors '\(meanName)' and '\(scaleName)': \(mean.count) and \(scale.count) values, expected \(encoder.dimension) (sentenceEncoder.dimension)")
        }
        return (encoder, EmbeddingBlock(mean: mean, scale: scale))
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

    /// Probabilities for `texts`, n × classes row-major (one vectorizer pass for all of them; the encoder, when the
    /// model has one, in batches of `SentenceEncoder.defaultBatchSize`).
    public func probabilities(_ texts: [String]) throws -> [Float] {
        guard !texts.isEmpty else { return [] }
        var rows = try vectorizer.transform(texts)
        if let encoder, let block {
            let embeddings = try encoder.embeddings(for: texts).flatMap { $0 }
            rows = block.appending(to: rows, rows: Array(texts.indices), of: embeddings)
        }
        return try head.probabilities(sparse: rows)
    }

    /// The sentence embedding of `text` (L2-normalised, `encoder.dimension` values) from the encoder the model holds,
    /// like `NLEmbedding.sentenceEmbedding(for:)?.vector(for:)`; nil when the model has no encoder (trained without
    /// `--embedding`).
    public func embedding(for text: String) throws -> [Float]? {
        try encoder?.embedding(for: text)
    }

    /// For each class, the `k` features with the largest weights, strongest first (hashed features as "#bucket").
    public func strongestFeatures(_ k: Int) -> [[(feature: String, weight: Float)]] {
        let classes = labels.count, d = head.features
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
            return top.map { (i, w) in
                let name = i < vectorizer.vocabulary.count ? vectorizer.vocabulary[i]
                    : i < vectorizer.featureCount ? "#bucket\(i)" : "#embedding\(i - vectorizer.featureCount)"
                return (name, w)
            }
        }
    }
}
