import CMLToolKernels
import MLToolCore

/// Compiling one node into a `Step`: the node's shape checks, one step per op family (attributes resolved to plain
/// values, weights loaded and packed), then its data inputs and its output.
extension Program {
    mutating func compile(_ node: Node, _ tensors: [String: StoredTensor]) throws -> Step {
        var s = try Self.emptyStep(node)
        try compileAttributes(&s, node, tensors)
        s.inputs = try Self.dataInputs(s, node).map { try use($0, node, tensors) }
        s.output = try defineOutput(node, tensors)
        return s
    }

    /// A step for `node` with only its activation set, once the node has one output and at least one input.
    private static func emptyStep(_ node: Node) throws -> Step {
        guard node.outputs.count == 1 else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "outputs", expected: "1 output", actual: "\(node.outputs.count)")
        }
        guard !node.inputs.isEmpty else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "inputs", expected: "at least 1", actual: "0")
        }
        var s = Step(name: node.name, op: node.op, inputs: [], output: 0)
        guard let act = Act(node.attributes.activation) else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "activation", expected: "an activation op",
                                               actual: node.attributes.activation?.op.rawValue ?? "")
        }
        s.act = act
        return s
    }

    /// The op's attributes and weights into `s`: the ops with weights or many settings each have their own step.
    private func compileAttributes(_ s: inout Step, _ node: Node, _ tensors: [String: StoredTensor]) throws {
        let a = node.attributes
        switch node.op {
        case .conv: try compileConv(&s, node, tensors)
        case .convTranspose: try compileConvTranspose(&s, node, tensors)
        case .layerNorm: try compileLayerNorm(&s, node, tensors)
        case .dense:
            try node.checkInputCount(2...3)
            let wt = try weightTensor(node, 1, rank: 2, tensors)
            s.weightShape = wt.shape
            if node.inputs.count == 3 { s.bias = try bias(node, 2, count: s.weightShape[1], tensors) }
            try gemmWeight(&s, wt, node, k: s.weightShape[0], n: s.weightShape[1], gemm: true)
        case .batchNorm: try compileBatchNorm(&s, node, tensors)
        case .matMul: try compileMatMul(&s, node, tensors)
        case .batchMatMul: try node.checkInputCount(2...2)
        case .relu, .sigmoid, .tanh, .hardSwish, .swish, .identity, .clip, .leakyRelu, .hardSigmoid:
            try node.checkInputCount(1...1)
            s.act = Act(op: node.op, min: a.min, max: a.max, alpha: a.alpha, beta: a.beta)!
        case .softmax: try node.checkInputCount(1...1); s.axis = a.axis ?? -1
        case .add, .sub, .mul, .div, .pow: try node.checkInputCount(2...2)
        case .resize:
            try node.checkInputCount(1...1)
            s.resize = try ResizeSpec(node)
        case .slice: try Self.compileSlice(&s, node)
        case .topK: try Self.compileTopK(&s, node)
        case .maxPool, .avgPool: try Self.compilePool(&s, node)
        case .globalAvgPool, .globalMaxPool: try node.checkInputCount(1...1)
        case .concat: s.axis = try node.required(a.axis, "axis")
        case .reshape:
            try node.checkInputCount(1...2)
            if node.inputs.count == 1 { s.shape = try node.required(a.shape, "shape") }
        case .shape: try node.checkInputCount(1...1); s.perm = a.perm
        case .expand: try node.checkInputCount(2...2)
        case .flatten: try node.checkInputCount(1...1); s.axis = a.axis ?? 1
        case .transpose: try node.checkInputCount(1...1); s.perm = a.perm
        case .squeeze: try node.checkInputCount(1...1); s.axes = a.axes
        case .unsqueeze: try node.checkInputCount(1...1); s.axes = try node.required(a.axes, "axes")
        case .gather: try node.checkInputCount(2...2); s.axis = a.axis ?? 0
        case .pad: try Self.compilePad(&s, node)
        case .unary: try Self.compileUnary(&s, node)
        case .binary:
            try node.checkInputCount(2...2)
            s.binary = try Self.function(BinaryFunction.self, a.mode, node)
        case .reduce:
            try node.checkInputCount(1...1)
            s.reduce = try Self.function(ReduceFunction.self, a.mode, node)
            s.axes = a.axes
        case .argMax: try Self.compileArgMax(&s, node)
        case .where: try node.checkInputCount(3...3)
        case .ifElse: try node.checkInputCount(2...3)
        case .quantize, .dequantize: try node.checkInputCount(1...1); s.linearQuant = try LinearQuant(node)
        case .logSoftmax, .hardmax: try node.checkInputCount(1...1); s.axis = a.axis ?? -1
        case .lstm, .gru, .rnn:
            s.recurrent = try RecurrentSpec(node) { try weight(node, $0, rank: $1, tensors) }
        }
    }

    /// The inputs the step reads as values: conv, dense, batchNorm, convTranspose and layerNorm read only x (their
    /// weights are in the step), a matMul with a packed b only a, a recurrent layer x and its initial states.
    private static func dataInputs(_ s: Step, _ node: Node) -> [String] {
        if let r = s.recurrent { return [node.inputs[0]] + node.inputs.suffix(r.states.count) }
        if node.op == .matMul { return Array(node.inputs.prefix(s.weightShape.isEmpty ? 2 : 1)) }   // the bias in `bias`
        let weighted: [Op] = [.conv, .dense, .batchNorm, .convTranspose, .layerNorm]
        return weighted.contains(node.op) ? Array(node.inputs.prefix(1)) : node.inputs
    }

    /// The id of the node's output, a new name.
    private mutating func defineOutput(_ node: Node, _ tensors: [String: StoredTensor]) throws -> Int {
        // Each value has one producer (docs/FORMAT.md rule 12, checked here too for models that never were a file):
        // an output that is also a graph input, a model tensor or another node's output would share its storage
        // (the plan sizes and frees storage per value, and a fused pair's inner value has none).
        guard ids[node.outputs[0]] == nil, tensors[node.outputs[0]] == nil else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "output '\(node.outputs[0])'",
                                               expected: "a name no graph input, model tensor or other node has",
                                               actual: "a name already in use")
        }
        return define(node.outputs[0])
    }
}

/// The checks every op's compile step shares, with errors naming the node.
extension Node {
    func required<T>(_ v: T?, _ attr: String) throws -> T {
        guard let v else { throw EngineError.missingAttribute(node: name, op: op.rawValue, attribute: attr) }
        return v
    }

    /// Two values (kernel, strides, dilations, output padding) in `minimum…maxExtent`, or the default.
    func pair(_ v: [Int]?, _ attr: String, default d: [Int]?, minimum: Int) throws -> [Int] {
        let v = v ?? d
        guard let v else { throw EngineError.missingAttribute(node: name, op: op.rawValue, attribute: attr) }
        guard v.count == 2, v.allSatisfy({ $0 >= minimum && $0 <= Program.maxExtent }) else {
            throw EngineError.invalidAttribute(node: name, attribute: attr, expected: "2 values in \(minimum)…\(Program.maxExtent)", actual: "\(v)")
        }
        return v
    }

    /// `count` pads (any even count when nil) in `minimum…maxExtent`.
    func pads(_ v: [Int], count: Int?, minimum: Int) throws -> [Int] {
        guard count.map({ v.count == $0 }) ?? true, v.allSatisfy({ $0 >= minimum && $0 <= Program.maxExtent }) else {
            throw EngineError.invalidAttribute(node: name, attribute: "pads", expected: "\(count.map(String.init) ?? "2·rank") values in \(minimum)…\(Program.maxExtent)", actual: "\(v)")
        }
        return v
    }

    func checkInputCount(_ range: ClosedRange<Int>) throws {
        guard range.contains(inputs.count) else {
            throw EngineError.invalidAttribute(node: name, attribute: "inputs", expected: "\(range.lowerBound)…\(range.upperBound) inputs", actual: "\(inputs.count)")
        }
    }

    /// `groups` is at least 1 and divides the `count` channels.
    func checkGroups(_ groups: Int, dividing count: Int, _ channels: String) throws {
        guard groups >= 1, count % groups == 0 else {
            throw EngineError.invalidAttribute(node: name, attribute: "groups", expected: "≥ 1 dividing \(count) \(channels)", actual: "\(groups)")
        }
    }

    /// The kernel the weights give, checked against a `kernel` attribute when there is one.
    func checkKernel(_ kernel: [Int]) throws {
        if let k = attributes.kernel, k != kernel {
            throw EngineError.invalidAttribute(node: name, attribute: "kernel", expected: "\(kernel) (from the weights)", actual: "\(k)")
        }
    }
}

/// One compile step per op family.
extension Program {
    private func compileConv(_ s: inout Step, _ node: Node, _ tensors: [String: StoredTensor]) throws {
        let a = node.attributes
        try node.checkInputCount(2...3)
        let wt = try weightTensor(node, 1, rank: 4, tensors)
        s.weightShape = wt.shape
        s.strides = try node.pair(a.strides, "strides", default: [1, 1], minimum: 1)
        s.dilations = try node.pair(a.dilations, "dilations", default: [1, 1], minimum: 1)
        s.pads = try node.pads(a.pads ?? [0, 0, 0, 0], count: 4, minimum: 0)
        s.autoPad = try Self.autoPad(a, node)
        s.groups = a.groups ?? 1
        let oc = s.weightShape[3]
        try node.checkGroups(s.groups, dividing: oc, "output channels")
        s.kernel = [s.weightShape[0], s.weightShape[1]]
        try node.checkKernel(s.kernel)
        if node.inputs.count == 3 { s.bias = try bias(node, 2, count: oc, tensors) }
        try gemmWeight(&s, wt, node, k: s.weightShape[0] * s.weightShape[1] * s.weightShape[2], n: oc, gemm: s.groups == 1)
        if s.groups > 1, purpose == .fast, int8Minimum != nil, codeReaders.contains(node.name) {
            s.qdepthwise = QuantizedDepthwise(wt)
        }
    }

    private func compileConvTranspose(_ s: inout Step, _ node: Node, _ tensors: [String: StoredTensor]) throws {
        let a = node.attributes
        try node.checkInputCount(2...3)
        let wt = try weightTensor(node, 1, rank: 4, tensors)   // (C, KH, KW, OC/groups)
        s.weightShape = wt.shape
        s.strides = try node.pair(a.strides, "strides", default: [1, 1], minimum: 1)
        s.dilations = try node.pair(a.dilations, "dilations", default: [1, 1], minimum: 1)
        s.pads = try node.pads(a.pads ?? [0, 0, 0, 0], count: 4, minimum: 0)
        s.outputPadding = try node.pair(a.outputPadding, "outputPadding", default: [0, 0], minimum: 0)
        s.groups = a.groups ?? 1
        let c = wt.shape[0]
        try node.checkGroups(s.groups, dividing: c, "input channels")
        s.kernel = [wt.shape[1], wt.shape[2]]
        try node.checkKernel(s.kernel)
        // Every product of the weight's dimensions fits: the tensor holds them all.
        if node.inputs.count == 3 { s.bias = try bias(node, 2, count: wt.shape[3] &* s.groups, tensors) }
        if purpose != .validate {
            let w = Buffer(try load(wt, node))
            // groups == 1 runs as one GEMM x (H·W, C) · w (C, KH·KW·OC) into columns (`Fast.convTranspose`).
            if purpose == .fast && s.groups == 1 {
                s.packed = Self.pack(w.pointer, k: c, n: wt.shape[1] &* wt.shape[2] &* wt.shape[3])
            } else {
                s.weight = w
            }
        }
    }

    private func compileLayerNorm(_ s: inout Step, _ node: Node, _ tensors: [String: StoredTensor]) throws {
        let a = node.attributes
        try node.checkInputCount(1...3)
        s.axis = a.axis ?? -1
        s.epsilon = a.epsilon ?? 1e-5
        guard s.epsilon >= 0, s.epsilon.isFinite else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "epsilon", expected: "a finite value ≥ 0", actual: "\(s.epsilon)")
        }
        if node.inputs.count >= 2 {
            let (w, shape) = try weight(node, 1, rank: 1, tensors)
            s.weight = w
            s.weightShape = shape
        }
        if node.inputs.count == 3 { s.bias = try bias(node, 2, count: s.weightShape[0], tensors) }
        switch a.mode {
        case nil, "normalized"?: break
        case "mean"?, "invStdDev"?: s.statistic = a.mode
        default:
            throw EngineError.invalidAttribute(node: node.name, attribute: "mode", expected: "normalized, mean or invStdDev", actual: a.mode ?? "")
        }
    }

    /// Scale, bias, mean and variance folded into one scale and one bias per channel.
    private func compileBatchNorm(_ s: inout Step, _ node: Node, _ tensors: [String: StoredTensor]) throws {
        try node.checkInputCount(5...5)
        var p: [[Float]] = []
        for i in 1...4 { p.append(try weight(node, i, rank: 1, tensors).0.array) }
        let c = p[0].count
        guard p.allSatisfy({ $0.count == c }) else {
            throw EngineError.badWeights(node: node.name, tensor: node.inputs[1], reason: "scale, bias, mean and variance differ in length")
        }
        let eps = node.attributes.epsilon ?? 1e-5
        let scale = (0..<c).map { p[0][$0] / (p[3][$0] + eps).squareRoot() }
        s.weight = Buffer(scale)
        s.weightShape = [c]
        s.bias = Buffer((0..<c).map { p[1][$0] - p[2][$0] * scale[$0] })
    }

    private func compileMatMul(_ s: inout Step, _ node: Node, _ tensors: [String: StoredTensor]) throws {
        try node.checkInputCount(2...3)
        // A constant (K, N) b (a transformer's projections) runs as a dense layer's weight: packed once for the
        // GEMM, on the int8 kernels where they take it, every row of a (…, M, K) at once.
        if purpose == .fast, ids[node.inputs[1]] == nil, let wt = tensors[node.inputs[1]], wt.shape.count == 2,
           wt.shape.allSatisfy({ $0 > 0 }), !wt.dtype.traits.isPalette {
            s.weightShape = wt.shape
            try gemmWeight(&s, wt, node, k: wt.shape[0], n: wt.shape[1], gemm: true)
        }
        // A bias (N) rides in the GEMM's epilogue (GraphPasses.fuseMatMulBias); b must then be a constant.
        if node.inputs.count == 3 {
            guard let b = tensors[node.inputs[1]], ids[node.inputs[1]] == nil, b.shape.count == 2 else {
                throw EngineError.badWeights(node: node.name, tensor: node.inputs[1], reason: "a matMul with a bias needs a constant (K, N) b")
            }
            s.bias = try bias(node, 2, count: b.shape[1], tensors)
        }
    }

    /// A slice with ONNX-style bounds (resolved per plan), or with its axes, starts, steps and counts.
    private static func compileSlice(_ s: inout Step, _ node: Node) throws {
        let a = node.attributes
        if a.ends != nil {
            try node.checkInputCount([1, 3].contains(node.inputs.count) ? node.inputs.count...node.inputs.count : 1...1)
            s.bounds = try SliceBound.list(a, node)
            return
        }
        try node.checkInputCount(1...1)
        let axes = try node.required(a.axes, "axes"), starts = try node.required(a.starts, "starts")
        let steps = try node.required(a.steps, "steps"), counts = try node.required(a.counts, "counts")
        guard starts.count == axes.count, steps.count == axes.count, counts.count == axes.count,
              Set(axes).count == axes.count, steps.allSatisfy({ $0 != 0 && abs($0) <= Self.maxExtent }),
              counts.allSatisfy({ $0 >= 0 }), starts.allSatisfy({ $0 >= 0 }) else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "axes/starts/steps/counts",
                                               expected: "one start ≥ 0, non-zero step and count ≥ 0 per distinct axis",
                                               actual: "axes \(axes), starts \(starts), steps \(steps), counts \(counts)")
        }
        s.slices = axes.indices.map { SliceAxis(axis: axes[$0], start: starts[$0], step: steps[$0], count: counts[$0]) }
    }

    private static func compileTopK(_ s: inout Step, _ node: Node) throws {
        let a = node.attributes
        try node.checkInputCount(1...1)
        s.axis = a.axis ?? -1
        s.k = try node.required(a.k, "k")
        s.largest = a.largest ?? true
        guard s.k >= 0 else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "k", expected: "≥ 0", actual: "\(s.k)")
        }
        switch a.mode ?? "values" {
        case "values": s.indicesOut = false
        case "indices": s.indicesOut = true
        default:
            throw EngineError.invalidAttribute(node: node.name, attribute: "mode", expected: "values or indices", actual: a.mode ?? "")
        }
    }

    private static func compilePool(_ s: inout Step, _ node: Node) throws {
        let a = node.attributes
        try node.checkInputCount(1...1)
        s.kernel = try node.pair(a.kernel, "kernel", default: nil, minimum: 1)
        s.strides = try node.pair(a.strides, "strides", default: [1, 1], minimum: 1)
        s.dilations = try node.pair(a.dilations, "dilations", default: [1, 1], minimum: 1)
        s.pads = try node.pads(a.pads ?? [0, 0, 0, 0], count: 4, minimum: 0)
        s.autoPad = try Self.autoPad(a, node)
        s.ceilMode = a.ceilMode ?? false
        s.countIncludePad = a.countIncludePad ?? false
    }

    private static func compilePad(_ s: inout Step, _ node: Node) throws {
        let a = node.attributes
        try node.checkInputCount(1...1)
        s.pads = try node.pads(try node.required(a.pads, "pads"), count: nil, minimum: -Self.maxExtent)
        s.padMode = a.mode ?? "constant"
        s.value = a.value ?? 0
        guard ["constant", "reflect", "edge"].contains(s.padMode) else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "mode", expected: "constant, reflect or edge", actual: s.padMode)
        }
    }

    private static func compileUnary(_ s: inout Step, _ node: Node) throws {
        try node.checkInputCount(1...1)
        s.unary = try Self.function(UnaryFunction.self, node.attributes.mode, node)
        s.alpha = node.attributes.alpha ?? 0
        s.beta = node.attributes.beta ?? 0
    }

    private static func compileArgMax(_ s: inout Step, _ node: Node) throws {
        try node.checkInputCount(1...1)
        s.axis = node.attributes.axis ?? 0
        s.largest = node.attributes.largest ?? true
        s.selectLast = node.attributes.selectLastIndex ?? false
    }

    /// The function named by a node's `mode` in one of the function tables (`UnaryFunction`, `BinaryFunction`, …).
    static func function<F: RawRepresentable & CaseIterable>(_ type: F.Type, _ mode: String?, _ node: Node) throws -> F
        where F.RawValue == String {
        guard let f = F(rawValue: mode ?? "") else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "mode", expected: F.allCases.map(\.rawValue).joined(separator: ", "),
                                               actual: mode ?? "none")
        }
        return f
    }
}
