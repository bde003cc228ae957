import MLToolCore

extension TreeTables {
    /// Shared multiclass trees (docs/FORMAT.md 4.5): `leafValuesTensor` is a stored f32 [L, K] of finite values, L the
    /// leaves of the stored trees, and every stored leaf's own value is 0. Runs after `validate`.
    func validateSharedLeaves(_ t: StoredTensor?, named name: String, scores k: Int, file: String) throws {
        guard let t else { throw FormatError.badGraph(file: file, node: "tabular", field: "leafValuesTensor", reason: "no stored tensor named '\(name)'") }
        guard t.dtype == .f32 else { throw FormatError.badTensor(file: file, tensor: name, field: "dtype", expected: "f32", actual: t.dtype.name) }
        var leaves = 0
        for t in 0..<(trees.shape[0] - 1) {
            let start = int(trees, t), end = int(trees, t + 1)
            for i in start..<end where int(nodes, i &* 5) == -1 {
                let value = values.bytes.buffer.loadUnaligned(fromByteOffset: i &* 4, as: Float.self)
                guard value == 0 else {
                    throw FormatError.badTensor(file: file, tensor: values.name, field: "values", expected: "0 at the leaves of shared trees",
                                                actual: "tree \(t), node \(i - start): \(value)")
                }
                leaves += 1
            }
        }
        guard t.shape == [leaves, k] else {
            throw FormatError.badTensor(file: file, tensor: name, field: "shape", expected: "\([leaves, k])", actual: "\(t.shape)")
        }
        for i in 0..<(t.bytes.count / 4) {
            let v = t.bytes.buffer.loadUnaligned(fromByteOffset: i &* 4, as: Float.self)
            guard v.isFinite else { throw FormatError.badTensor(file: file, tensor: name, field: "values", expected: "finite", actual: "element \(i): \(v)") }
        }
    }
}
