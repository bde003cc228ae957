import MLToolCore

/// What transformer encoders' exports need beyond the ops of their layers (issue 48, items 4 and 5).
extension ONNXGraphBuilder {
    /// Slice whose ends are known only at run time: `position_ids[:, :seq]`, a constant buffer sliced to the
    /// sequence length (Shape → Gather → Unsqueeze → Slice in a TorchScript export). The data is computed or
    /// constant, the starts, axes and steps constants; the ends are a plan-time value that the IR slice reads as its
    /// second input (docs/FORMAT.md), resolved per set of input shapes as ONNX Slice's bounds are.
    mutating func sliceToRunTimeEnds(_ node: ONNXFile.Node) throws {
        guard opset >= 10, let out = node.outputs.first, !out.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "opset ≥ 10 (bounds as inputs) and an output",
                                      actual: "opset \(opset), outputs \(node.outputs)")
        }
        let shape = try shape(of: node.inputs[0], in: node)
        let r = shape.count
        let starts = try constant(node, 1, what: "starts").ints
        let ends = try constant(node, 2, what: "ends").ints
        let axes = try optionalConstant(node, 3, what: "axes")?.ints ?? (0..<starts.count).map { $0 }
        let steps = try optionalConstant(node, 4, what: "steps")?.ints ?? [Int?](repeating: 1, count: starts.count)
        guard ends.count == starts.count, axes.count == starts.count, steps.count == starts.count,
              starts.allSatisfy({ $0 != nil }), axes.allSatisfy({ $0 != nil }), steps.allSatisfy({ $0 != nil && $0 != 0 }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "constant starts, axes and non-zero steps, one per end",
                                      actual: "starts \(starts), ends \(ends), axes \(axes), steps \(steps)")
        }
        let axisList = try axes.map { try normalize($0 ?? 0, rank: r, node) }
        guard Set(axisList).count == axisList.count else {
            throw ImportError.invalid(file: file, place: "\(place(node)) axes", expected: "distinct axes", actual: "\(axes)")
        }
        let x = try operand(node, 0, rank: r)
        var attrs = Attributes(axes: axisList.map { Layout.irAxis($0, rank: r) }, starts: starts.map { $0 ?? 0 },
                               steps: steps.map { $0 ?? 1 })
        // Placeholders: the second input gives the ends.
        attrs.ends = [Int](repeating: Int(Int32.max), count: axisList.count)
        emit(node.name, .slice, [x, try materialize(node.inputs[2])], out, attrs)
        var outShape = shape
        for (k, a) in axisList.enumerated() {
            if let e = ends[k], let s = starts[k], let st = steps[k], shape[a] >= 0 {
                outShape[a] = Self.sliceIndices(n: shape[a], start: s, end: e, step: st).count
            } else {
                outShape[a] = -1
            }
        }
        if axisList.contains(0) { batchFree = false }
        shapes[out] = outShape
    }

    /// Gather of one constant index along an axis known only at run time: the [CLS] row `x[:, 0]` of a sequence
    /// (or the last, −1). A slice of one element (ONNX bounds, resolved per input size: an index past the axis
    /// gives an empty slice, which the reshape after it refuses), then a reshape that drops the axis when the index
    /// is a scalar.
    mutating func gatherOneFromFreeAxis(_ node: ONNXFile.Node, _ x: (name: String, shape: [Int]), axis: Int, index: ONNXConstant) throws {
        guard let out = node.outputs.first, !out.isEmpty, let i = index.ints.first ?? nil else {
            throw ImportError.invalid(file: file, place: "\(place(node)) indices", expected: "a known index and an output", actual: "\(index.values)")
        }
        let end = i == -1 ? Int(Int32.max) : i + 1
        let taken = fresh("\(out).taken")
        emitRunTimeSlice(node.name, x, [(axis, i, end, 1)], output: taken)
        var takenShape = x.shape
        takenShape[axis] = 1
        shapes[taken] = takenShape
        let final = Array(x.shape[..<axis]) + index.shape + Array(x.shape[(axis + 1)...])
        try emitReshape("\(node.name).shape", input: taken, from: takenShape, to: final, output: out)
    }
}
