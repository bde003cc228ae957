import Foundation
import MLToolCore
import MLToolData

/// Sentence embeddings of a text classifier's documents (`TextClassifierParameters.embedding`): the encoder, its
/// file's SHA-256 and the content-addressed feature cache (a second training on the same texts encodes nothing).
struct TextEmbeddingFeatures: Sendable {
    let encoder: SentenceEncoder
    /// The encoder's file (recorded among the model's sources) and its SHA-256 (every cache key's extractor part).
    let path: String
    let sha256: String
    let cache: FeatureCache

    /// The encoder the rule names, or nil: `.none`, or `.auto` when no bundled encoder is found or the texts are
    /// not short (median words per training document over `shortTextMedianWords`).
    static func resolve(_ p: TextClassifierParameters, medianWords: Int) throws -> TextEmbeddingFeatures? {
        let path: String
        switch p.embedding {
        case .none: return nil
        case .auto:
            guard medianWords <= p.shortTextMedianWords, let found = BundledModel.sentenceEncoder.locate() else { return nil }
            path = found
        case .model(let given):
            guard FileManager.default.fileExists(atPath: given) else {
                throw PipelineError.missingInput(file: given, reason: "no such sentence encoder (make models builds models/minilm.bin)")
            }
            path = given
        }
        let model = try ModelLoader.load(path)
        return TextEmbeddingFeatures(encoder: try SentenceEncoder(model: model, name: path), path: path,
                                     sha256: try SHA256.hex(fileAt: path),
                                     cache: FeatureCache(directory: p.cacheDirectory ?? FeatureCache.defaultDirectory()))
    }

    /// The embeddings of `texts`, n × D row-major, and how many of them the encoder computed (the rest came from
    /// the cache). Misses are encoded in blocks of 256 (batches of similar length inside), each filed as it is done.
    func embed(_ texts: [String], cancellation: Cancellation) throws -> (values: [Float], encoded: Int) {
        let d = encoder.dimension
        let keys = texts.map { text in
            FeatureCache.key(contentHash: SHA256.hex(Array(text.utf8)), extractor: "sentence-encoder " + sha256,
                             preprocessing: "wordpiece max \(encoder.config.tokenizer.maxLength)", variant: "")
        }
        var values = [Float](repeating: 0, count: texts.count * d)
        var missing = [Int]()
        for (i, key) in keys.enumerated() {
            if let v = cache.get(key: key), v.count == d {
                values.replaceSubrange((i * d)..<((i + 1) * d), with: v)
            } else {
                missing.append(i)
            }
        }
        var start = 0
        while start < missing.count {
            try cancellation.check()
            let block = Array(missing[start..<min(start + 256, missing.count)])
            let vectors = try encoder.embeddings(for: block.map { texts[$0] })
            for (i, v) in zip(block, vectors) {
                values.replaceSubrange((i * d)..<((i + 1) * d), with: v)
                try cache.put(key: keys[i], features: v)
            }
            start += block.count
        }
        return (values, missing.count)
    }
}

/// The standardisation that turns embeddings into the head's last D features: (e − mean) · scale, mean and
/// standard deviation per dimension from the training split, scale = weight / (std · √D) (0 where std is 0), so the
/// block's expected norm is `weight`.
struct EmbeddingBlock: Sendable {
    let mean: [Float]
    let scale: [Float]

    var dimension: Int { mean.count }

    /// Fitted on `rows` of `embeddings` (n × `dimension` row-major).
    init(fittedOn rows: Range<Int>, of embeddings: [Float], dimension d: Int, weight: Double) {
        var sum = [Double](repeating: 0, count: d), squares = [Double](repeating: 0, count: d)
        for r in rows {
            for j in 0..<d {
                let x = Double(embeddings[r * d + j])
                sum[j] += x
                squares[j] += x * x
            }
        }
        let n = Double(max(rows.count, 1))
        let means = sum.map { $0 / n }
        mean = means.map(Float.init)
        scale = (0..<d).map { j in
            let std = max(squares[j] / n - means[j] * means[j], 0).squareRoot()
            return std > 1e-12 ? Float(weight / (std * Double(d).squareRoot())) : 0
        }
    }

    init(mean: [Float], scale: [Float]) { self.mean = mean; self.scale = scale }

    /// `matrix` (one row per document of `rows`) with each document's standardised embedding appended.
    func appending(to matrix: CSRMatrix, rows: [Int], of embeddings: [Float]) -> CSRMatrix {
        let d = dimension, width = matrix.cols
        var offsets = [0], columns = [Int32](), values = [Float]()
        columns.reserveCapacity(matrix.nonZeros + rows.count * d)
        values.reserveCapacity(matrix.nonZeros + rows.count * d)
        for (r, doc) in rows.enumerated() {
            columns += matrix.columns[matrix.rowOffsets[r]..<matrix.rowOffsets[r + 1]]
            values += matrix.values[matrix.rowOffsets[r]..<matrix.rowOffsets[r + 1]]
            for j in 0..<d {
                columns.append(Int32(width + j))
                values.append((embeddings[doc * d + j] - mean[j]) * scale[j])
            }
            offsets.append(columns.count)
        }
        return CSRMatrix(unchecked: rows.count, cols: width + d, rowOffsets: offsets, columns: columns, values: values)
    }
}
