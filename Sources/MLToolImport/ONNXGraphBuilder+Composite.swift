import MLToolCore

/// ONNX ops the importer expands into ops it already converts, where the expansion computes what the op defines
/// (in float32, like every op): Shrink, Trilu, CastLike, CumSum, RMSNormalization, LpNormalization,
/// MeanVarianceNormalization, LpPool, LRN (and, below, CumProd, Compress, ReverseSequence). Each step is an ONNX node named after the op's node, converted at once as if
/// the file held it; the constants a step needs (masks, triangular matrices, window weights) are made here from the
/// op's attributes and constant inputs. Steps that multiply by a 0/1 matrix (CumSum, LRN's window sum) turn an
/// infinite input into NaN where the op itself would give ±∞.
extension ONNXGraphBuilder {
    /// Most entries a constant made for an expansion may hold (a mask, an index table, an n×n matrix).
    static let maxExpansionConstant = 1 << 24

    /// Converts one ONNX node of `node`'s expansion and returns its output (`output`, or a fresh name).
    @discardableResult
    mutating func step(_ node: ONNXFile.Node, _ op: String, _ inputs: [String], output: String? = nil,
                       _ attributes: [ONNXFile.Attribute] = []) throws -> String {
        let out = output ?? fresh("\(node.outputs.first ?? node.name).\(op.lowercased())")
        var attrs: [String: ONNXFile.Attribute] = [:]
        for a in attributes { attrs[a.name] = a }
        try convert(ONNXFile.Node(name: fresh("\(node.name).\(op.lowercased())"), opType: op, domain: "", inputs: inputs,
                                  outputs: [out], attributes: attrs))
        return out
    }

    /// A constant of `node`'s expansion (ONNX layout) under a fresh name.
    mutating func expansionConstant(_ node: ONNXFile.Node, _ what: String, shape: [Int], values: [Double],
                                    integer: Bool = false) -> String {
        let name = fresh("\(node.name).\(what)")
        constants[name] = ONNXConstant(shape: shape, values: values, isInteger: integer)
        return name
    }

    mutating func scalarConstant(_ node: ONNXFile.Node, _ what: String, _ value: Float) -> String {
        expansionConstant(node, what, shape: [], values: [Double(value)])
    }

    /// The entry count of a constant of `shape` made for `node`, or an error when it overflows or exceeds
    /// `maxExpansionConstant` (the shapes come from the file).
    func expansionCount(_ node: ONNXFile.Node, _ shape: [Int], what: String) throws -> Int {
        var count = 1
        for d in shape {
            let (p, overflow) = count.multipliedReportingOverflow(by: max(d, 0))
            guard d >= 0, !overflow, p <= Self.maxExpansionConstant else {
                throw ImportError.invalid(file: file, place: "\(place(node)) \(what)",
                                          expected: "known dimensions with at most \(Self.maxExpansionConstant) entries", actual: "\(shape)")
            }
            count = p
        }
        return count
    }

    /// A reduction step over `axes` keeping them: the axes as an attribute or an input, as the file's opset has it.
    mutating func reduceStep(_ node: ONNXFile.Node, _ op: String, _ x: String, axes: [Int]) throws -> String {
        let keep = ONNXFile.Attribute(name: "keepdims", type: 2, i: 1)
        if opset >= (op == "ReduceSum" ? 13 : 18) {
            let a = expansionConstant(node, "axes", shape: [axes.count], values: axes.map(Double.init), integer: true)
            return try step(node, op, [x, a], [keep])
        }
        return try step(node, op, [x], [keep, ONNXFile.Attribute(name: "axes", type: 7, ints: axes)])
    }

    /// A single integer from constant input `index` (Trilu's k, CumSum's axis), or nil when the input is absent.
    func scalarInt(_ node: ONNXFile.Node, _ index: Int, what: String) throws -> Int? {
        guard let c = try optionalConstant(node, index, what: what) else { return nil }
        guard c.values.count == 1, let v = c.ints[0] else {
            throw ImportError.invalid(file: file, place: "\(place(node)) \(what)", expected: "one integer", actual: "\(c.values)")
        }
        return v
    }

    // MARK: elementwise

    /// Shrink (opset 9): x + bias below -lambd, x - bias above lambd, 0 between.
    mutating func shrink(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let (lambd, bias) = (float(node, "lambd", 0.5), float(node, "bias", 0))
        let out = try outputName(node)
        let low = try step(node, "Less", [x.name, scalarConstant(node, "-lambd", -lambd)])
        let high = try step(node, "Greater", [x.name, scalarConstant(node, "lambd", lambd)])
        let plus = try step(node, "Add", [x.name, scalarConstant(node, "bias", bias)])
        let minus = try step(node, "Sub", [x.name, scalarConstant(node, "bias", bias)])
        let upper = try step(node, "Where", [high, minus, scalarConstant(node, "zero", 0)])
        try step(node, "Where", [low, plus, upper], output: out)
    }

    /// Trilu (opset 14): keeps the upper (`upper` 1, the default) or lower triangle of the last two axes from
    /// diagonal k (input 1, default 0), zeros elsewhere: a Where against a constant mask.
    mutating func trilu(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        guard x.shape.count >= 2 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an input of rank ≥ 2", actual: "\(x.shape)")
        }
        let (rows, cols) = (x.shape[x.shape.count - 2], x.shape[x.shape.count - 1])
        let count = try expansionCount(node, [rows, cols], what: "last two axes")
        let k = try scalarInt(node, 1, what: "k") ?? 0
        let upper = int(node, "upper", 1) != 0
        var mask = [Double](repeating: 0, count: count)
        for i in 0..<rows {
            for j in 0..<cols where upper ? j - i >= k : j - i <= k { mask[i * cols + j] = 1 }
        }
        let m = expansionConstant(node, "mask", shape: [rows, cols], values: mask, integer: true)
        try step(node, "Where", [m, x.name, scalarConstant(node, "zero", 0)], output: outputName(node))
    }

    /// CastLike (opset 15): Cast to the element type of input 1, which must be a constant (its type is read from the
    /// file).
    mutating func castLike(_ node: ONNXFile.Node) throws {
        let target = try constant(node, 1, what: "target_type")
        guard target.dataType != 0 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) target_type", expected: "a tensor read from the file (its element type)",
                                      actual: "a folded constant")
        }
        var cast = node
        cast.inputs = [node.inputs[0]]
        cast.attributes = ["to": ONNXFile.Attribute(name: "to", type: 2, i: Int(target.dataType))]
        try self.cast(cast)
    }

    // MARK: along an axis

    /// CumSum's and CumProd's input and their constant axis (input 1), made non-negative.
    func cumulativeInput(_ node: ONNXFile.Node) throws -> (x: (name: String, shape: [Int]), axis: Int) {
        let x = try activation(node)
        guard let a = try scalarInt(node, 1, what: "axis") else {
            throw ImportError.invalid(file: file, place: place(node), expected: "input 1 (axis)", actual: "none")
        }
        return (x, try normalize(a, rank: x.shape.count, node))
    }

    /// CumSum (opset 11, 14): along constant `axis` (input 1), `exclusive` and `reverse` attributes, as a MatMul of the
    /// input (that axis moved last) by a constant 0/1 triangular matrix.
    mutating func cumSum(_ node: ONNXFile.Node) throws {
        let (x, axis) = try cumulativeInput(node)
        let r = x.shape.count
        let n = x.shape[axis]
        _ = try expansionCount(node, [n, n], what: "axis \(axis)")
        let (exclusive, reverse) = (int(node, "exclusive", 0) != 0, int(node, "reverse", 0) != 0)
        // y[j] = Σ_i x[i]·u[i][j]: i up to j (from j when reversed), j itself only when inclusive.
        var u = [Double](repeating: 0, count: n * n)
        for i in 0..<n {
            for j in 0..<n where reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j) { u[i * n + j] = 1 }
        }
        let triangle = expansionConstant(node, "triangle", shape: [n, n], values: u)
        let out = try outputName(node)
        if axis == r - 1 {
            try step(node, "MatMul", [x.name, triangle], output: out)
            return
        }
        let perm = (0..<r).filter { $0 != axis } + [axis]
        var inverse = [Int](repeating: 0, count: r)
        for (i, p) in perm.enumerated() { inverse[p] = i }
        let last = try step(node, "Transpose", [x.name], [ONNXFile.Attribute(name: "perm", type: 7, ints: perm)])
        let summed = try step(node, "MatMul", [last, triangle])
        try step(node, "Transpose", [summed], output: out, [ONNXFile.Attribute(name: "perm", type: 7, ints: inverse)])
    }

    // MARK: normalization

    /// RMSNormalization (opset 23): x / sqrt(mean(x², axes axis…rank-1) + epsilon) · scale (input 1).
    mutating func rmsNormalization(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let r = x.shape.count
        let axis = try normalize(int(node, "axis", -1), rank: r, node)
        guard node.inputs.count > 1, !node.inputs[1].isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "input 1 (scale)", actual: "none")
        }
        let square = try step(node, "Mul", [x.name, x.name])
        let mean = try reduceStep(node, "ReduceMean", square, axes: Array(axis..<r))
        let shifted = try step(node, "Add", [mean, scalarConstant(node, "epsilon", float(node, "epsilon", 1e-5))])
        let normalized = try step(node, "Div", [x.name, step(node, "Sqrt", [shifted])])
        try step(node, "Mul", [normalized, node.inputs[1]], output: outputName(node))
    }

    /// LpNormalization (opset 1, 22): x divided by its L1 (`p` 1) or L2 (`p` 2, the default) norm along `axis`
    /// (default -1); 0 where the norm is 0.
    mutating func lpNormalization(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let axis = try normalize(int(node, "axis", -1), rank: x.shape.count, node)
        let p = int(node, "p", 2)
        guard p == 1 || p == 2 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) p", expected: "1 or 2", actual: "\(p)")
        }
        let norm = try reduceStep(node, p == 1 ? "ReduceL1" : "ReduceL2", x.name, axes: [axis])
        let zero = scalarConstant(node, "zero", 0)
        let isZero = try step(node, "Equal", [norm, zero])
        let divided = try step(node, "Div", [x.name, norm])
        try step(node, "Where", [isZero, zero, divided], output: outputName(node))
    }

    /// MeanVarianceNormalization (opset 9, 13): (x - mean) / (sqrt(mean(x²) - mean²) + 1e-9) over `axes` (default
    /// 0, 2, 3), the ONNX function body's steps.
    mutating func meanVarianceNormalization(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let axes = try (ints(node, "axes") ?? [0, 2, 3]).map { try normalize($0, rank: x.shape.count, node) }
        let mean = try reduceStep(node, "ReduceMean", x.name, axes: axes)
        let meanOfSquare = try reduceStep(node, "ReduceMean", step(node, "Mul", [x.name, x.name]), axes: axes)
        let variance = try step(node, "Sub", [meanOfSquare, step(node, "Mul", [mean, mean])])
        let deviation = try step(node, "Add", [step(node, "Sqrt", [variance]), scalarConstant(node, "epsilon", 1e-9)])
        try step(node, "Div", [step(node, "Sub", [x.name, mean]), deviation], output: outputName(node))
    }

    /// LRN (opset 1, 13): x / (bias + alpha/size · Σ x²)^beta, the sum over the `size` channels around each one
    /// (floor((size-1)/2) before, ceil((size-1)/2) after), as a 1×1 Conv of x² by a constant band matrix.
    mutating func lrn(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        guard x.shape.count >= 3, x.shape[1] >= 0 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an input (N, C, …) with known C", actual: "\(x.shape)")
        }
        guard let size = node.attributes["size"]?.i, size >= 1 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) size", expected: "an integer ≥ 1",
                                      actual: node.attributes["size"]?.i.map(String.init) ?? "none")
        }
        let c = x.shape[1]
        let count = try expansionCount(node, [c, c], what: "channels")
        let (before, after) = ((size - 1) / 2, size / 2)
        var band = [Double](repeating: 0, count: count)
        for o in 0..<c {
            for i in max(0, o - before)...min(c - 1, o + after) { band[o * c + i] = 1 }
        }
        let spatial = [Int](repeating: 1, count: x.shape.count - 2)
        let w = expansionConstant(node, "band", shape: [c, c] + spatial, values: band)
        let sum = try step(node, "Conv", [step(node, "Mul", [x.name, x.name]), w])
        let scaled = try step(node, "Mul", [sum, scalarConstant(node, "alpha/size", float(node, "alpha", 1e-4) / Float(size))])
        let base = try step(node, "Add", [scaled, scalarConstant(node, "bias", float(node, "bias", 1))])
        let power = try step(node, "Pow", [base, scalarConstant(node, "beta", float(node, "beta", 0.75))])
        try step(node, "Div", [x.name, power], output: outputName(node))
    }

    /// LpPool (opset 2, 11, 18): (Σ_window |x|^p)^(1/p), `p` default 2, as AveragePool of |x|^p counting the padding
    /// (its zeros add nothing) times the window size; the window attributes go to the AveragePool.
    mutating func lpPool(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let p = Float(int(node, "p", 2))
        guard p >= 1 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) p", expected: "an integer ≥ 1", actual: "\(int(node, "p", 2))")
        }
        guard let kernel = ints(node, "kernel_shape"), !kernel.isEmpty, kernel.allSatisfy({ $0 >= 1 && $0 <= Self.maxWindow }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) kernel_shape", expected: "sizes in 1...\(Self.maxWindow)",
                                      actual: "\(ints(node, "kernel_shape") ?? [])")
        }
        let powered = try step(node, "Pow", [step(node, "Abs", [x.name]), scalarConstant(node, "p", p)])
        var attrs = Array(node.attributes.values.filter { $0.name != "p" })
        attrs.append(ONNXFile.Attribute(name: "count_include_pad", type: 2, i: 1))
        let mean = try step(node, "AveragePool", [powered], attrs)
        let sum = try step(node, "Mul", [mean, scalarConstant(node, "window", Float(kernel.reduce(1, *)))])
        try step(node, "Pow", [sum, scalarConstant(node, "1/p", 1 / p)], output: outputName(node))
    }
}

/// CumProd (opset 26), Compress (opset 11) and ReverseSequence (opset 10): CumProd as a chain of products of the
/// input's slices along the constant axis, concatenated; Compress and ReverseSequence, with a constant condition /
/// sequence_lens, as a Gather by a constant table.
extension ONNXGraphBuilder {
    /// Most slices a CumProd chain may take (each is a few nodes).
    static let maxCumProdLength = 1024

    mutating func cumProd(_ node: ONNXFile.Node) throws {
        let (x, axis) = try cumulativeInput(node)
        let n = x.shape[axis]
        guard n >= 1, n <= Self.maxCumProdLength else {
            throw ImportError.invalid(file: file, place: "\(place(node)) axis", expected: "a known length in 1...\(Self.maxCumProdLength)",
                                      actual: "\(n) of \(x.shape)")
        }
        let (exclusive, reverse) = (int(node, "exclusive", 0) != 0, int(node, "reverse", 0) != 0)
        let gatherAxis = ONNXFile.Attribute(name: "axis", type: 2, i: axis)
        var slice = x.shape
        slice[axis] = 1
        let sliceCount = try expansionCount(node, slice, what: "slice")
        // products[j]: the product of the slices before j (exclusive) or up to j, in the scan's order.
        var products = [String](repeating: "", count: n)
        var running: String?
        for k in 0..<n {
            let j = reverse ? n - 1 - k : k
            let s = try step(node, "Gather", [x.name, expansionConstant(node, "at\(j)", shape: [1], values: [Double(j)], integer: true)], [gatherAxis])
            if exclusive {
                products[j] = try running ?? step(node, "Identity", [expansionConstant(node, "ones", shape: slice,
                                                                                       values: [Double](repeating: 1, count: sliceCount))])
                running = try running.map { try step(node, "Mul", [$0, s]) } ?? s
            } else {
                running = try running.map { try step(node, "Mul", [$0, s]) } ?? s
                products[j] = running ?? s
            }
        }
        let out = try outputName(node)
        if n == 1 { try step(node, "Identity", products, output: out); return }
        try step(node, "Concat", products, output: out, [gatherAxis])
    }

    mutating func compress(_ node: ONNXFile.Node) throws {
        let condition = try constant(node, 1, what: "condition")
        let x = try activation(node)
        guard condition.rank == 1 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) condition", expected: "a 1-D condition", actual: "\(condition.shape)")
        }
        let out = try outputName(node)
        if let a = node.attributes["axis"]?.i {
            let axis = try normalize(a, rank: x.shape.count, node)
            guard condition.values.count <= x.shape[axis] else {
                throw ImportError.invalid(file: file, place: "\(place(node)) condition", expected: "at most \(x.shape[axis]) values", actual: "\(condition.values.count)")
            }
            let picked = condition.values.indices.filter { condition.values[$0] != 0 }
            let t = expansionConstant(node, "picked", shape: [picked.count], values: picked.map(Double.init), integer: true)
            try step(node, "Gather", [x.name, t], output: out, [ONNXFile.Attribute(name: "axis", type: 2, i: axis)])
            return
        }
        let flat = try flattened(node, 0, what: "input")
        guard condition.values.count <= Self.product(flat.shape[...]) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) condition", expected: "at most \(Self.product(flat.shape[...])) values",
                                      actual: "\(condition.values.count)")
        }
        let picked = condition.values.indices.filter { condition.values[$0] != 0 }
        _ = try gatherTable(node, flat.name, picked, shape: [picked.count], output: out)
    }

    mutating func reverseSequence(_ node: ONNXFile.Node) throws {
        let lengths = try constant(node, 1, what: "sequence_lens").ints
        let x = try flattened(node, 0, what: "input")
        let r = x.shape.count
        let (batchAxis, timeAxis) = (int(node, "batch_axis", 1), int(node, "time_axis", 0))
        guard r >= 2, Set([batchAxis, timeAxis]) == [0, 1], lengths.count == x.shape[batchAxis],
              lengths.allSatisfy({ ($0 ?? -1) >= 0 && ($0 ?? 0) <= x.shape[timeAxis] }) else {
            throw ImportError.invalid(file: file, place: place(node),
                                      expected: "batch_axis and time_axis 0 and 1, \(x.shape.count >= 2 ? x.shape[batchAxis] : 0) lengths within the time axis",
                                      actual: "\(batchAxis), \(timeAxis), lengths \(lengths.map { $0 ?? -1 }) for \(x.shape)")
        }
        let strides = Self.strides(x.shape)
        let count = Self.product(x.shape[...])
        var table = [Int](repeating: 0, count: count)
        for p in 0..<count {
            let (b, t) = (p / strides[batchAxis] % x.shape[batchAxis], p / strides[timeAxis] % x.shape[timeAxis])
            let length = lengths[b] ?? 0
            table[p] = t < length ? p + (length - 1 - 2 * t) * strides[timeAxis] : p
        }
        _ = try gatherTable(node, x.name, table, shape: x.shape, output: outputName(node))
    }
}
