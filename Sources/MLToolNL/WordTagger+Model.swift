import MLToolCore
import MLToolData

extension WordTagger {
    /// The feature set this code computes (`TaggerConfig.features`).
    public static let featureSet = "mltool-tagger-1"
    /// The feature set of a tagger trained with a gazetteer: "mltool-tagger-1" and the name-list templates 35–37,
    /// the gazetteer's bits in the lexicon's masks above bit 15.
    public static let namesFeatureSet = "mltool-tagger-2"
    /// The feature set of a tagger trained with a gazetteer today: "mltool-tagger-2" and the context templates 46–50
    /// (`TaggerFeatures`: the neighbours' exact forms, name bits with capitals, name bits two words away).
    public static let contextFeatureSet = "mltool-tagger-3"
    static let featureSets = [featureSet, namesFeatureSet, contextFeatureSet]

    /// A tagger read back from a model (task "wordTagger", docs/FORMAT.md section 4.3). Quantized weights are
    /// dequantized here. `file` names the model in errors.
    public init(model: Model, file: String = "model") throws {
        let md = model.metadata
        guard md.task == .wordTagger, let c = md.tagger else {
            throw TaggerError.invalidModel(file: file, what: "task", expected: "wordTagger", actual: md.task.rawValue)
        }
        guard Self.featureSets.contains(c.features) else {
            throw TaggerError.invalidModel(file: file, what: "feature set", expected: Self.featureSets.joined(separator: ", "),
                                           actual: c.features)
        }
        let t = md.labels.count
        func tensor(_ name: String) throws -> StoredTensor {
            guard let x = model.tensor(named: name) else {
                throw TaggerError.invalidModel(file: file, what: "tensor '\(name)'", expected: "present", actual: "missing")
            }
            return x
        }
        func unsigned(_ x: StoredTensor) throws -> [UInt64] {
            guard x.dtype == .i64, x.shape.count == 1, x.bytes.count == x.shape[0] * 8 else {
                throw TaggerError.invalidModel(file: file, what: "tensor '\(x.name)'", expected: "i64 [n]",
                                               actual: "\(x.dtype.name) \(x.shape)")
            }
            return (0..<x.shape[0]).map { UInt64(littleEndian: x.bytes.buffer.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
        }
        func finite(_ x: StoredTensor, count: Int) throws -> [Float] {
            let v = try x.floats()
            guard v.count == count else {
                throw TaggerError.invalidModel(file: file, what: "tensor '\(x.name)'", expected: "\(count) values",
                                               actual: "\(v.count)")
            }
            if let i = v.firstIndex(where: { !$0.isFinite }) {
                throw TaggerError.invalidModel(file: file, what: "tensor '\(x.name)' element \(i)", expected: "finite",
                                               actual: "\(v[i])")
            }
            return v
        }
        let keys = try unsigned(try tensor(c.keysTensor))
        guard t >= 2, zip(keys, keys.dropFirst()).allSatisfy({ $0 < $1 }), keys.first != 0 else {
            throw TaggerError.invalidModel(file: file, what: "keys", expected: "≥ 2 labels, keys strictly increasing",
                                           actual: "\(t) labels, \(keys.count) keys")
        }
        var weights = try finite(try tensor(c.weightsTensor), count: keys.count * t)
        weights += [Float](repeating: 0, count: 8)
        let transitions = try finite(try tensor(c.transitionsTensor), count: (t + 2) * t)
        let lexiconKeys = try unsigned(try tensor(c.lexiconKeysTensor))
        let values = try tensor(c.lexiconValuesTensor)
        guard values.dtype == .i32, values.shape == [lexiconKeys.count, 2],
              zip(lexiconKeys, lexiconKeys.dropFirst()).allSatisfy({ $0 < $1 }), lexiconKeys.first != 0 else {
            throw TaggerError.invalidModel(file: file, what: "lexicon", expected: "i32 [\(lexiconKeys.count), 2] with sorted keys",
                                           actual: "\(values.dtype.name) \(values.shape)")
        }
        let raw = values.bytes.buffer
        func value(_ i: Int) -> UInt32 { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)) }
        let lexicon = TaggerLexicon(keys: lexiconKeys, masks: (0..<lexiconKeys.count).map { value(2 * $0) },
                                    clusters: (0..<lexiconKeys.count).map { value(2 * $0 + 1) },
                                    namesInMasks: c.features != Self.featureSet,
                                    context: c.features == Self.contextFeatureSet)
        self.init(tags: md.labels, tokenizer: try WordTokenizer(config: c.tokenizer), keys: keys, weights: weights,
                  transitions: transitions, lexicon: lexicon, scheme: c.scheme)
    }

    /// The model file's contents: metadata (task "wordTagger", the tags as labels) and the five tensors.
    public func model(name: String? = nil, metrics: [String: Double] = [:], provenance: Provenance = Provenance())
        -> Model {
        var md = ModelMetadata(task: .wordTagger, labels: tags, provenance: provenance)
        md.name = name
        md.metrics = metrics
        let features = lexicon.context ? Self.contextFeatureSet : lexicon.namesInMasks ? Self.namesFeatureSet : Self.featureSet
        let c = TaggerConfig(features: features, tokenizer: tokenizer.config, scheme: scheme)
        md.tagger = c
        let t = tags.count
        func bytes<T>(_ v: [T]) -> TensorBytes { TensorBytes(copying: v.withUnsafeBytes { Array($0) }) }
        var values = [UInt32]()
        values.reserveCapacity(2 * lexicon.keys.count)
        for i in lexicon.keys.indices { values.append(lexicon.masks[i]); values.append(lexicon.clusters[i]) }
        let tensors = [
            StoredTensor(name: c.keysTensor, dtype: .i64, shape: [keys.count], bytes: bytes(keys.map(\.littleEndian))),
            StoredTensor(name: c.weightsTensor, tensor: Tensor(shape: [keys.count, t], data: Array(weights.prefix(keys.count * t)))),
            StoredTensor(name: c.transitionsTensor, tensor: Tensor(shape: [t + 2, t], data: transitions)),
            StoredTensor(name: c.lexiconKeysTensor, dtype: .i64, shape: [lexicon.keys.count],
                         bytes: bytes(lexicon.keys.map(\.littleEndian))),
            StoredTensor(name: c.lexiconValuesTensor, dtype: .i32, shape: [lexicon.keys.count, 2],
                         bytes: bytes(values.map(\.littleEndian))),
        ]
        return Model(metadata: md, tensors: tensors)
    }
}
