import MLToolCore

/// ONNX ops that work along axes of a computed tensor: the Reduce family, ArgMax / ArgMin, LogSoftmax / Hardmax,
/// and Gather with computed indices. Axes are remapped to the IR's NHWC order; a reduced axis the source drops
/// (keepdims = 0) goes through a reshape, which handles NCHW order.
extension ONNXGraphBuilder {
    /// ReduceSum, ReduceMean, … : `axes` as an attribute (before opset 18; ReduceSum before 13) or a constant input,
    /// `keepdims` (default 1), `noop_with_empty_axes` (opset 13/18: no axes means identity instead of all axes).
    mutating func reduce(_ node: ONNXFile.Node, _ f: ReduceFunction) throws {
        let x = try activation(node)
        let r = x.shape.count
        let axesInput = node.opType == "ReduceSum" ? opset >= 13 : opset >= 18
        let listed: [Int]?
        if axesInput {
            listed = try optionalConstant(node, 1, what: "axes").map { c in try c.ints.map { try known($0, node, "axes") } }
        } else {
            listed = ints(node, "axes")
        }
        let out = try outputName(node)
        if (listed ?? []).isEmpty && int(node, "noop_with_empty_axes", 0) == 1 {
            emit(node.name, .identity, [x.name], out)
            shapes[out] = x.shape
            return
        }
        let axes = try (listed.flatMap { $0.isEmpty ? nil : $0 } ?? Array(0..<r)).map { try normalize($0, rank: r, node) }
        guard Set(axes).count == axes.count else {
            throw ImportError.invalid(file: file, place: "\(place(node)) axes", expected: "distinct axes", actual: "\(listed ?? [])")
        }
        var kept = x.shape
        for a in axes { kept[a] = 1 }
        // Max / Min of an empty bool set is false / true, not the float identity -∞ / +∞: clamped into 0...1.
        let boolEmpty = (f == .max || f == .min) && elementTypes[x.name] == 9 && axes.contains { x.shape[$0] == 0 }
        let reduced = boolEmpty ? fresh("\(out).float") : out
        try emitKeepingDims(node, .reduce, x.name, kept: kept, removing: axes, output: reduced,
                            Attributes(axes: axes.map { Layout.irAxis($0, rank: r) }.sorted(), mode: f.rawValue))
        if boolEmpty {
            try step(node, f == .max ? "Max" : "Min", [reduced, scalarConstant(node, "bool_bound", f == .max ? 0 : 1)], output: out)
        }
    }

    /// ArgMax / ArgMin: `axis` (default 0), `keepdims` (default 1), `select_last_index` (opset 12; default 0).
    mutating func argMax(_ node: ONNXFile.Node, largest: Bool) throws {
        let x = try activation(node)
        let r = x.shape.count
        let axis = try normalize(int(node, "axis", 0), rank: r, node)
        var kept = x.shape
        kept[axis] = 1
        var attrs = Attributes(axis: Layout.irAxis(axis, rank: r), largest: largest)
        attrs.selectLastIndex = int(node, "select_last_index", 0) == 1
        try emitKeepingDims(node, .argMax, x.name, kept: kept, removing: [axis], output: try outputName(node), attrs)
    }

    /// LogSoftmax and Hardmax: along `axis` from opset 13, before it over the input coerced to 2-D at `axis` (as
    /// Softmax).
    mutating func softmaxLike(_ node: ONNXFile.Node, _ op: Op) throws {
        let x = try activation(node)
        let r = x.shape.count
        let axis = try normalize(int(node, "axis", opset < 13 ? 1 : -1), rank: r, node)
        let out = try outputName(node)
        shapes[out] = x.shape
        if opset >= 13 || axis == r - 1 {
            return emit(node.name, op, [x.name], out, Attributes(axis: Layout.irAxis(axis, rank: r)))
        }
        if axis == 0 { batchFree = false }
        let flat = [Self.product(x.shape[..<axis]), Self.product(x.shape[axis...])]
        let a = fresh("\(out).2d"), b = fresh("\(out).\(op.rawValue)2d")
        try emitReshape("\(node.name).to2d", input: x.name, from: x.shape, to: flat, output: a)
        emit(node.name, op, [a], b, Attributes(axis: 1))
        try emitReshape("\(node.name).back", input: b, from: flat, to: x.shape, output: out)
    }

    /// Gather whose indices are computed (an embedding lookup, a token's row): the IR's `gather`, run in ONNX's
    /// axis order (rank-4 tensors are turned to NCHW around it).
    mutating func gatherComputed(_ node: ONNXFile.Node) throws {
        let dataShape = try shape(of: node.inputs[0], in: node)
        let idx = try activation(node, 1)
        let axis = try normalize(int(node, "axis", 0), rank: dataShape.count, node)
        let out = try outputName(node)
        var data = shapes[node.inputs[0]] != nil ? node.inputs[0] : try weightForGather(node)
        if dataShape.count == 4 && shapes[node.inputs[0]] != nil && !Layout.orderFree(dataShape) {
            let t = fresh("\(data).nchw")
            emit("\(node.name).to_nchw", .transpose, [data], t, Attributes(perm: Layout.toNCHW))
            data = t
        }
        let index = try onnxOrder(idx.name, shape: idx.shape, node)
        let final = Array(dataShape[..<axis]) + idx.shape + Array(dataShape[(axis + 1)...])
        if axis == 0 && shapes[node.inputs[0]] != nil { batchFree = false }
        if final.count == 4 && !Layout.orderFree(final) {
            let mid = fresh("\(out).nchw")
            emit(node.name, .gather, [data, index], mid, Attributes(axis: axis))
            emit("\(node.name).to_nhwc", .transpose, [mid], out, Attributes(perm: Layout.toNHWC))
        } else {
            emit(node.name, .gather, [data, index], out, Attributes(axis: axis))
        }
        shapes[out] = final
    }

    /// A constant Gather table stored as a weight in ONNX order (a gather reads it in that order).
    private mutating func weightForGather(_ node: ONNXFile.Node) throws -> String {
        let c = try constant(node, 0, what: "data")
        return addWeight(node.inputs[0], c)
    }

    /// `name` (ONNX shape `shape`) in ONNX element order: a transpose for a rank-4 activation whose orders differ.
    private mutating func onnxOrder(_ name: String, shape: [Int], _ node: ONNXFile.Node) throws -> String {
        guard shape.count == 4, !Layout.orderFree(shape) else { return name }
        let t = fresh("\(name).nchw")
        emit("\(node.name).indices_nchw", .transpose, [name], t, Attributes(perm: Layout.toNCHW))
        return t
    }

    /// Emits `op` (which keeps the reduced axes with size 1, shape `kept` in ONNX order) and, when the node's
    /// `keepdims` is 0, a reshape that removes `removing`.
    private mutating func emitKeepingDims(_ node: ONNXFile.Node, _ op: Op, _ x: String, kept: [Int], removing axes: [Int],
                                          output out: String, _ attrs: Attributes) throws {
        guard int(node, "keepdims", 1) == 0 else {
            emit(node.name, op, [x], out, attrs)
            shapes[out] = kept
            return
        }
        let mid = fresh("\(out).keepdims")
        emit(node.name, op, [x], mid, attrs)
        shapes[mid] = kept
        let dropped = kept.indices.filter { !axes.contains($0) }.map { kept[$0] }
        guard kept.count == 4 else {
            // Plain row-major on both sides: a squeeze, which any number of run-time dimensions can go through.
            if axes.contains(0) { batchFree = false }
            emit("\(node.name).squeeze", .squeeze, [mid], out, Attributes(axes: axes.sorted()))
            shapes[out] = dropped
            return
        }
        if dropped.filter({ $0 < 0 }).count > 1 {
            // Several run-time dimensions: squeeze the NCHW-ordered tensor (a reshape can infer only one).
            if axes.contains(0) { batchFree = false }
            let nchw = fresh("\(out).nchw")
            emit("\(node.name).to_nchw", .transpose, [mid], nchw, Attributes(perm: Layout.toNCHW))
            emit("\(node.name).squeeze", .squeeze, [nchw], out, Attributes(axes: axes.sorted()))
            shapes[out] = dropped
            return
        }
        try emitReshape("\(node.name).squeeze", input: mid, from: kept, to: dropped, output: out)
    }

    /// An integer of a constant that must be known (not a run-time dimension).
    private func known(_ v: Int?, _ node: ONNXFile.Node, _ what: String) throws -> Int {
        guard let v else {
            throw ImportError.invalid(file: file, place: "\(place(node)) \(what)", expected: "integers", actual: "a value out of range")
        }
        return v
    }
}

extension ONNXGraphBuilder {
    /// Squeeze / Unsqueeze to a shape with several run-time dimensions (a reshape can infer only one): the IR's own
    /// squeeze / unsqueeze on the tensor in ONNX order, with transposes where a rank-4 side is NHWC in the IR.
    mutating func squeezeLike(_ node: ONNXFile.Node, _ x: (name: String, shape: [Int]), to: [Int]) throws {
        let unsqueeze = node.opType == "Unsqueeze"
        let listed = opset >= 13 ? try optionalConstant(node, 1, what: "axes")?.ints.compactMap { $0 } : ints(node, "axes")
        let rank = unsqueeze ? to.count : x.shape.count
        let axes = try (listed ?? x.shape.indices.filter { x.shape[$0] == 1 }).map { try normalize($0, rank: rank, node) }.sorted()
        if axes.contains(0) { batchFree = false }
        // Rank-4 sides go through NCHW even when its bytes are NHWC's (C or H·W of 1): the squeeze's axes and the
        // IR shape it gives are NCHW's.
        var src = x.name
        if x.shape.count == 4 {
            src = fresh("\(x.name).nchw")
            emit("\(node.name).to_nchw", .transpose, [x.name], src, Attributes(perm: Layout.toNCHW))
        }
        let out = try outputName(node)
        let nhwc = to.count == 4
        let mid = nhwc ? fresh("\(out).nchw") : out
        emit(node.name, unsqueeze ? .unsqueeze : .squeeze, [src], mid, Attributes(axes: axes))
        if nhwc { emit("\(node.name).to_nhwc", .transpose, [mid], out, Attributes(perm: Layout.toNHWC)) }
        shapes[out] = to
    }
}
