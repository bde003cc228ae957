import MLToolCore

/// GatherElements, GatherND, ScatterElements (and the older Scatter), ScatterND and OneHot with constant indices,
/// expanded into ops the importer converts: the data is flattened and every output element's source is worked out
/// here, so each becomes a Gather of the flat data by a constant index table (the scatters: a Gather of the flat
/// updates and a Where against a constant mask per round of updates that land on distinct elements, combined with
/// the `reduction`; the ONNX spec leaves repeated targets without reduction undefined, the last update wins as in
/// onnxruntime). Negative indices count from the end; out-of-range ones are an error naming the node.
extension ONNXGraphBuilder {
    /// Row-major strides of `shape`.
    static func strides(_ shape: [Int]) -> [Int] {
        var s = [Int](repeating: 1, count: shape.count)
        for d in stride(from: shape.count - 2, through: 0, by: -1) { s[d] = s[d + 1] * shape[d + 1] }
        return s
    }

    /// Index `i` along an axis of size `n` made non-negative, or an error naming the node.
    func wrapped(_ i: Int?, _ n: Int, _ node: ONNXFile.Node) throws -> Int {
        guard let i, i >= -n, i < n else {
            throw ImportError.invalid(file: file, place: "\(place(node)) indices", expected: "indices in -\(n)..<\(n)",
                                      actual: i.map(String.init) ?? "an unknown value")
        }
        return i < 0 ? i + n : i
    }

    /// The activation at input `index` flattened to one axis (its shape must be known).
    mutating func flattened(_ node: ONNXFile.Node, _ index: Int, what: String) throws -> (name: String, shape: [Int]) {
        let x = try activation(node, index)
        _ = try expansionCount(node, x.shape, what: what)
        let shape = expansionConstant(node, "flat", shape: [1], values: [-1], integer: true)
        return (try step(node, "Reshape", [x.name, shape]), x.shape)
    }

    /// Gather of the flat tensor `flat` by the constant table `table` (shape `shape`) into `output`.
    mutating func gatherTable(_ node: ONNXFile.Node, _ flat: String, _ table: [Int], shape: [Int], output: String? = nil) throws -> String {
        let t = expansionConstant(node, "table", shape: shape, values: table.map(Double.init), integer: true)
        return try step(node, "Gather", [flat, t], output: output, [ONNXFile.Attribute(name: "axis", type: 2, i: 0)])
    }

    /// GatherElements (opset 11, 13): out[p] = data[p with axis coordinate indices[p]], indices the data's rank.
    mutating func gatherElements(_ node: ONNXFile.Node) throws {
        let idx = try constant(node, 1, what: "indices")
        let data = try flattened(node, 0, what: "data")
        let r = data.shape.count
        let axis = try normalize(int(node, "axis", 0), rank: r, node)
        guard idx.rank == r, (0..<r).allSatisfy({ $0 == axis || idx.shape[$0] <= data.shape[$0] }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) indices", expected: "rank \(r), within \(data.shape) off axis \(axis)",
                                      actual: "\(idx.shape)")
        }
        let dataStrides = Self.strides(data.shape), idxStrides = Self.strides(idx.shape)
        let values = idx.ints
        var table = [Int](repeating: 0, count: values.count)
        for p in 0..<values.count {
            var flat = 0
            for d in 0..<r {
                let coordinate = d == axis ? try wrapped(values[p], data.shape[d], node) : p / idxStrides[d] % idx.shape[d]
                flat += coordinate * dataStrides[d]
            }
            table[p] = flat
        }
        _ = try gatherTable(node, data.name, table, shape: idx.shape, output: outputName(node))
    }

    /// GatherND (opset 11, 12, 13): indices (…, k) pick slices of the data after `batch_dims` leading axes the two
    /// share; the output is indices.shape[:-1] + data.shape[batch_dims + k:].
    mutating func gatherND(_ node: ONNXFile.Node) throws {
        let idx = try constant(node, 1, what: "indices")
        let data = try flattened(node, 0, what: "data")
        let b = int(node, "batch_dims", 0)
        guard let k = idx.shape.last, idx.rank >= 1, b >= 0, b < idx.rank, k >= 1, b + k <= data.shape.count,
              Array(idx.shape.prefix(b)) == Array(data.shape.prefix(b)) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) indices",
                                      expected: "(batch…, …, k) with batch_dims \(b) shared with data \(data.shape)", actual: "\(idx.shape)")
        }
        let inner = Self.product(data.shape[(b + k)...])
        let perBatch = Self.product(data.shape[b...])
        let tuplesPerBatch = Self.product(idx.shape[b..<(idx.rank - 1)])
        let strides = Self.strides(Array(data.shape[b...]))
        let values = idx.ints
        let tuples = values.count / k
        var table: [Int] = []
        table.reserveCapacity(tuples * inner)
        for q in 0..<tuples {
            var base = (tuplesPerBatch == 0 ? 0 : q / tuplesPerBatch) * perBatch
            for j in 0..<k { base += try wrapped(values[q * k + j], data.shape[b + j], node) * strides[j] }
            for e in 0..<inner { table.append(base + e) }
        }
        let shape = Array(idx.shape.dropLast()) + Array(data.shape[(b + k)...])
        _ = try gatherTable(node, data.name, table, shape: shape, output: outputName(node))
    }

    /// The data with flat `updates` written at their targets (update index, flat target), combined by `reduction`.
    mutating func scatter(_ node: ONNXFile.Node, data: (name: String, shape: [Int]), updates: String,
                          _ writes: [(update: Int, target: Int)]) throws {
        let reduction = opset >= 16 ? string(node, "reduction", "none") : "none"
        let combine: String?
        switch reduction {
        case "none": combine = nil
        case "add": combine = "Add"
        case "mul": combine = "Mul"
        case "max": combine = "Max"
        case "min": combine = "Min"
        case let other:
            throw ImportError.invalid(file: file, place: "\(place(node)) reduction", expected: "none, add, mul, max or min", actual: other)
        }
        let count = Self.product(data.shape[...])
        // Rounds of writes to distinct elements, in order (without a reduction one round: the last write wins).
        var rounds: [[Int: Int]] = []
        for w in writes {
            if combine == nil {
                if rounds.isEmpty { rounds.append([:]) }
                rounds[0][w.target] = w.update
            } else if let r = rounds.firstIndex(where: { $0[w.target] == nil }) {
                rounds[r][w.target] = w.update
            } else {
                rounds.append([w.target: w.update])
            }
        }
        let out = try outputName(node)
        var y = data.name
        if rounds.isEmpty { try step(node, "Identity", [y], output: out) }
        for (r, round) in rounds.enumerated() {
            var table = [Int](repeating: 0, count: count), mask = [Double](repeating: 0, count: count)
            for (t, u) in round { table[t] = u; mask[t] = 1 }
            let picked = try gatherTable(node, updates, table, shape: data.shape)
            let written = try combine.map { try step(node, $0, [y, picked]) } ?? picked
            let m = expansionConstant(node, "mask", shape: data.shape, values: mask, integer: true)
            y = try step(node, "Where", [m, written, y], output: r == rounds.count - 1 ? out : nil)
        }
    }

    /// ScatterElements (opset 11, 13, 16, 18) and Scatter (opset 9, 10): updates[p] goes to data at p with the
    /// axis coordinate indices[p].
    mutating func scatterElements(_ node: ONNXFile.Node) throws {
        let idx = try constant(node, 1, what: "indices")
        let data = try activation(node, 0)
        _ = try expansionCount(node, data.shape, what: "data")
        let updates = try flattened(node, 2, what: "updates")
        let r = data.shape.count
        let axis = try normalize(int(node, "axis", 0), rank: r, node)
        guard idx.shape == updates.shape, idx.rank == r, (0..<r).allSatisfy({ $0 == axis || idx.shape[$0] <= data.shape[$0] }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) indices", expected: "the updates' shape \(updates.shape), within \(data.shape)",
                                      actual: "\(idx.shape)")
        }
        let dataStrides = Self.strides(data.shape), idxStrides = Self.strides(idx.shape)
        let values = idx.ints
        var writes: [(update: Int, target: Int)] = []
        for p in 0..<values.count {
            var flat = 0
            for d in 0..<r {
                let coordinate = d == axis ? try wrapped(values[p], data.shape[d], node) : p / idxStrides[d] % idx.shape[d]
                flat += coordinate * dataStrides[d]
            }
            writes.append((p, flat))
        }
        try scatter(node, data: data, updates: updates.name, writes)
    }

    /// ScatterND (opset 11, 13, 16, 18): indices (…, k) name slices of the data that the updates
    /// (indices.shape[:-1] + data.shape[k:]) replace or combine with.
    mutating func scatterND(_ node: ONNXFile.Node) throws {
        let idx = try constant(node, 1, what: "indices")
        let data = try activation(node, 0)
        _ = try expansionCount(node, data.shape, what: "data")
        let updates = try flattened(node, 2, what: "updates")
        guard let k = idx.shape.last, k >= 1, k <= data.shape.count,
              updates.shape == Array(idx.shape.dropLast()) + Array(data.shape[k...]) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) indices", expected: "(…, k ≤ \(data.shape.count)) matching updates \(updates.shape)",
                                      actual: "\(idx.shape)")
        }
        let inner = Self.product(data.shape[k...])
        let strides = Self.strides(data.shape)
        let values = idx.ints
        var writes: [(update: Int, target: Int)] = []
        for q in 0..<(values.count / k) {
            var base = 0
            for j in 0..<k { base += try wrapped(values[q * k + j], data.shape[j], node) * strides[j] }
            for e in 0..<inner { writes.append((q * inner + e, base + e)) }
        }
        try scatter(node, data: data, updates: updates.name, writes)
    }

    /// OneHot (opset 9, 11): constant indices (input 0, negative ones from the end from opset 11) and depth (input 1),
    /// values (input 2: off, on) computed; `axis` (default -1) where the new axis goes.
    mutating func oneHot(_ node: ONNXFile.Node) throws {
        let idx = try constant(node, 0, what: "indices")
        let depthValues = try constant(node, 1, what: "depth").values
        guard depthValues.count == 1, depthValues[0] >= 1, depthValues[0] <= Double(Self.maxExpansionConstant) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) depth", expected: "one value ≥ 1", actual: "\(depthValues)")
        }
        let depth = Int(depthValues[0])
        let values = try activation(node, 2)
        guard Self.product(values.shape[...]) == 2 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) values", expected: "2 values (off, on)", actual: "\(values.shape)")
        }
        let r = idx.rank + 1
        let a = int(node, "axis", -1)
        guard a >= -r, a < r else {
            throw ImportError.invalid(file: file, place: "\(place(node)) axis", expected: "-\(r)..<\(r)", actual: "\(a)")
        }
        let axis = a < 0 ? a + r : a
        let shape = Array(idx.shape[..<axis]) + [depth] + Array(idx.shape[axis...])
        let count = try expansionCount(node, shape, what: "output")
        let inner = Self.product(idx.shape[axis...])
        var table = [Int](repeating: 0, count: count)
        for (p, v) in idx.values.enumerated() {
            // Indices outside -depth..<depth give an all-off row.
            let i = Int(v.rounded(.towardZero))
            guard v.isFinite, i >= -depth, i < depth else { continue }
            let at = i < 0 ? i + depth : i
            table[(p / inner * depth + at) * inner + p % inner] = 1
        }
        let flat = try step(node, "Reshape", [values.name, expansionConstant(node, "flat", shape: [1], values: [-1], integer: true)])
        _ = try gatherTable(node, flat, table, shape: shape, output: outputName(node))
    }
}
