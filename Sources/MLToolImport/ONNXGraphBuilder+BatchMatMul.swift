import MLToolCore

/// MatMul whose B is computed (attention's Q·Kᵀ and weights·V), or whose A is a constant, as the IR's
/// `batchMatMul` with numpy semantics: 1-D operands become a row of A / a column of B (that axis dropped from the
/// result), batch axes broadcast. Rank-4 activations are NHWC in the IR while MatMul works on ONNX's last two axes
/// (H, W): they are transposed to NCHW order for the product and the rank-4 result back.
extension ONNXGraphBuilder {
    mutating func computedMatMul(_ node: ONNXFile.Node) throws {
        guard node.inputs.count == 2, let out = node.outputs.first, !out.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "inputs A and B and an output", actual: "\(node.inputs) → \(node.outputs)")
        }
        var ops: [(name: String, shape: [Int])] = []
        for i in 0..<2 {
            let name = node.inputs[i]
            let shape = try shape(of: name, in: node)
            guard !shape.isEmpty else {
                throw ImportError.invalid(file: file, place: place(node), expected: "operands of rank ≥ 1", actual: "\(i == 0 ? "A" : "B") scalar")
            }
            if let c = constants[name] {
                // A constant in ONNX order: the product reads it as it is.
                ops.append((addWeight(name, c), shape))
            } else if shape.count == 4 {
                let t = fresh("\(name).nchw")
                emit("\(node.name).\(i == 0 ? "a" : "b")_nchw", .transpose, [name], t, Attributes(perm: Layout.toNCHW))
                ops.append((t, shape))
            } else {
                ops.append((name, shape))
            }
        }
        // Vectors as matrices: A (K) → (1, K); B (K) → (K, 1). Rank ≤ 2 tensors are plain: a reshape is exact.
        var (a, b) = (ops[0], ops[1])
        if a.shape.count == 1 {
            let r = fresh("\(a.name).row")
            emit("\(node.name).a_row", .reshape, [a.name], r, Attributes(shape: [1, a.shape[0]]))
            a = (r, [1, a.shape[0]])
        }
        if b.shape.count == 1 {
            let r = fresh("\(b.name).column")
            emit("\(node.name).b_column", .reshape, [b.name], r, Attributes(shape: [b.shape[0], 1]))
            b = (r, [b.shape[0], 1])
        }
        let k = a.shape[a.shape.count - 1], kb = b.shape[b.shape.count - 2]
        guard k < 0 || kb < 0 || k == kb else {
            throw ImportError.invalid(file: file, place: "\(place(node)) B", expected: "(…, \(k), N) to match A \(ops[0].shape)", actual: "\(ops[1].shape)")
        }
        let batch = try broadcast(Array(a.shape.dropLast(2)), Array(b.shape.dropLast(2)), node)
        let full = batch + [a.shape[a.shape.count - 2], b.shape[b.shape.count - 1]]
        // Each batch item on its own only when both operands carry the batch axis.
        if full.count < 3 || a.shape.count != full.count || b.shape.count != full.count { batchFree = false }
        var final = batch
        if ops[0].shape.count > 1 { final.append(full[full.count - 2]) }
        if ops[1].shape.count > 1 { final.append(full[full.count - 1]) }
        let product = final == full ? (full.count == 4 ? fresh("\(out).nchw") : out) : fresh("\(out).full")
        emit(node.name, .batchMatMul, [a.name, b.name], product)
        if final == full {
            if full.count == 4 { emit("\(node.name).to_nhwc", .transpose, [product], out, Attributes(perm: Layout.toNHWC)) }
            shapes[out] = full
            return
        }
        // A vector operand: its axis of 1 dropped (the result has rank ≤ 3 here: plain in the IR either way, unless
        // it is rank 4, which emitReshape turns to NHWC).
        var plain = full
        if full.count == 4 {
            // The product is NCHW-ordered data; describe it as a plain rank-3 view first.
            plain = [full[0] == -1 ? -1 : full[0] * full[1], full[2], full[3]]
            let v = fresh("\(out).rank3")
            emit("\(node.name).rank3", .reshape, [product], v, Attributes(shape: [-1, full[2], full[3]]))
            shapes[v] = plain
            try emitReshape("\(node.name).shape", input: v, from: plain, to: final, output: out)
        } else {
            shapes[product] = full
            try emitReshape("\(node.name).shape", input: product, from: full, to: final, output: out)
        }
    }
}
