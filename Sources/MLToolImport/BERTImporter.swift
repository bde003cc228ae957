import Foundation
import MLToolCore

/// Imports a BERT encoder from Hugging Face's files — `model.safetensors`, `config.json`, `tokenizer.json` — as a
/// sentence encoder: the IR graph of `BertModel` (word + position + segment-0 embeddings, LayerNorm, N post-LayerNorm
/// layers of multi-head self-attention and GELU feed-forward) followed by sentence-transformers' pooling (the mean of
/// the token states under the attention mask) and L2 normalisation; the tokenizer goes into the metadata
/// (`ModelMetadata.sentenceEncoder`, docs/FORMAT.md).
///
/// Graph inputs: `input_ids` and `attention_mask`, int64 (batch, sequence) (the engine carries them as float32);
/// output `embedding` (batch, hidden). Weights are read by their Hugging Face names (an optional "bert." prefix); a
/// weight missing, of another shape or of a non-float dtype, and a config.json field out of its range, is refused by
/// name.
public enum BERTImporter {
    /// The fields of config.json the graph is built from.
    public struct Config: Equatable, Sendable {
        public var hiddenSize: Int
        public var layers: Int
        public var heads: Int
        public var intermediateSize: Int
        public var vocabularySize: Int
        public var maxPositions: Int
        public var layerNormEpsilon: Float

        /// Reads config.json's bytes: model_type "bert" (or absent), hidden_act "gelu", absolute positions.
        public init(json bytes: [UInt8], file: String) throws {
            func fail(_ key: String, _ expected: String, _ actual: String) -> ImportError {
                .invalid(file: file, place: "byte \(JSONValue.offset(ofKey: key, in: bytes) ?? 0): \(key)", expected: expected, actual: actual)
            }
            let root: [String: JSONValue]
            switch JSONValue.parse(bytes, depth: 8) {
            case let .failure(p):
                throw ImportError.invalid(file: file, place: "byte \(p.offset)", expected: "a JSON object nested at most 8 deep", actual: p.reason)
            case let .success(v):
                guard let o = v.object else { throw ImportError.invalid(file: file, place: "byte 0", expected: "a JSON object", actual: v.kind) }
                root = o
            }
            func int(_ key: String, _ range: ClosedRange<Int>) throws -> Int {
                guard let i = root[key]?.integer, range.contains(i) else {
                    throw fail(key, "an integer in \(range)", root[key].map { $0.integer.map(String.init) ?? $0.kind } ?? "nothing")
                }
                return i
            }
            func string(_ key: String, _ allowed: Set<String>, default value: String) throws -> String {
                guard let v = root[key] else { return value }
                guard let s = v.string, allowed.contains(s) else {
                    throw fail(key, allowed.sorted().map { "\"\($0)\"" }.joined(separator: " or "), v.string.map { "\"\($0)\"" } ?? v.kind)
                }
                return s
            }
            _ = try string("model_type", ["bert"], default: "bert")
            _ = try string("hidden_act", ["gelu"], default: "gelu")
            _ = try string("position_embedding_type", ["absolute"], default: "absolute")
            hiddenSize = try int("hidden_size", 1...65_536)
            layers = try int("num_hidden_layers", 1...256)
            heads = try int("num_attention_heads", 1...hiddenSize)
            guard hiddenSize % heads == 0 else { throw fail("num_attention_heads", "a divisor of hidden_size \(hiddenSize)", "\(heads)") }
            intermediateSize = try int("intermediate_size", 1...1_048_576)
            vocabularySize = try int("vocab_size", 1...10_000_000)
            maxPositions = try int("max_position_embeddings", 2...1_048_576)
            switch root["layer_norm_eps"] {
            case nil: layerNormEpsilon = 1e-12
            case let .number(d)? where d > 0 && d < 1: layerNormEpsilon = Float(d)
            case let other?: throw fail("layer_norm_eps", "a number in (0, 1)", other.kind)
            }
        }
    }

    /// Reads the three files and builds the model.
    public static func importModel(safetensors: String, config: String, tokenizer: String) throws -> Model {
        guard let configBytes = FileManager.default.contents(atPath: config) else {
            throw ImportError.unreadable(file: config, reason: "no such file or unreadable")
        }
        let cfg = try Config(json: [UInt8](configBytes), file: config)
        let words = try WordPieceTokenizer(tokenizerJSON: tokenizer)
        let weights = try SafetensorsFile(path: safetensors)
        var model = try model(weights, config: cfg, tokenizer: words)
        model.metadata.provenance = Provenance(sources: try [safetensors, config, tokenizer].map {
            .init(path: $0, sha256: try SHA256.hex(fileAt: $0))
        })
        return model
    }

    /// The model of `weights` under `config`, with `tokenizer` recorded.
    public static func model(_ weights: SafetensorsFile, config c: Config, tokenizer: WordPieceTokenizer) throws -> Model {
        guard tokenizer.vocabulary.count <= c.vocabularySize else {
            throw ImportError.invalid(file: weights.file, place: "tokenizer vocabulary", expected: "at most vocab_size \(c.vocabularySize) tokens",
                                      actual: "\(tokenizer.vocabulary.count)")
        }
        var g = BERTGraph(weights: weights, config: c)
        var x = try g.embeddings()
        let maskBias = g.maskBias()
        let scale = g.constant("attention.scale", [1 / Float(c.hiddenSize / c.heads).squareRoot()])
        for l in 0..<c.layers { x = try g.encoderLayer(l, x, maskBias: maskBias, scale: scale) }
        g.meanPooling(x)

        var ids = GraphInput(name: "input_ids", shape: [-1, -1], elementType: "int64")
        ids.dimensionNames = ["batch", "sequence"]
        var mask = GraphInput(name: "attention_mask", shape: [-1, -1], elementType: "int64")
        mask.dimensionNames = ["batch", "sequence"]
        let graph = Graph(inputs: [ids, mask], outputs: ["embedding"], nodes: g.nodes, sourceLayout: "nchw")
        var metadata = ModelMetadata(task: .network, graph: graph)
        metadata.featureTensor = "embedding"
        metadata.sentenceEncoder = SentenceEncoderConfig(tokenizer: tokenizer, maxPositions: c.maxPositions, dimension: c.hiddenSize)
        return Model(metadata: metadata, tensors: g.tensors)
    }
}

/// A BERT encoder's graph as it is built: the weights read so far, the nodes, and one function per part.
private struct BERTGraph {
    let weights: SafetensorsFile
    let c: BERTImporter.Config
    let prefix: String
    var tensors: [StoredTensor] = []
    var nodes: [Node] = []
    var h: Int { c.hiddenSize }

    init(weights: SafetensorsFile, config: BERTImporter.Config) {
        self.weights = weights
        self.c = config
        prefix = weights.entries.contains { $0.name == "bert.embeddings.word_embeddings.weight" } ? "bert." : ""
    }

    /// A weight of the file, checked against `shape`; `transposed` stores a (out, in) matrix as (in, out).
    mutating func weight(_ name: String, _ shape: [Int], transposed: Bool = false) throws -> String {
        let e = try weights.entry(prefix + name)
        guard e.shape == shape else {
            throw ImportError.invalid(file: weights.file, place: "tensor '\(e.name)'", expected: "shape \(shape)", actual: "\(e.shape)")
        }
        var values = try weights.floats(e)
        var stored = shape
        if transposed {
            let (rows, cols) = (shape[0], shape[1])
            var t = [Float](repeating: 0, count: values.count)
            for r in 0..<rows { for k in 0..<cols { t[k * rows + r] = values[r * cols + k] } }
            values = t
            stored = [cols, rows]
        }
        tensors.append(StoredTensor(name: name, dtype: .f32, shape: stored, bytes: TensorBytes(floats: values)))
        return name
    }

    mutating func constant(_ name: String, _ values: [Float]) -> String {
        tensors.append(StoredTensor(name: name, dtype: .f32, shape: [values.count], bytes: TensorBytes(floats: values)))
        return name
    }

    @discardableResult
    mutating func node(_ name: String, _ op: Op, _ inputs: [String], _ attributes: Attributes = Attributes()) -> String {
        nodes.append(Node(name: name, op: op, inputs: inputs, outputs: [name], attributes: attributes))
        return name
    }

    mutating func layerNorm(_ name: String, _ x: String, _ weightsPrefix: String) throws -> String {
        let scale = try weight(weightsPrefix + ".weight", [h]), bias = try weight(weightsPrefix + ".bias", [h])
        return node(name, .layerNorm, [x, scale, bias], Attributes(axis: -1, epsilon: c.layerNormEpsilon))
    }

    mutating func dense(_ name: String, _ x: String, _ weightsPrefix: String, in inputs: Int, out outputs: Int) throws -> String {
        let w = try weight(weightsPrefix + ".weight", [outputs, inputs], transposed: true)
        let b = try weight(weightsPrefix + ".bias", [outputs])
        return node(name, .matMul, [x, w, b])
    }

    /// Embeddings: words, positions 0..<T (a slice of the table sized by the input), segment 0.
    mutating func embeddings() throws -> String {
        let wordTable = try weight("embeddings.word_embeddings.weight", [c.vocabularySize, h])
        let positionTable = try weight("embeddings.position_embeddings.weight", [c.maxPositions, h])
        let segments = try weights.entry(prefix + "embeddings.token_type_embeddings.weight")
        guard segments.shape.count == 2, segments.shape[1] == h, segments.shape[0] >= 1 else {
            throw ImportError.invalid(file: weights.file, place: "tensor '\(segments.name)'", expected: "shape [types, \(h)]", actual: "\(segments.shape)")
        }
        let segmentZero = constant("embeddings.token_type_embeddings.row0", Array(try weights.floats(segments).prefix(h)))
        let words = node("embeddings.words", .gather, [wordTable, "input_ids"], Attributes(axis: 0))
        let length = node("embeddings.length", .shape, ["input_ids"], Attributes(perm: [1]))
        var slice = Attributes(axes: [0], starts: [0], steps: [1])
        slice.ends = [0]   // both bounds come from the inputs: 0 and the sequence length
        let positions = node("embeddings.positions", .slice, [positionTable, constant("embeddings.zero", [0]), length], slice)
        let summed = node("embeddings.segment", .add, [node("embeddings.sum", .add, [words, positions]), segmentZero])
        return try layerNorm("embeddings.norm", summed, "embeddings.LayerNorm")
    }

    /// The attention mask as an additive bias (batch, 1, 1, keys): 0 where attended, float32's lowest elsewhere.
    mutating func maskBias() -> String {
        let mask4 = node("mask.4d", .reshape, ["attention_mask"], Attributes(shape: [0, 1, 1, -1]))
        let masked = node("mask.inverse", .sub, [constant("mask.one", [1]), mask4])
        return node("mask.bias", .mul, [masked, constant("mask.lowest", [-Float.greatestFiniteMagnitude])])
    }

    /// Encoder layer `l`: self-attention and the feed-forward block, each with its residual and layer norm.
    mutating func encoderLayer(_ l: Int, _ x: String, maskBias: String, scale: String) throws -> String {
        let p = "encoder.layer.\(l)."
        let q = try heads(p, "query", x, [0, 2, 1, 3])
        let k = try heads(p, "key", x, [0, 2, 3, 1])
        let v = try heads(p, "value", x, [0, 2, 1, 3])
        // scores (batch, heads, queries, keys) = q·kᵀ / √size + mask bias; softmax over the keys; times v.
        let scores = node(p + "scores", .batchMatMul, [q, k])
        let biased = node(p + "scores.masked", .add, [node(p + "scores.scaled", .mul, [scores, scale]), maskBias])
        let probabilities = node(p + "probabilities", .softmax, [biased], Attributes(axis: -1))
        let context = node(p + "context", .batchMatMul, [probabilities, v])
        let merged = node(p + "context.merged", .reshape,
                          [node(p + "context.transposed", .transpose, [context], Attributes(perm: [0, 2, 1, 3]))],
                          Attributes(shape: [0, 0, h]))
        let attended = try dense(p + "attention.output", merged, p + "attention.output.dense", in: h, out: h)
        let x1 = try layerNorm(p + "attention.norm", node(p + "attention.residual", .add, [attended, x]),
                               p + "attention.output.LayerNorm")
        let inner = try dense(p + "intermediate", x1, p + "intermediate.dense", in: h, out: c.intermediateSize)
        let activated = node(p + "intermediate.gelu", .unary, [inner], Attributes(mode: UnaryFunction.gelu.rawValue))
        let out = try dense(p + "output", activated, p + "output.dense", in: c.intermediateSize, out: h)
        return try layerNorm(p + "output.norm", node(p + "output.residual", .add, [out, x1]), p + "output.LayerNorm")
    }

    /// The query, key or value projection of layer `p` split into heads: (batch, heads, …) in the order `perm` gives.
    mutating func heads(_ p: String, _ name: String, _ x: String, _ perm: [Int]) throws -> String {
        let t = try dense(p + name, x, p + "attention.self." + name, in: h, out: h)
        let r = node(p + name + ".heads", .reshape, [t], Attributes(shape: [0, 0, c.heads, h / c.heads]))
        return node(p + name + ".transposed", .transpose, [r], Attributes(perm: perm))
    }

    /// Mean pooling under the mask, then L2 normalisation (sentence-transformers' Pooling and Normalize): "embedding".
    mutating func meanPooling(_ x: String) {
        let mask3 = node("pool.mask", .reshape, ["attention_mask"], Attributes(shape: [0, -1, 1]))
        let sum = node("pool.sum", .reduce, [node("pool.masked", .mul, [x, mask3])], Attributes(axes: [1], mode: ReduceFunction.sum.rawValue))
        let count = node("pool.count", .reduce, [mask3], Attributes(axes: [1], mode: ReduceFunction.sum.rawValue))
        let floor = node("pool.count.floor", .binary, [count, constant("pool.min.count", [1e-9])], Attributes(mode: BinaryFunction.max.rawValue))
        let mean = node("pool.mean", .div, [sum, floor])
        let norm = node("normalize.l2", .reduce, [mean], Attributes(axes: [2], mode: ReduceFunction.l2.rawValue))
        let normFloor = node("normalize.floor", .binary, [norm, constant("normalize.min", [1e-12])], Attributes(mode: BinaryFunction.max.rawValue))
        let unit = node("normalize.unit", .div, [mean, normFloor])
        node("embedding", .reshape, [unit], Attributes(shape: [0, -1]))
    }
}
