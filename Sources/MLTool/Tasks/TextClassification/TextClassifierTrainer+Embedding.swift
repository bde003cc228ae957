import Foundation
import MLToolCore
import MLToolData

extension TextClassifierTrainer {
    /// Every document's sentence embedding when `p.embedding` asks for them (`.auto`: short texts, a bundled encoder
    /// and a validation split to decide on), through the feature cache; nil otherwise.
    static func embed(_ p: TextClassifierParameters, _ s: Splits, medianWords: Int,
                      cancellation: Cancellation) throws -> Embedded? {
        if p.embedding == .auto && s.validation.isEmpty { return nil }
        guard let source = try TextEmbeddingFeatures.resolve(p, medianWords: medianWords) else { return nil }
        let (values, encoded) = try source.embed(s.documents.map(\.text), cancellation: cancellation)
        return Embedded(source: source, values: values, encoded: encoded)
    }

    /// The embeddings each feature set is fitted with: none; or with `.auto`, none (first: kept on a tie) and the
    /// sentence embeddings, the validation split choosing; or the sentence embeddings alone.
    static func embeddingCandidates(_ p: TextClassifierParameters, _ s: Splits, medianWords: Int, cancellation: Cancellation,
                                    emit: (PipelineEvent) -> Void, phase: (String) -> Void) throws -> [Embedded?] {
        guard let embedded = try embed(p, s, medianWords: medianWords, cancellation: cancellation) else { return [nil] }
        phase("embed")
        emit(.note(embeddingNote(embedded, count: s.documents.count)))
        return p.embedding == .auto ? [nil, embedded] : [embedded]
    }

    /// Which encoder gave the embeddings and how many it computed.
    static func embeddingNote(_ e: Embedded, count: Int) -> String {
        "sentence embeddings: \(e.source.path) (\(e.source.encoder.dimension) values), \(e.encoded) of \(count) documents "
            + "encoded, \(count - e.encoded) from the feature cache (\(e.source.cache.directory))"
    }

    /// Puts the encoder inside the model (its graph, tokenizer and tensors) beside the standardisation's two
    /// tensors, so the model predicts with no other file (docs/FORMAT.md, TextConfig).
    static func attach(_ source: TextEmbeddingFeatures, _ block: EmbeddingBlock, to md: inout ModelMetadata,
                       tensors: inout [StoredTensor]) throws {
        let encoder = source.encoder.model
        guard let graph = encoder.metadata.graph, let config = encoder.metadata.sentenceEncoder else {
            throw PipelineError.badInput(file: source.path, reason: "not a sentence encoder (no graph or sentenceEncoder)")
        }
        let mean = "text.embedding.mean", scale = "text.embedding.scale"
        let taken = Set(tensors.map(\.name) + [mean, scale])
        if let clash = encoder.tensors.first(where: { taken.contains($0.name) }) {
            throw PipelineError.badInput(file: source.path, reason: "encoder tensor '\(clash.name)' has the name of a text-model tensor")
        }
        md.graph = graph
        md.sentenceEncoder = config
        md.text?.embeddingMeanTensor = mean
        md.text?.embeddingScaleTensor = scale
        tensors.append(StoredTensor(name: mean, tensor: Tensor(shape: [block.dimension], data: block.mean)))
        tensors.append(StoredTensor(name: scale, tensor: Tensor(shape: [block.dimension], data: block.scale)))
        tensors += encoder.tensors
    }
}
