import MLToolCore

/// Compositions both Core ML readers use for the ops that work along axes, and gelu's three modes.
extension CoreMLGraph {
    /// `onnx` (ReduceSum, ReduceMean, …, or ReduceL1 / ReduceL2, composed) of `x` over `axes` (all when nil).
    /// Means and maxima over two non-batch axes of a rank-4 tensor stay global pooling (its fast kernel).
    mutating func reduce(_ onnx: String, _ x: String, axes listed: [Int]?, keepDims: Bool, _ out: String) throws {
        let s = try need(x)
        let axes = (listed ?? Array(s.indices)).map { $0 < 0 ? $0 + s.count : $0 }
        guard axes.allSatisfy({ s.indices.contains($0) }), Set(axes).count == axes.count else {
            throw invalid("axes", expected: "distinct axes of \(s)", actual: "\(listed ?? [])")
        }
        if ["ReduceMean", "ReduceMax"].contains(onnx), s.count == 4, axes.count == 2, !axes.contains(0) {
            return try spatialReduce(onnx == "ReduceMean" ? "GlobalAveragePool" : "GlobalMaxPool", x, axes: Set(axes), keepDims: keepDims,
                                     out, what: "a reduction")
        }
        let keep = ["keepdims": Self.int(keepDims ? 1 : 0)]
        let withAxes = keep.merging(["axes": Self.ints(axes)]) { a, _ in a }
        switch onnx {
        case "ReduceSum": try op(onnx, [x, ints(out + ".axes", axes)], out, keep)
        case "ReduceL1":
            let magnitude = fresh(out + ".abs")
            try op("Abs", [x], magnitude)
            try op("ReduceSum", [magnitude, ints(out + ".axes", axes)], out, keep)
        case "ReduceL2":
            let squares = fresh(out + ".sumsquare")
            try op("ReduceSumSquare", [x], squares, withAxes)
            try op("Sqrt", [squares], out)
        default: try op(onnx, [x], out, withAxes)
        }
    }

    /// The values given a new axis `axis` (of the result's rank) each, then concatenated along it.
    mutating func stack(_ values: [String], axis given: Int, _ out: String) throws {
        guard let first = values.first else { throw invalid("values", expected: "at least one tensor", actual: "none") }
        let rank = try need(first).count
        let axis = given < 0 ? given + rank + 1 : given
        guard (0...rank).contains(axis) else { throw invalid("axis", expected: "-\(rank + 1)…\(rank)", actual: "\(given)") }
        let lifted = try values.map { v -> String in
            let u = fresh(out + ".item")
            try op("Unsqueeze", [v, ints(u + ".axes", [axis])], u)
            return u
        }
        try op("Concat", lifted, out, ["axis": Self.int(axis)])
    }

    /// gelu: "EXACT" (erf), "TANH_APPROXIMATION", or "SIGMOID_APPROXIMATION" x · σ(1.702 x).
    mutating func gelu(_ x: String, mode: String, _ out: String) throws {
        switch mode {
        case "EXACT": try op("Gelu", [x], out)
        case "TANH_APPROXIMATION": try op("Gelu", [x], out, ["approximate": Self.string("tanh")])
        case "SIGMOID_APPROXIMATION":
            let scaled = fresh(out + ".scaled"), gate = fresh(out + ".gate")
            try op("Mul", [x, scalar(out + ".k", 1.702)], scaled)
            try op("Sigmoid", [scaled], gate)
            try op("Mul", [x, gate], out)
        default: throw invalid("mode", expected: "EXACT, TANH_APPROXIMATION or SIGMOID_APPROXIMATION", actual: mode)
        }
    }

    /// x split along `axis` (its size known) into `outputs`: by `sizes`, or into equal parts when `sizes` is empty.
    mutating func split(_ x: String, axis given: Int, sizes listed: [Int], _ outputs: [String]) throws {
        let s = try need(x)
        let axis = given < 0 ? given + s.count : given
        guard s.indices.contains(axis), s[axis] >= 0, !outputs.isEmpty else {
            throw refused("a split along axis \(given) of \(s) (the axis' size must be known)")
        }
        var sizes = listed
        if sizes.isEmpty {
            guard s[axis] % outputs.count == 0 else { throw invalid("", expected: "\(outputs.count) equal parts of \(s[axis])", actual: "a remainder") }
            sizes = [Int](repeating: s[axis] / outputs.count, count: outputs.count)
        }
        guard sizes.count == outputs.count, sizes.allSatisfy({ $0 >= 0 }), sizes.reduce(0, +) == s[axis] else {
            throw invalid("split sizes", expected: "\(outputs.count) sizes adding up to \(s[axis])", actual: "\(sizes)")
        }
        var start = 0
        for (name, size) in zip(outputs, sizes) {
            try op("Slice", [x, ints(name + ".starts", [start]), ints(name + ".ends", [start + size]), ints(name + ".axes", [axis])], name)
            start += size
        }
    }

    /// x transposed over its last two axes (a batched matmul's transposed operand).
    mutating func transposedLastTwo(_ x: String, _ out: String) throws -> String {
        let r = try need(x).count
        guard r >= 2 else { throw invalid("", expected: "rank ≥ 2 to transpose", actual: "rank \(r)") }
        let t = fresh(out)
        try op("Transpose", [x], t, ["perm": Self.ints(Array(0..<(r - 2)) + [r - 1, r - 2])])
        return t
    }
}

/// A strided slice per axis (MIL's slice_by_index, the NeuralNetwork's sliceStatic): a set begin / end mask takes
/// the axis from its start / to its end, a squeeze mask takes the one element at `begin` and drops the axis.
struct CoreMLSlice {
    var begin: [Int], end: [Int], stride: [Int]
    var beginMask: [Bool], endMask: [Bool], squeeze: [Bool]
}

extension CoreMLGraph {
    /// An ONNX Slice over the axes `s` narrows, then a Squeeze of the squeezed ones.
    mutating func slice(_ x: String, _ s: CoreMLSlice, _ out: String) throws {
        let r = try need(x).count
        let past = CoreMLProgramReader.past
        guard [s.begin.count, s.end.count, s.stride.count, s.beginMask.count, s.endMask.count, s.squeeze.count].allSatisfy({ $0 == r }),
              !s.stride.contains(0) else {
            throw invalid("", expected: "begin, end, stride and masks of \(r) values (stride ≠ 0)", actual: "\(s.begin), \(s.end), \(s.stride)")
        }
        var starts: [Int] = [], ends: [Int] = [], axes: [Int] = [], steps: [Int] = []
        for k in 0..<r {
            var (b, e, step) = (s.begin[k], s.end[k], s.stride[k])
            if s.squeeze[k] { (e, step) = (b == -1 ? past : b + 1, 1) }
            else {
                if s.beginMask[k] { b = step > 0 ? 0 : past }
                if s.endMask[k] { e = step > 0 ? past : -past }
            }
            if b == 0 && e == past && step == 1 { continue }
            starts.append(b); ends.append(e); axes.append(k); steps.append(step)
        }
        let squeezed = (0..<r).filter { s.squeeze[$0] }
        let sliced = squeezed.isEmpty ? out : fresh(out + ".sliced")
        if axes.isEmpty { try op("Identity", [x], sliced) }
        else {
            try op("Slice", [x, ints(out + ".starts", starts), ints(out + ".ends", ends), ints(out + ".axes", axes), ints(out + ".steps", steps)], sliced)
        }
        if !squeezed.isEmpty { try op("Squeeze", [sliced, ints(out + ".squeezed", squeezed)], out) }
    }
}
