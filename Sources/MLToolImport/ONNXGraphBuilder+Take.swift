import MLToolCore

/// Gather and Slice on computed tensors with constant indices. Evenly spaced indices (every Slice, most Gathers)
/// become an IR `slice` (see `emitSlice`). The IR has no gather op: taking other indices i₀…iₖ₋₁
/// along an axis of size n is a product with the constant one-hot (n, k) matrix S (S[iⱼ, j] = 1), run as `matMul`
/// after moving that axis last. Each output is one input value times 1 plus zeros, so it is exact (a NaN or
/// infinity elsewhere on the row would spread; real networks slice finite activations).
extension ONNXGraphBuilder {
    /// Largest one-hot selection matrix a Gather / Slice becomes (64 MB of float32).
    static let maxTakeEntries = 1 << 24

    /// Emits "take `indices` (each in 0..<shape[axis]) along ONNX axis `axis` of `input`" as `output`, whose ONNX
    /// shape is `shape` with that axis resized to `indices.count`.
    mutating func emitTake(_ nodeName: String, input: String, shape: [Int], axis: Int, indices: [Int], output: String) throws {
        let r = shape.count
        let n = shape[axis]
        if r < 2 {
            // matMul needs a row: (n) → (1, n), take along axis 1, back to (k).
            let row = fresh("\(input).row"), taken = fresh("\(output).row")
            try emitReshape("\(nodeName).row", input: input, from: shape, to: [1, n], output: row)
            try emitTake(nodeName, input: row, shape: [1, n], axis: 1, indices: indices, output: taken)
            try emitReshape("\(nodeName).unrow", input: taken, from: [1, indices.count], to: [indices.count], output: output)
            return
        }
        let (entries, overflow) = n.multipliedReportingOverflow(by: indices.count)
        guard !overflow, entries <= Self.maxTakeEntries else {
            throw ImportError.invalid(file: file, place: "node '\(nodeName)'", expected: "a gather / slice of at most \(Self.maxTakeEntries) selection entries (axis size × taken)",
                                      actual: "\(n) × \(indices.count)")
        }
        if axis == 0 { batchFree = false }
        // ONNX axis q is IR axis irAxis(q); IR axis j holds ONNX axis onnxAxis[j].
        let onnxAxis = r == 4 ? Layout.nhwcToNchw : Array(0..<r)
        let order = (0..<r).filter { $0 != axis } + [axis]
        var src = input
        let perm1 = order.map { Layout.irAxis($0, rank: r) }
        if perm1 != Array(0..<r) {
            src = fresh("\(input).\(axis)last")
            emit("\(nodeName).axis_last", .transpose, [input], src, Attributes(perm: perm1))
        }
        var s = [Float](repeating: 0, count: n * indices.count)
        for (j, i) in indices.enumerated() { s[i * indices.count + j] = 1 }
        let sName = addWeight("\(nodeName).take", shape: [n, indices.count], values: s)
        let perm2 = onnxAxis.map { q in order.firstIndex(of: q) ?? q }
        if perm2 == Array(0..<r) {
            emit(nodeName, .matMul, [src, sName], output)
        } else {
            let mid = fresh("\(output).\(axis)last")
            emit(nodeName, .matMul, [src, sName], mid)
            emit("\(nodeName).axis_back", .transpose, [mid], output, Attributes(perm: perm2))
        }
        var out = shape
        out[axis] = indices.count
        shapes[output] = out
    }

    /// Gather on a computed tensor with constant indices (negative ones count from the end).
    mutating func gather(_ node: ONNXFile.Node) throws {
        if node.inputs.count > 1, shapes[node.inputs[1]] != nil { return try gatherComputed(node) }
        let x = try activation(node)
        let idx = try constant(node, 1, what: "indices")
        let axis = try normalize(int(node, "axis", 0), rank: x.shape.count, node)
        let n = x.shape[axis]
        guard n >= 0 else {
            // Along a free axis the indices cannot become a slice: the IR gather takes them as a tensor (negative
            // ones counting from the end of the size each run has).
            var m = node
            m.inputs[1] = addWeight("\(node.inputs[1]).indices", idx)
            shapes[m.inputs[1]] = idx.shape
            return try gatherComputed(m)
        }
        let indices = try idx.ints.map { i -> Int in
            guard let i, i >= -n, i < n else {
                throw ImportError.invalid(file: file, place: "\(place(node)) indices", expected: "-\(n)..<\(n)", actual: "\(idx.values)")
            }
            return i < 0 ? i + n : i
        }
        guard let out = node.outputs.first, !out.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        let final = Array(x.shape[..<axis]) + idx.shape + Array(x.shape[(axis + 1)...])
        if idx.shape == [indices.count] {
            return try emitSlice(node.name, input: x.name, shape: x.shape, takes: [(axis, indices)], output: out)
        }
        let flat = fresh("\(out).flat")
        try emitSlice(node.name, input: x.name, shape: x.shape, takes: [(axis, indices)], output: flat)
        var flatShape = x.shape
        flatShape[axis] = indices.count
        try emitReshape("\(node.name).shape", input: flat, from: flatShape, to: final, output: out)
    }

    /// Slice on a computed tensor: constant starts / ends / axes / steps (attributes before opset 10), one IR slice.
    mutating func slice(_ node: ONNXFile.Node) throws {
        if opset >= 10, [1, 2].contains(where: { $0 < node.inputs.count && isPartial(node.inputs[$0]) }) {
            return try sliceWithRunTimeBounds(node)
        }
        let x = try activation(node)
        guard let out = node.outputs.first, !out.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        let bounds = try sliceBounds(node, rank: x.shape.count)
        if bounds.contains(where: { x.shape[$0.axis] < 0 && !($0.start == 0 && $0.step == 1 && $0.end >= Int(Int32.max)) }) {
            return emitRunTimeSlice(node.name, x, bounds, output: out)
        }
        let takes = try sliceTakes(node, shape: x.shape)
        try emitSlice(node.name, input: x.name, shape: x.shape, takes: takes, output: out)
    }

    /// A Slice node's bounds, one per axis it lists: the axis (non-negative, for rank `r`), start, end and step as
    /// the node gives them (constant starts / ends / axes / steps; attributes before opset 10).
    func sliceBounds(_ node: ONNXFile.Node, rank r: Int) throws -> [(axis: Int, start: Int, end: Int, step: Int)] {
        let starts: [Int?], ends: [Int?], axes: [Int?]?, steps: [Int?]?
        if opset < 10 {
            starts = (ints(node, "starts") ?? []).map { $0 }
            ends = (ints(node, "ends") ?? []).map { $0 }
            axes = ints(node, "axes").map { $0.map { $0 } }
            steps = nil
        } else {
            starts = try constant(node, 1, what: "starts").ints
            ends = try constant(node, 2, what: "ends").ints
            axes = try optionalConstant(node, 3, what: "axes")?.ints
            steps = try optionalConstant(node, 4, what: "steps")?.ints
        }
        let axisList = axes ?? (0..<starts.count).map { $0 }
        let stepList = steps ?? [Int?](repeating: 1, count: starts.count)
        guard starts.count == ends.count, axisList.count == starts.count, stepList.count == starts.count else {
            throw ImportError.invalid(file: file, place: place(node), expected: "starts, ends, axes and steps of one length",
                                      actual: "\(starts.count), \(ends.count), \(axisList.count), \(stepList.count)")
        }
        var seen = Set<Int>()
        return try starts.indices.map { k in
            guard let a = axisList[k], let s0 = starts[k], let e0 = ends[k], let st = stepList[k], st != 0 else {
                throw ImportError.invalid(file: file, place: place(node), expected: "known starts, ends, axes and non-zero steps",
                                          actual: "starts \(starts), ends \(ends), axes \(axisList), steps \(stepList)")
            }
            let axis = try normalize(a, rank: r, node)
            guard seen.insert(axis).inserted else {
                throw ImportError.invalid(file: file, place: "\(place(node)) axes", expected: "distinct axes", actual: "\(axisList)")
            }
            return (axis, s0, e0, st)
        }
    }

    /// What a Slice node takes from a tensor of `shape`: the indices along each axis it changes.
    func sliceTakes(_ node: ONNXFile.Node, shape: [Int]) throws -> [(axis: Int, indices: [Int])] {
        var takes: [(axis: Int, indices: [Int])] = []
        for b in try sliceBounds(node, rank: shape.count) {
            let n = shape[b.axis]
            // The whole of an axis known only at run time (start 0, step 1, an end past any size): nothing to take.
            if n < 0 && b.start == 0 && b.step == 1 && b.end >= Int(Int32.max) { continue }
            guard n >= 0 else {
                throw ImportError.invalid(file: file, place: place(node), expected: "axis \(b.axis) of known size", actual: "\(shape)")
            }
            let indices = Self.sliceIndices(n: n, start: b.start, end: b.end, step: b.step)
            if indices != Array(0..<n) { takes.append((b.axis, indices)) }
        }
        return takes
    }

    /// The indices ONNX Slice takes along an axis of size `n` (starts/ends clamped as the spec says).
    static func sliceIndices(n: Int, start: Int, end: Int, step: Int) -> [Int] {
        func clamped(_ v: Int, _ lo: Int, _ hi: Int) -> Int {
            let w = v < 0 ? (v < Int.min + n ? lo : v + n) : v
            return min(max(w, lo), hi)
        }
        var out: [Int] = []
        if step > 0 {
            var i = clamped(start, 0, n)
            let e = clamped(end, 0, n)
            while i < e { out.append(i); let (next, o) = i.addingReportingOverflow(step); if o { break }; i = next }
        } else {
            var i = clamped(start, -1, n - 1)
            let e = clamped(end, -1, n - 1)
            while i > e { out.append(i); let (next, o) = i.addingReportingOverflow(step); if o { break }; i = next }
        }
        return out
    }
}
