import Foundation
import MLToolCore
import MLToolEngine
import MLToolFormat

/// Sentence embeddings from an imported encoder (`mltool import FOLDER` of a BERT model: `BERTImporter`), like
/// NaturalLanguage's `NLEmbedding.sentenceEmbedding`: text → its WordPiece ids → the encoder → one L2-normalised
/// vector (all-MiniLM-L6-v2: 384 values).
///
///     let encoder = try SentenceEncoder(path: "models/minilm.bin")
///     let v = try encoder.embedding(for: "A quotation from a fortune file.")
public final class SentenceEncoder: Sendable {
    public let model: Model
    public let config: SentenceEncoderConfig
    private let engine: Engine

    /// The texts run through the encoder at once by `embeddings(for:)` (padded to the longest of them).
    public static let defaultBatchSize = 32

    /// Loads a sentence encoder model; `threads` 0 uses every core.
    public convenience init(path: String, threads: Int = 0) throws {
        try self.init(model: ModelFile.read(path: path), name: path, threads: threads)
    }

    public init(model: Model, name: String = "model", threads: Int = 0) throws {
        guard let config = model.metadata.sentenceEncoder else {
            throw PipelineError.badInput(file: name, reason: "not a sentence encoder (import one with `mltool import FOLDER` holding model.safetensors, config.json and tokenizer.json)")
        }
        guard config.maxPositions >= 2, config.dimension >= 1 else {
            throw PipelineError.badInput(file: name, reason: "sentenceEncoder: maxPositions \(config.maxPositions) and dimension \(config.dimension), expected ≥ 2 and ≥ 1")
        }
        self.model = model
        self.config = config
        do {
            engine = try Engine(model: model, threads: threads)
        } catch {
            // The graph or its tensors are damaged: say which file (a text classifier holds its encoder inside).
            throw PipelineError.badInput(file: name, reason: "sentence encoder: \(error)")
        }
    }

    /// The length of an embedding.
    public var dimension: Int { config.dimension }

    /// The token ids the encoder sees for `text` ([CLS] … [SEP], truncated to the tokenizer's and the position
    /// table's length).
    public func ids(for text: String) -> [Int] {
        var ids = config.tokenizer.ids(text)
        if ids.count > config.maxPositions {
            ids = Array(ids.prefix(config.maxPositions - 1)) + [config.tokenizer.sep]
        }
        return ids
    }

    /// The embedding of one text.
    public func embedding(for text: String) throws -> [Float] {
        try embeddings(for: [text])[0]
    }

    /// The embeddings of `texts`, in order, run `batchSize` at a time; texts of similar length are batched together
    /// (sorted by id count) so that little padding is computed. Each result is independent of the others.
    public func embeddings(for texts: [String], batchSize: Int = SentenceEncoder.defaultBatchSize) throws -> [[Float]] {
        let tokenized = texts.map(ids(for:))
        let order = tokenized.indices.sorted { (tokenized[$0].count, $0) < (tokenized[$1].count, $1) }
        var out = [[Float]](repeating: [], count: texts.count)
        var start = 0
        while start < order.count {
            let batch = Array(order[start..<min(start + max(batchSize, 1), order.count)])
            let length = batch.map { tokenized[$0].count }.max() ?? 2
            var ids = [Float](repeating: Float(config.tokenizer.pad), count: batch.count * length)
            var mask = [Float](repeating: 0, count: batch.count * length)
            for (row, i) in batch.enumerated() {
                for (j, id) in tokenized[i].enumerated() {
                    ids[row * length + j] = Float(id)
                    mask[row * length + j] = 1
                }
            }
            let result = try engine.run(["input_ids": Tensor(shape: [batch.count, length], data: ids),
                                         "attention_mask": Tensor(shape: [batch.count, length], data: mask)])
            guard let e = result["embedding"], e.shape.count == 2, e.shape[0] == batch.count else {
                throw PipelineError.badInput(file: "model", reason: "the encoder gave no (batch, hidden) embedding")
            }
            let width = e.shape[1]
            for (row, i) in batch.enumerated() { out[i] = Array(e.data[(row * width)..<((row + 1) * width)]) }
            start += batch.count
        }
        return out
    }
}
