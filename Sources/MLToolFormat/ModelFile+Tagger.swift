import MLToolCore

extension ModelFile {
    /// A word tagger's metadata and tensors (docs/FORMAT.md section 4.3 and rule 13).
    static func validateTagger(_ m: ModelMetadata, tensors: [StoredTensor], file: String) throws {
        guard m.task == .wordTagger else { return }
        func bad(_ field: String, _ reason: String) -> FormatError {
            .badGraph(file: file, node: "tagger", field: field, reason: reason)
        }
        guard let c = m.tagger else { throw bad("tagger", "missing for task wordTagger") }
        guard m.labels.count >= 2 else {
            throw bad("labels", "only \(m.labels.count) label\(m.labels.count == 1 ? "" : "s"); need at least 2")
        }
        var seen = Set<String>()
        for label in m.labels where !seen.insert(label).inserted { throw bad("labels", "'\(label)' occurs twice") }
        var byName: [String: StoredTensor] = [:]
        for t in tensors where byName[t.name] == nil { byName[t.name] = t }
        func tensor(_ field: String, _ name: String) throws -> StoredTensor {
            guard let t = byName[name] else { throw bad(field, "no stored tensor named '\(name)'") }
            return t
        }
        let keys = try tensor("keysTensor", c.keysTensor), weights = try tensor("weightsTensor", c.weightsTensor)
        let transitions = try tensor("transitionsTensor", c.transitionsTensor)
        let lexiconKeys = try tensor("lexiconKeysTensor", c.lexiconKeysTensor)
        let lexiconValues = try tensor("lexiconValuesTensor", c.lexiconValuesTensor)
        func require(_ t: StoredTensor, _ dtypes: [DType], _ shape: [Int]) throws {
            guard dtypes.contains(t.dtype) else {
                throw FormatError.badTensor(file: file, tensor: t.name, field: "dtype",
                                            expected: dtypes.map(\.name).joined(separator: ", "), actual: t.dtype.name)
            }
            guard t.shape == shape else {
                throw FormatError.badTensor(file: file, tensor: t.name, field: "shape", expected: "\(shape)",
                                            actual: "\(t.shape)")
            }
        }
        let n = m.labels.count
        guard keys.shape.count == 1 else {
            throw FormatError.badTensor(file: file, tensor: keys.name, field: "shape", expected: "[F]", actual: "\(keys.shape)")
        }
        guard lexiconKeys.shape.count == 1 else {
            throw FormatError.badTensor(file: file, tensor: lexiconKeys.name, field: "shape", expected: "[W]",
                                        actual: "\(lexiconKeys.shape)")
        }
        let f = keys.shape[0], w = lexiconKeys.shape[0]
        try require(keys, [.i64], [f])
        let floating = DType.allCases.filter { $0 != .u8 && $0 != .i32 && $0 != .i64 }
        try require(weights, floating, [f, n])
        try require(transitions, [.f32], [n + 2, n])
        try require(lexiconKeys, [.i64], [w])
        try require(lexiconValues, [.i32], [w, 2])
        for t in [keys, lexiconKeys] { try requireIncreasingKeys(t, file: file) }
    }

    /// An i64 tensor read as unsigned numbers must be strictly increasing and hold no zero.
    static func requireIncreasingKeys(_ t: StoredTensor, file: String) throws {
        let raw = t.bytes.buffer
        var previous: UInt64 = 0
        for i in 0..<(raw.count / 8) {
            let v = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i &* 8, as: UInt64.self))
            guard v > previous else {
                throw FormatError.badTensor(file: file, tensor: t.name, field: "values",
                                            expected: "non-zero and strictly increasing (unsigned)",
                                            actual: "element \(i) is \(v) after \(previous)")
            }
            previous = v
        }
    }
}
