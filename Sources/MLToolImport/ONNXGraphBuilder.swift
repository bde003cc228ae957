import MLToolCore

/// Turns ONNX nodes, in file order, into IR nodes: tracks every tensor's ONNX shape, folds constant arithmetic, and
/// translates NCHW into the IR's NHWC (weights permuted, axes remapped, transposes around order-dependent reshapes).
struct ONNXGraphBuilder {
    let file: String
    let opset: Int
    /// Constant tensors by name, in ONNX layout.
    var constants: [String: ONNXConstant]
    /// ONNX-layout shapes of the activations (non-constant tensors); -1 marks a dimension known only at run time.
    var shapes: [String: [Int]] = [:]
    var nodes: [Node] = []
    /// Weights in IR layout, by name, and the order they were first stored.
    var weights: [String: (shape: [Int], values: [Float], quant: ONNXConstant.Quant?)] = [:]
    var weightOrder: [String] = []
    /// False once an op mixes the first axis with the others (a reshape that changes it, a transpose or concat
    /// along it): the graph then only runs at the batch size the file declares.
    var batchFree = true
    /// Folded constants computed from a dimension known only at run time (`Shape` of a free dimension, and what
    /// follows from it), by name: the node that made each, to compute it in the graph where it is needed
    /// (`materialize`). Their unknown values are NaN.
    var runTime: [String: ONNXFile.Node] = [:]
    /// The graph value computing each run-time constant already materialized.
    var materialized: [String: String] = [:]
    /// While an If branch (or loop body) converts: its names → the graph's tensor names (`ONNXGraphBuilder+Control`).
    var scope: [String: String] = [:]
    /// TensorProto element types of the graph inputs the file types: integer ops whose result depends on the width
    /// or on being integers (BitShift, Bitwise*, Div) read them.
    var elementTypes: [String: Int32] = [:]
    /// The branch each rank-varying If takes in this conversion, in the order they are met, and where the
    /// conversion stood at each (`ONNXGraphBuilder+Variants`).
    var assumptions: [Bool] = []
    var forks: [Fork] = []
    /// The If branches being inlined whose condition is known only at run time, innermost last.
    var branchPath: [(condition: String, taken: Bool)] = []
    private var usedNames: Set<String>
    private var counter = 0

    init(file: String, opset: Int, constants: [String: ONNXConstant], reservedNames: Set<String>) {
        self.file = file; self.opset = opset; self.constants = constants
        self.usedNames = reservedNames.union(constants.keys)
    }

    // MARK: names and emission

    /// A tensor name not used anywhere in the graph, derived from `base`.
    mutating func fresh(_ base: String) -> String {
        var name = base
        while usedNames.contains(name) { counter += 1; name = "\(base).\(counter)" }
        usedNames.insert(name)
        return name
    }

    mutating func emit(_ name: String, _ op: Op, _ inputs: [String], _ output: String, _ attrs: Attributes = Attributes()) {
        nodes.append(Node(name: name, op: op, inputs: inputs, outputs: [output], attributes: attrs))
    }

    /// Stores a weight (already in IR layout) under a fresh name derived from `base` and returns that name.
    mutating func addWeight(_ base: String, shape: [Int], values: [Float], quant: ONNXConstant.Quant? = nil) -> String {
        let name = weights[base] == nil && !usedNames.contains(base) ? base : fresh(base)
        usedNames.insert(name)
        weights[name] = (shape, values, quant)
        weightOrder.append(name)
        return name
    }

    /// Stores constant `c` (already in IR layout) as a weight, int8 when it came from a DequantizeLinear.
    mutating func addWeight(_ base: String, _ c: ONNXConstant) -> String {
        addWeight(base, shape: c.shape, values: c.floats, quant: c.quant)
    }

    // MARK: inputs

    func isConstant(_ name: String) -> Bool { constants[name] != nil }

    func constant(_ node: ONNXFile.Node, _ index: Int, what: String) throws -> ONNXConstant {
        guard index < node.inputs.count, !node.inputs[index].isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "input \(index) (\(what))", actual: "none")
        }
        guard let c = constants[node.inputs[index]] else {
            throw ImportError.invalid(file: file, place: place(node), expected: "\(what) as a constant (initializer)",
                                      actual: "computed tensor '\(node.inputs[index])'")
        }
        return c
    }

    func optionalConstant(_ node: ONNXFile.Node, _ index: Int, what: String) throws -> ONNXConstant? {
        guard index < node.inputs.count, !node.inputs[index].isEmpty else { return nil }
        return try constant(node, index, what: what)
    }

    /// The ONNX shape of any tensor (activation or constant).
    func shape(of name: String, in node: ONNXFile.Node) throws -> [Int] {
        if let s = shapes[name] { return s }
        if let c = constants[name] { return c.shape }
        throw ImportError.invalid(file: file, place: place(node), expected: "input '\(name)' defined before use",
                                  actual: "undefined tensor")
    }

    /// The activation at input `index` with its ONNX shape; constants are refused (the op needs a computed input).
    func activation(_ node: ONNXFile.Node, _ index: Int = 0) throws -> (name: String, shape: [Int]) {
        guard index < node.inputs.count, !node.inputs[index].isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "input \(index)", actual: "none")
        }
        let name = node.inputs[index]
        guard let s = shapes[name] else {
            if constants[name] != nil {
                throw ImportError.invalid(file: file, place: place(node), expected: "input \(index) computed by the graph",
                                          actual: "constant '\(name)'")
            }
            throw ImportError.invalid(file: file, place: place(node), expected: "input '\(name)' defined before use",
                                      actual: "undefined tensor")
        }
        return (name, s)
    }

    /// An input of an op whose output has rank `rank`, as an IR tensor name: activations as they are, constants
    /// stored as weights (left-padded with 1s to `rank`, then NCHW → NHWC when rank is 4).
    mutating func operand(_ node: ONNXFile.Node, _ index: Int, rank: Int) throws -> String {
        let name = node.inputs[index]
        if shapes[name] != nil { return name }
        guard var c = constants[name] else { _ = try shape(of: name, in: node); return name }
        if rank == 4 { c = c.leftPadded(to: 4).transposed(Layout.toNHWC) }
        return addWeight(name, c)
    }

    // MARK: attributes

    func place(_ node: ONNXFile.Node) -> String { node.label ?? "node '\(node.name)' (\(node.opType))" }

    func int(_ node: ONNXFile.Node, _ key: String, _ fallback: Int) -> Int { node.attributes[key]?.i ?? fallback }
    func float(_ node: ONNXFile.Node, _ key: String, _ fallback: Float) -> Float { node.attributes[key]?.f ?? fallback }
    func ints(_ node: ONNXFile.Node, _ key: String) -> [Int]? {
        guard let a = node.attributes[key] else { return nil }
        return a.ints
    }
    func string(_ node: ONNXFile.Node, _ key: String, _ fallback: String) -> String {
        node.attributes[key]?.s ?? fallback
    }

    /// `axis` made non-negative for a tensor of `rank`, or an error naming the node.
    func normalize(_ axis: Int, rank: Int, _ node: ONNXFile.Node) throws -> Int {
        // Every caller indexes the shape with it: a scalar (rank 0) has no axis at all.
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0, a < rank else {
            throw ImportError.invalid(file: file, place: "\(place(node)) axis",
                                      expected: rank == 0 ? "an input of rank ≥ 1 (it is a scalar: no axis)" : "-\(rank)..<\(rank)",
                                      actual: "\(axis)")
        }
        return a
    }

    // MARK: layout-aware reshape

    /// Emits the IR for "reinterpret `input` (ONNX shape `from`) with ONNX shape `to`" under the name `output`: the
    /// data order is ONNX's row-major NCHW order, so rank-4 tensors whose NCHW and NHWC orders differ go through a
    /// transpose on the way in and/or out. `to` may hold one -1 (inferred), and one more as its first dimension
    /// with `keepingFirst` (the input's first, copied: Flatten at axis 1).
    mutating func emitReshape(_ nodeName: String, input: String, from: [Int], to: [Int], output: String, keepingFirst: Bool = false) throws {
        guard to.dropFirst(keepingFirst ? 1 : 0).filter({ $0 < 0 }).count <= 1 else {
            throw ImportError.invalid(file: file, place: "node '\(nodeName)'", expected: "a shape with at most one dimension unknown before run time",
                                      actual: "\(to.map { $0 < 0 ? "?" : String($0) })")
        }
        // The first axis is the batch: when the reshape keeps it, write 0 ("copy the input's") so that any batch runs.
        var target = to
        if let f = from.first, let t = to.first, f >= 0, t >= 0 {
            if f == t { target[0] = 0 } else { batchFree = false }
        }
        if keepingFirst && !target.isEmpty { target[0] = 0 }
        if from.isEmpty || to.isEmpty { batchFree = false }
        for i in target.indices where to[i] == 0 && (i >= from.count || from[i] != 0) {
            // A real zero-size axis (Reshape allowzero): the IR reads 0 as "copy the input's", so let it be inferred.
            guard !target.contains(-1) else {
                throw ImportError.invalid(file: file, place: "node '\(nodeName)'", expected: "at most one zero-size or unknown dimension",
                                          actual: "\(to)")
            }
            target[i] = -1
        }
        var src = input
        if from.count == 4 && !Layout.orderFree(from) {
            let t = fresh("\(input).nchw")
            emit("\(nodeName).to_nchw", .transpose, [input], t, Attributes(perm: Layout.toNCHW))
            src = t
        }
        if to.count == 4 && !Layout.orderFree(to) {
            let mid = fresh("\(output).nchw")
            emit(nodeName, .reshape, [src], mid, Attributes(shape: target))
            emit("\(nodeName).to_nhwc", .transpose, [mid], output, Attributes(perm: Layout.toNHWC))
        } else {
            emit(nodeName, .reshape, [src], output, Attributes(shape: Layout.irShape(target)))
        }
        shapes[output] = to
    }

    // MARK: shape helpers

    /// numpy broadcasting of two ONNX shapes (-1 unknown: taken to equal the other side).
    func broadcast(_ a: [Int], _ b: [Int], _ node: ONNXFile.Node) throws -> [Int] {
        let r = max(a.count, b.count)
        let pa = [Int](repeating: 1, count: r - a.count) + a, pb = [Int](repeating: 1, count: r - b.count) + b
        return try (0..<r).map { i in
            let x = pa[i], y = pb[i]
            if x == y { return x }
            if x == 1 { return y }
            if y == 1 { return x }
            if x < 0 { return y }
            if y < 0 { return x }
            throw ImportError.invalid(file: file, place: place(node), expected: "broadcastable shapes",
                                      actual: "\(a) and \(b)")
        }
    }

    /// The product of `dims`, or -1 when one of them is unknown (Int.max if it overflows: never a valid size).
    static func product(_ dims: ArraySlice<Int>) -> Int {
        if dims.contains(where: { $0 < 0 }) { return -1 }
        var n = 1
        for d in dims {
            let (r, o) = n.multipliedReportingOverflow(by: d)
            if o { return Int.max }
            n = r
        }
        return n
    }

    /// The product of the known (≥ 0) dims of `dims`, or an error naming the node when it overflows.
    func knownCount(_ dims: [Int], _ node: ONNXFile.Node) throws -> Int {
        let n = Self.product(ArraySlice(dims.filter { $0 >= 0 }))
        guard n != Int.max else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a shape whose size fits in memory", actual: "\(dims)")
        }
        return n
    }

    /// An ints attribute of `count` values in `range` (window sizes, strides, pads), or `fallback` when absent.
    func boundedInts(_ node: ONNXFile.Node, _ key: String, count: Int, range: ClosedRange<Int>, _ fallback: [Int]) throws -> [Int] {
        guard let v = ints(node, key) else { return fallback }
        guard v.count == count, v.allSatisfy(range.contains) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) \(key)", expected: "\(count) values in \(range.lowerBound)…\(range.upperBound)",
                                      actual: "\(v)")
        }
        return v
    }

    /// Largest kernel, stride, dilation or pad accepted from a file.
    static let maxWindow = 1 << 20
}
