import MLToolCore

/// MatMul with numpy semantics against a constant B that is not a plain (K, N) matrix: 1-D operands (a vector is
/// a row of A or a column of B, its axis dropped from the result) and stacks of matrices with broadcast batch axes.
/// The IR's matMul takes one (K, N) matrix, so a stack becomes one matMul per output batch index (A's matching
/// (M, K) slice times B's (K, N) slice), concatenated.
extension ONNXGraphBuilder {
    /// Most (M, K)·(K, N) products one stacked MatMul may become (each is a node).
    static let maxMatMulStack = 4096

    mutating func batchedMatMul(_ node: ONNXFile.Node, a: (name: String, shape: [Int]), b: ONNXConstant, output out: String) throws {
        guard !a.shape.isEmpty, b.rank >= 1 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "operands of rank ≥ 1", actual: "\(a.shape) and \(b.shape)")
        }
        // Vectors as matrices: A (K) → (1, K); B (K) → (K, 1).
        var aName = a.name, aShape = a.shape
        if aShape.count == 1 {
            aName = fresh("\(a.name).row")
            try emitReshape("\(node.name).a_row", input: a.name, from: a.shape, to: [1, a.shape[0]], output: aName)
            aShape = [1, a.shape[0]]
        }
        var bc = b
        if b.rank == 1 { bc = ONNXConstant(shape: [b.shape[0], 1], values: b.values) }
        let r = aShape.count, rb = bc.rank
        let (m, k, n) = (aShape[r - 2], aShape[r - 1], bc.shape[rb - 1])
        guard k == bc.shape[rb - 2] else {
            throw ImportError.invalid(file: file, place: "\(place(node)) B", expected: "(…, \(k), N) to match A \(a.shape)", actual: "\(b.shape)")
        }
        let aBatch = Array(aShape.dropLast(2)), bBatch = Array(bc.shape.dropLast(2))
        let batch = try broadcast(aBatch, bBatch, node)
        var final = batch
        if a.shape.count > 1 { final.append(m) }
        if b.rank > 1 { final.append(n) }
        let stacked = fresh("\(out).stacked")
        let matrices = Self.product(bBatch[...])
        if matrices == 1 {
            // One B matrix: every row of A times it.
            let rows = fresh("\(aName).rows"), y = fresh("\(out).rows")
            let rowCount = Self.product(aShape.dropLast()[...])
            try emitReshape("\(node.name).a_rows", input: aName, from: aShape, to: [rowCount, k], output: rows)
            emit(node.name, .dense, [rows, addWeight(node.inputs[1], ONNXConstant(shape: [k, n], values: bc.values))], y)
            shapes[y] = [rowCount, n]
            try emitReshape("\(node.name).shape", input: y, from: [rowCount, n], to: final, output: out)
            return
        }
        guard !batch.contains(where: { $0 < 0 }), !aBatch.contains(where: { $0 < 0 }), m >= 0, k >= 0 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "A with known batch axes against a stack of B matrices",
                                      actual: "\(a.shape)")
        }
        let total = Self.product(batch[...])
        guard total <= Self.maxMatMulStack else {
            throw ImportError.invalid(file: file, place: place(node), expected: "at most \(Self.maxMatMulStack) matrices in the batch of a stacked MatMul",
                                      actual: "\(batch)")
        }
        batchFree = false
        let a3 = fresh("\(aName).stack")
        let aCount = Self.product(aBatch[...])
        try emitReshape("\(node.name).a_stack", input: aName, from: aShape, to: [aCount, m, k], output: a3)
        // Flat index into a batch shape `dims` (left-padded to the output's batch rank) for output index `idx`.
        func flat(_ dims: [Int], _ idx: [Int]) -> Int {
            let padded = [Int](repeating: 1, count: idx.count - dims.count) + dims
            return zip(padded, idx).reduce(0) { $0 * $1.0 + ($1.0 == 1 ? 0 : $1.1) }
        }
        var parts: [String] = [], rowsOfA: [Int: String] = [:]
        for o in 0..<total {
            var idx = [Int](repeating: 0, count: batch.count), rest = o
            for d in stride(from: batch.count - 1, through: 0, by: -1) { idx[d] = rest % batch[d]; rest /= batch[d] }
            let ia = flat(aBatch, idx), ib = flat(bBatch, idx)
            let slice: String
            if let s = rowsOfA[ia] { slice = s } else {
                slice = fresh("\(a3).\(ia)")
                try emitTake("\(node.name).a\(ia)", input: a3, shape: [aCount, m, k], axis: 0, indices: [ia], output: slice)
                rowsOfA[ia] = slice
            }
            let w = addWeight("\(node.inputs[1]).\(ib)", ONNXConstant(shape: [k, n], values: Array(bc.values[(ib * k * n)..<((ib + 1) * k * n)])))
            let part = fresh("\(out).\(o)")
            emit("\(node.name).\(o)", .matMul, [slice, w], part)
            shapes[part] = [1, m, n]
            parts.append(part)
        }
        if parts.count == 1 {
            emit("\(node.name).stack", .identity, parts, stacked)
        } else {
            emit("\(node.name).stack", .concat, parts, stacked, Attributes(axis: 0))
        }
        shapes[stacked] = [total, m, n]
        try emitReshape("\(node.name).shape", input: stacked, from: [total, m, n], to: final, output: out)
    }
}
