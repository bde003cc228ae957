import Foundation
import MLToolCore

/// Lowers a model's NHWC IR graph to an ONNX graph that is NCHW throughout.
///
/// Every rank-4 tensor of the ONNX graph is the NCHW transpose of the IR tensor of the same name; tensors of other
/// ranks are identical. Conv kernels become OIHW, constants broadcast against rank-4 tensors are laid out NCHW, and
/// ops whose element order depends on layout (reshape, flatten, dense over a feature map, …) run between a pair of
/// transposes. int8 weights stay int8 behind a DequantizeLinear (per axis); palettized and f16 weights are stored as
/// float32 and listed in `notes`.
struct ONNXLowering {
    let modelName: String
    let graph: Graph
    let tensors: [String: StoredTensor]
    let labelCount: Int
    var program = ONNXProgram()
    private(set) var notes: [String] = []
    /// How many weights stayed int8 behind a DequantizeLinear.
    private(set) var int8Weights = 0
    /// Rank of every activation computed so far.
    var rank: [String: Int] = [:]
    private var emittedConstants: [String: String] = [:]
    private var counter = 0

    init(model: Model, name: String, graph: Graph) {
        self.modelName = name
        self.graph = graph
        self.tensors = model.tensorsByName
        self.labelCount = model.metadata.labels.count
    }

    // MARK: Graph

    /// Lowers the whole graph; the image input is named `image` (NCHW).
    mutating func lower() throws {
        for (i, input) in graph.inputs.enumerated() {
            let r = input.shape.count
            var dims = input.shape
            if r == 4 { dims = WeightLayout.permuted(dims, WeightLayout.nhwcToNCHW) }
            let name = i == 0 ? "image" : input.name
            program.inputs.append(.init(name: name, dims: dims))
            if name != input.name { add("Identity", [name], [input.name], node: "input") }
            rank[input.name] = r
        }
        for node in graph.nodes { try lower(node) }
        for o in graph.outputs {
            guard let r = rank[o] else {
                throw ExportError.invalid(model: modelName, place: "graph output '\(o)'", expected: "a tensor computed by the graph",
                                          actual: "undefined")
            }
            var dims = [-1] + [Int](repeating: -2, count: max(r - 1, 0))
            if r == 2, o == graph.outputs.first, labelCount > 0 { dims[1] = labelCount }
            program.outputs.append(.init(name: o, dims: dims))
        }
    }

    private mutating func lower(_ n: Node) throws {
        let a = n.attributes
        let x = n.inputs.first ?? ""
        let out = n.outputs.first ?? ""
        // Ops that carry a fused activation write to a temporary first.
        let act = a.activation
        let target = act == nil ? out : fresh(out)
        let xr = try rankOf(x, n)
        var outRank = xr
        if n.attributes.sizedAtRunTime(n) {
            throw unsupported(n, "sizes fixed when the model is exported (this node's follow from the input size: import with --input-size)")
        }
        switch n.op {
        case .conv: outRank = try conv(n, x, xr, target)
        case .convTranspose: outRank = try convTranspose(n, x, xr, target)
        case .layerNorm:
            throw unsupported(n, "LayerNormalization (opset 17; this writer emits opset 13)")
        case .batchMatMul: outRank = try batchMatMul(n, x, xr, target)
        case .dense: outRank = try dense(n, x, xr, target)
        case .matMul: outRank = try matMul(n, x, xr, target)
        case .batchNorm:
            guard xr == 2 || xr == 4 else { throw unsupported(n, "rank 2 or 4 (channels last in the IR)") }
            let params = try n.inputs.dropFirst().map { try constant($0) }
            add("BatchNormalization", [x] + params, [target], node: n.name, [("epsilon", .float(a.epsilon ?? 1e-5))])
        case .relu, .clip, .leakyRelu, .sigmoid, .hardSigmoid, .hardSwish, .swish, .tanh, .identity:
            try activation(Activation(op: n.op, min: a.min, max: a.max, alpha: a.alpha, beta: a.beta), x, target, n.name)
        case .softmax:
            let axis = try layoutAxis(a.axis ?? -1, rank: xr, n)
            add("Softmax", [x], [target], node: n.name, [("axis", .int(axis))])
        case .add, .sub, .mul, .div, .pow: outRank = try arithmetic(n, x, xr, target)
        case .maxPool, .avgPool: outRank = try pool(n, x, xr, target)
        case .globalAvgPool, .globalMaxPool:
            guard xr == 4 else { throw unsupported(n, "a rank-4 input") }
            add(n.op == .globalAvgPool ? "GlobalAveragePool" : "GlobalMaxPool", [x], [target], node: n.name)
        case .concat:
            let axis = try layoutAxis(a.axis ?? 0, rank: xr, n)
            let inputs = try n.inputs.map { tensors[$0] != nil ? try constant($0, padTo4: xr == 4) : $0 }
            add("Concat", inputs, [target], node: n.name, [("axis", .int(axis))])
        case .reshape: outRank = try reshape(n, x, xr, target)
        case .flatten:
            outRank = 2
            add("Flatten", [toIR(x)], [target], node: n.name, [("axis", .int(a.axis ?? 1))])
        case .transpose:
            let perm = a.perm ?? Array((0..<xr).reversed())
            let y = xr == 4 ? fresh(out) : target
            add("Transpose", [toIR(x)], [y], node: n.name, [("perm", .ints(perm))])
            fromIR(y, rank: xr, into: target)
        case .squeeze, .unsqueeze: outRank = try squeeze(n, x, xr, target)
        case .pad: outRank = try pad(n, x, xr, target)
        case .unary:
            try unary(n, x, target)
        case .slice:
            try slice(n, x, xr, target)
        case .resize:
            try resize(n, x, xr, target)
        case .binary, .where, .reduce, .argMax, .logSoftmax, .hardmax, .gather, .shape, .expand:
            throw unsupported(n, "an ONNX lowering for \(n.op.rawValue) (not yet supported)")
        case .lstm, .gru, .rnn:
            throw unsupported(n, "a recurrent layer (not yet written back as ONNX LSTM/GRU/RNN)")
        case .quantize, .dequantize:
            throw unsupported(n, "an ONNX lowering for \(n.op.rawValue) (not yet supported: its codes are float values in the IR)")
        case .ifElse: outRank = try ifElse(n, x, xr, target)
        case .topK: outRank = try topK(n, x, xr, target)
        }
        if let act { try activation(act, target, out, n.name + ".activation") }
        for o in n.outputs { rank[o] = outRank }
    }

    /// A convolution: the HWIO kernel as OIHW.
    private mutating func conv(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let a = n.attributes
        guard xr == 4, let w = tensors[n.inputs[safe: 1] ?? ""], w.shape.count == 4 else {
            throw unsupported(n, "a rank-4 input and a constant rank-4 kernel")
        }
        var inputs = [x, try constant(w.name, perm: WeightLayout.hwioToOIHW)]
        if let b = n.inputs[safe: 2], !b.isEmpty { inputs.append(try constant(b)) }
        let k = [w.shape[0], w.shape[1]]
        add("Conv", inputs, [target], node: n.name, [
            ("kernel_shape", .ints(k)), ("strides", .ints(a.strides ?? [1, 1])),
            ("dilations", .ints(a.dilations ?? [1, 1])), ("pads", .ints(a.pads ?? [0, 0, 0, 0])),
            ("group", .int(a.groups ?? 1)),
        ])
        return 4
    }

    /// A transposed convolution: the IR kernel (C, KH, KW, OC/groups) as ONNX's (C, OC/groups, KH, KW).
    private mutating func convTranspose(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let a = n.attributes
        guard xr == 4, let w = tensors[n.inputs[safe: 1] ?? ""], w.shape.count == 4 else {
            throw unsupported(n, "a rank-4 input and a constant rank-4 kernel")
        }
        var inputs = [x, try constant(w.name, perm: [0, 3, 1, 2])]
        if let b = n.inputs[safe: 2], !b.isEmpty { inputs.append(try constant(b)) }
        add("ConvTranspose", inputs, [target], node: n.name, [
            ("kernel_shape", .ints([w.shape[1], w.shape[2]])), ("strides", .ints(a.strides ?? [1, 1])),
            ("dilations", .ints(a.dilations ?? [1, 1])), ("pads", .ints(a.pads ?? [0, 0, 0, 0])),
            ("output_padding", .ints(a.outputPadding ?? [0, 0])), ("group", .int(a.groups ?? 1)),
        ])
        return 4
    }

    /// The IR product is on plain (IR-ordered) data: rank-4 operands and result go through their IR order.
    private mutating func batchMatMul(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let out = n.outputs.first ?? ""
        guard n.inputs.count == 2 else { throw unsupported(n, "two inputs") }
        let operands = try n.inputs.map { tensors[$0] != nil ? try constant($0) : toIR($0) }
        let rb = try rankOf(n.inputs[1], n)
        let outRank = max(xr, rb)
        let y = outRank == 4 ? fresh(out) : target
        add("MatMul", operands, [y], node: n.name)
        fromIR(y, rank: outRank, into: target)
        return outRank
    }

    /// A dense layer: a Gemm, after a Flatten (in IR order) when the input is not a matrix.
    private mutating func dense(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        guard let w = n.inputs[safe: 1], tensors[w] != nil else { throw unsupported(n, "a constant weight matrix") }
        var flat = x
        if xr != 2 {
            flat = fresh(x)
            add("Flatten", [toIR(x)], [flat], node: n.name + ".flatten", [("axis", .int(1))])
        }
        var inputs = [flat, try constant(w)]
        if let b = n.inputs[safe: 2], !b.isEmpty { inputs.append(try constant(b)) }
        add("Gemm", inputs, [target], node: n.name)
        return 2
    }

    /// A matMul with a constant b (and a bias the fused pass moved in, as an Add after).
    private mutating func matMul(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let out = n.outputs.first ?? ""
        guard let b = n.inputs[safe: 1], tensors[b] != nil else { throw unsupported(n, "a constant right-hand matrix") }
        let y = xr == 4 ? fresh(out) : target
        if let bias = n.inputs[safe: 2] {   // the bias GraphPasses.fuseMatMulBias moved in: an Add after
            let product = fresh(out)
            add("MatMul", [toIR(x), try constant(b)], [product], node: n.name)
            add("Add", [product, try constant(bias)], [y], node: n.name + ".bias")
        } else {
            add("MatMul", [toIR(x), try constant(b)], [y], node: n.name)
        }
        if xr == 4 { add("Transpose", [y], [target], node: n.name + ".nchw", [("perm", .ints(WeightLayout.nhwcToNCHW))]) }
        return xr
    }

    /// Add, Sub, Mul, Div, Pow with the operands broadcast in NCHW.
    private mutating func arithmetic(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        guard n.inputs.count == 2 else { throw unsupported(n, "two inputs") }
        let rb = try rankOf(n.inputs[1], n)
        let outRank = max(xr, rb)
        let lhs = try broadcastOperand(x, xr, outRank), rhs = try broadcastOperand(n.inputs[1], rb, outRank)
        let op = ["add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow"][n.op.rawValue] ?? ""
        add(op, [lhs, rhs], [target], node: n.name)
        return outRank
    }

    /// MaxPool or AveragePool (which takes dilations only from opset 19; this writer emits opset 13).
    private mutating func pool(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let a = n.attributes
        let dilations = a.dilations ?? [1, 1]
        guard xr == 4, let k = a.kernel, dilations == [1, 1] || n.op == .maxPool else {
            throw unsupported(n, "a rank-4 input, a kernel size and (average pooling) no dilation")
        }
        var attrs: [(String, ONNXProgram.AttributeValue)] = [
            ("kernel_shape", .ints(k)), ("strides", .ints(a.strides ?? [1, 1])), ("pads", .ints(a.pads ?? [0, 0, 0, 0])),
            ("ceil_mode", .int(a.ceilMode == true ? 1 : 0)),
        ]
        if dilations != [1, 1] { attrs.append(("dilations", .ints(dilations))) }
        if n.op == .avgPool { attrs.append(("count_include_pad", .int(a.countIncludePad == true ? 1 : 0))) }
        add(n.op == .maxPool ? "MaxPool" : "AveragePool", [x], [target], node: n.name, attrs)
        return xr
    }

    /// Reshape, on IR-ordered data.
    private mutating func reshape(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let a = n.attributes
        let out = n.outputs.first ?? ""
        guard let shape = a.shape else { throw unsupported(n, "a shape attribute") }
        let outRank = shape.count
        let y = outRank == 4 ? fresh(out) : target
        add("Reshape", [toIR(x), int64s(shape)], [y], node: n.name)
        fromIR(y, rank: outRank, into: target)
        return outRank
    }

    /// Squeeze or Unsqueeze, on IR-ordered data.
    private mutating func squeeze(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let a = n.attributes
        let out = n.outputs.first ?? ""
        guard let axes = a.axes else { throw unsupported(n, "explicit axes") }
        let outRank = n.op == .squeeze ? xr - axes.count : xr + axes.count
        let y = outRank == 4 ? fresh(out) : target
        add(n.op == .squeeze ? "Squeeze" : "Unsqueeze", [toIR(x), int64s(axes)], [y], node: n.name)
        fromIR(y, rank: outRank, into: target)
        return outRank
    }

    /// Pads; a rank-4 tensor's begin and end pads in NCHW order.
    private mutating func pad(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let a = n.attributes
        guard var pads = a.pads, pads.count == 2 * xr else { throw unsupported(n, "2·rank pads") }
        if xr == 4 {
            let begin = WeightLayout.permuted(Array(pads[0..<4]), WeightLayout.nhwcToNCHW)
            let end = WeightLayout.permuted(Array(pads[4..<8]), WeightLayout.nhwcToNCHW)
            pads = begin + end
        }
        let mode = a.mode ?? "constant"
        add("Pad", [x, int64s(pads), floatScalar(a.value ?? 0)], [target], node: n.name, [("mode", .string(mode))])
        return xr
    }

    /// Where on the condition as a bool scalar: it broadcasts to nothing, so the output is the chosen value.
    private mutating func ifElse(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let out = n.outputs.first ?? ""
        guard n.inputs.count == 3 else { throw unsupported(n, "three inputs") }
        let rt = try rankOf(n.inputs[1], n), re = try rankOf(n.inputs[2], n)
        let outRank = max(rt, re)
        let scalar = fresh(out), flag = fresh(out)
        add("Reshape", [tensors[x] != nil ? try constant(x) : x, int64s([])], [scalar], node: n.name + ".scalar")
        add("Cast", [scalar], [flag], node: n.name + ".cast", [("to", .int(Int(ONNXProgram.DataType.bool)))])
        add("Where", [flag, try broadcastOperand(n.inputs[1], rt, outRank), try broadcastOperand(n.inputs[2], re, outRank)],
            [target], node: n.name)
        return outRank
    }

    /// TopK; its values, or its indices cast to float.
    private mutating func topK(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws -> Int {
        let a = n.attributes
        let out = n.outputs.first ?? ""
        guard let k = a.k, k >= 0 else { throw unsupported(n, "k ≥ 0") }
        let axis = try layoutAxis(a.axis ?? -1, rank: xr, n)
        let values = fresh(out), indices = fresh(out)
        add("TopK", [x, int64s([k])], [values, indices], node: n.name, [
            ("axis", .int(axis)), ("largest", .int(a.largest == false ? 0 : 1)), ("sorted", .int(1)),
        ])
        if a.mode == "indices" {
            add("Cast", [indices], [target], node: n.name + ".cast", [("to", .int(Int(ONNXProgram.DataType.float)))])
        } else {
            add("Identity", [values], [target], node: n.name + ".values")
        }
        return xr
    }

    /// A strided slice: per listed axis `counts[i]` elements from `starts[i]` every `steps[i]`.
    private mutating func slice(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws {
        let a = n.attributes
        guard let axes = a.axes, let starts = a.starts, let counts = a.counts, starts.count == axes.count, counts.count == axes.count else {
            throw unsupported(n, "axes, starts and counts of one length")
        }
        let steps = a.steps ?? [Int](repeating: 1, count: axes.count)
        guard steps.count == axes.count, !steps.contains(0) else { throw unsupported(n, "one non-zero step per axis") }
        // An end past the front of a backwards slice is written as a large negative number (ONNX clamps it).
        let ends = (0..<axes.count).map { i -> Int in
            let end = starts[i] + counts[i] * steps[i]
            return steps[i] < 0 && end < 0 ? Int(Int32.min) : end
        }
        let onnxAxes = try axes.map { try layoutAxis($0, rank: xr, n) }
        add("Slice", [x, int64s(starts), int64s(ends), int64s(onnxAxes), int64s(steps)], [target], node: n.name)
    }

    /// ONNX Resize (opset 13) on the two spatial axes of an NCHW tensor: by the recorded scales, else to the shape.
    private mutating func resize(_ n: Node, _ x: String, _ xr: Int, _ target: String) throws {
        let a = n.attributes
        let coordinates = a.coordinateMode ?? "half_pixel"
        guard xr == 4, a.antialias != true, coordinates != "half_pixel_symmetric" else {
            throw unsupported(n, "a feature map, no antialiasing and an opset-13 coordinate mode (not '\(coordinates)')")
        }
        var attrs: [(String, ONNXProgram.AttributeValue)] = [
            ("mode", .string(a.mode ?? "nearest")), ("coordinate_transformation_mode", .string(coordinates)),
            ("nearest_mode", .string(a.nearestMode ?? "round_prefer_floor")), ("exclude_outside", .int(a.excludeOutside == true ? 1 : 0)),
        ]
        if let alpha = a.alpha { attrs.append(("cubic_coeff_a", .float(alpha))) }
        if let scales = a.scales, scales.count == 2 {
            let name = fresh("const")
            program.initializers.append(.init(name: name, dataType: ONNXProgram.DataType.float, dims: [4], raw: floatBytes([1, 1] + scales)))
            add("Resize", [x, "", name], [target], node: n.name, attrs)
        } else if let shape = a.shape, shape.count == 2 {
            let dims = fresh(n.name + ".shape"), batchChannels = fresh(n.name + ".nc"), sizes = fresh(n.name + ".sizes")
            add("Shape", [x], [dims], node: dims)
            add("Slice", [dims, int64s([0]), int64s([2])], [batchChannels], node: batchChannels)
            add("Concat", [batchChannels, int64s(shape)], [sizes], node: sizes, [("axis", .int(0))])
            add("Resize", [x, "", "", sizes], [target], node: n.name, attrs)
        } else {
            throw unsupported(n, "two scales or an output shape (height, width)")
        }
    }

    /// An elementwise activation from `input` to `output`.
    private mutating func activation(_ a: Activation, _ input: String, _ output: String, _ name: String) throws {
        switch a.op {
        case .relu: add("Relu", [input], [output], node: name)
        case .sigmoid: add("Sigmoid", [input], [output], node: name)
        case .tanh: add("Tanh", [input], [output], node: name)
        case .identity: add("Identity", [input], [output], node: name)
        case .clip:
            let lo = a.min.map { floatScalar($0) } ?? "", hi = a.max.map { floatScalar($0) } ?? ""
            add("Clip", [input, lo, hi], [output], node: name)
        case .leakyRelu: add("LeakyRelu", [input], [output], node: name, [("alpha", .float(a.alpha ?? 0.01))])
        case .hardSigmoid:
            add("HardSigmoid", [input], [output], node: name, [("alpha", .float(a.alpha ?? 0.2)), ("beta", .float(a.beta ?? 0.5))])
        case .hardSwish, .swish:
            // x · HardSigmoid(x; 1/6, 1/2) and x · Sigmoid(x): both in opset 13 without HardSwish (opset 14).
            let gate = fresh(output)
            if a.op == .swish { add("Sigmoid", [input], [gate], node: name + ".gate") } else {
                add("HardSigmoid", [input], [gate], node: name + ".gate", [("alpha", .float(1.0 / 6)), ("beta", .float(0.5))])
            }
            add("Mul", [input, gate], [output], node: name)
        default:
            throw ExportError.unsupported(model: modelName, format: "ONNX", place: "node '\(name)'",
                                          reason: "'\(a.op.rawValue)' is not an activation")
        }
    }

    /// A `unary` node as its ONNX operator (elementwise, so the layout does not matter).
    private mutating func unary(_ n: Node, _ x: String, _ target: String) throws {
        let alpha = n.attributes.alpha ?? 0
        switch UnaryFunction(rawValue: n.attributes.mode ?? "") {
        case .thresholdedRelu?: add("ThresholdedRelu", [x], [target], node: n.name, [("alpha", .float(alpha))])
        case .elu?: add("Elu", [x], [target], node: n.name, [("alpha", .float(alpha))])
        case .softplus?: add("Softplus", [x], [target], node: n.name)
        case .softsign?: add("Softsign", [x], [target], node: n.name)
        case .exp?: add("Exp", [x], [target], node: n.name)
        case .log?: add("Log", [x], [target], node: n.name)
        case .abs?: add("Abs", [x], [target], node: n.name)
        case .sqrt?: add("Sqrt", [x], [target], node: n.name)
        case .pow?: add("Pow", [x, floatScalar(alpha)], [target], node: n.name)
        case .threshold?: add("Max", [x, floatScalar(alpha)], [target], node: n.name)
        case .rsqrt?, .reciprocal?:
            let shifted = fresh(target)
            add("Add", [x, floatScalar(alpha)], [shifted], node: n.name + ".shift")
            if n.attributes.mode == UnaryFunction.rsqrt.rawValue {
                let root = fresh(target)
                add("Sqrt", [shifted], [root], node: n.name + ".sqrt")
                add("Reciprocal", [root], [target], node: n.name)
            } else {
                add("Reciprocal", [shifted], [target], node: n.name)
            }
        case let f?:
            guard let op = Self.directUnary[f] else { throw unsupported(n, "an ONNX op computing \(f.rawValue) on floats") }
            var attrs: [(String, ONNXProgram.AttributeValue)] = []
            if f == .selu { attrs = [("alpha", .float(alpha)), ("gamma", .float(n.attributes.beta ?? 0))] }
            if f == .celu { attrs = [("alpha", .float(alpha))] }
            add(op, [x], [target], node: n.name, attrs)
        case nil: throw unsupported(n, "a known unary function, not '\(n.attributes.mode ?? "")'")
        }
    }

    /// Unary functions that are one ONNX op on float tensors, by that op's name.
    private static let directUnary: [UnaryFunction: String] = [
        .neg: "Neg", .floor: "Floor", .ceil: "Ceil", .round: "Round", .sign: "Sign", .sin: "Sin", .cos: "Cos",
        .tan: "Tan", .asin: "Asin", .acos: "Acos", .atan: "Atan", .sinh: "Sinh", .cosh: "Cosh", .asinh: "Asinh",
        .acosh: "Acosh", .atanh: "Atanh", .erf: "Erf", .mish: "Mish", .selu: "Selu", .celu: "Celu",
    ]

    // MARK: Layout helpers

    /// The ONNX tensor holding `x` in IR (NHWC) order: a transpose for rank-4 activations.
    private mutating func toIR(_ x: String) -> String {
        guard rank[x] == 4 else { return x }
        let y = fresh(x)
        add("Transpose", [x], [y], node: y, [("perm", .ints(WeightLayout.nchwToNHWC))])
        return y
    }

    /// Writes IR-ordered `y` to `target` in ONNX layout (a transpose when it is rank 4).
    private mutating func fromIR(_ y: String, rank r: Int, into target: String) {
        guard r == 4 else { return }
        add("Transpose", [y], [target], node: target + ".nchw", [("perm", .ints(WeightLayout.nhwcToNCHW))])
    }

    /// An operand of an elementwise op whose result has rank `outRank`, broadcastable in ONNX layout.
    private mutating func broadcastOperand(_ x: String, _ r: Int, _ outRank: Int) throws -> String {
        if tensors[x] != nil { return try constant(x, padTo4: outRank == 4) }
        guard outRank == 4, r < 4 else { return x }
        // A lower-rank activation against a feature map: align it NHWC-style, then to NCHW.
        let u = fresh(x)
        add("Unsqueeze", [x, int64s(Array(0..<(4 - r)))], [u], node: u)
        let t = fresh(x)
        add("Transpose", [u], [t], node: t, [("perm", .ints(WeightLayout.nhwcToNCHW))])
        return t
    }

    private func layoutAxis(_ axis: Int, rank r: Int, _ n: Node) throws -> Int {
        let a = axis < 0 ? axis + r : axis
        guard a >= 0, a < max(r, 1) else { throw unsupported(n, "an axis within rank \(r)") }
        return r == 4 ? WeightLayout.nhwcAxisInNCHW[a] : a
    }

    private func rankOf(_ name: String, _ n: Node) throws -> Int {
        if let r = rank[name] { return r }
        if let t = tensors[name] { return t.shape.count }
        throw ExportError.invalid(model: modelName, place: "node '\(n.name)' input", expected: "a computed tensor or a weight",
                                  actual: "'\(name)'")
    }

    // MARK: Constants

    /// The ONNX name of weight `name` laid out for its use: permuted by `perm`, or (`padTo4`) right-aligned to rank 4
    /// in NHWC and transposed to NCHW. int8 weights (and palettes with int8 tables, which are int8 weights) become
    /// int8 initializers + DequantizeLinear.
    private mutating func constant(_ name: String, perm: [Int]? = nil, padTo4: Bool = false) throws -> String {
        let key = "\(name)|\(perm ?? [])|\(padTo4)"
        if let done = emittedConstants[key] { return done }
        guard let stored = tensors[name] else {
            throw ExportError.invalid(model: modelName, place: "weight", expected: "a tensor in the model", actual: "'\(name)'")
        }
        // A palette with an int8 table is exactly int8 weights: written as such, not as float32.
        let t = stored.int8TableAsLinear() ?? stored
        var shape = t.shape
        var perm = perm
        if padTo4 {
            guard shape.count <= 4 else {
                throw ExportError.unsupported(model: modelName, format: "ONNX", place: "weight '\(name)'", reason: "rank \(shape.count) against a feature map")
            }
            shape = [Int](repeating: 1, count: 4 - shape.count) + shape
            perm = WeightLayout.nhwcToNCHW
        }
        let onnxName = perm == nil ? name : name + (padTo4 ? "__nchw" : "__oihw")
        let outShape = perm.map { WeightLayout.permuted(shape, $0) } ?? shape
        let count = try Checked.elementCount(shape, what: "weight '\(name)'")
        let need = try t.dtype.traits.byteCount(elements: count)
        guard t.bytes.count >= need else {
            throw ExportError.invalid(model: modelName, place: "weight '\(name)'", expected: "\(need) bytes", actual: "\(t.bytes.count)")
        }
        if t.dtype == .int8, let q = t.quant, let scales = q.scales,
           (q.zeroPoints ?? []).allSatisfy({ (-128...127).contains($0) }) {
            let raw = perm.map { WeightLayout.transpose(t.bytes.buffer, shape: shape, perm: $0, width: 1) } ?? Array(t.bytes.buffer.prefix(count))
            let zps = (q.zeroPoints ?? [Int](repeating: 0, count: scales.count)).map { UInt8(bitPattern: Int8($0)) }
            var axis = q.axis
            if let a = axis {
                let shifted = a + (shape.count - t.shape.count)
                axis = perm?.firstIndex(of: shifted) ?? shifted
            }
            let perChannel = axis != nil
            guard scales.count == (perChannel ? outShape[axis ?? 0] : 1), zps.count == scales.count else {
                throw ExportError.invalid(model: modelName, place: "weight '\(name)' scales", expected: "one per channel", actual: "\(scales.count)")
            }
            program.initializers.append(.init(name: onnxName + "__q", dataType: ONNXProgram.DataType.int8, dims: outShape, raw: raw))
            program.initializers.append(.init(name: onnxName + "__scale", dataType: ONNXProgram.DataType.float,
                                              dims: perChannel ? [scales.count] : [], raw: floatBytes(scales)))
            program.initializers.append(.init(name: onnxName + "__zero_point", dataType: ONNXProgram.DataType.int8,
                                              dims: perChannel ? [zps.count] : [], raw: zps))
            int8Weights += 1
            add("DequantizeLinear", [onnxName + "__q", onnxName + "__scale", onnxName + "__zero_point"], [onnxName],
                node: onnxName + ".dequantize", perChannel ? [("axis", .int(axis ?? 0))] : [])
        } else {
            if t.dtype != .f32 {
                notes.append("\(name): \(t.dtype.name) weights stored as float32 (ONNX has no \(t.dtype.traits.isPalette ? "look-up-table" : t.dtype.name) weights)")
            }
            var values = try t.floats()
            if let p = perm { values = WeightLayout.transpose(values, shape: shape, perm: p) }
            program.initializers.append(.init(name: onnxName, dataType: ONNXProgram.DataType.float, dims: outShape, raw: floatBytes(values)))
        }
        emittedConstants[key] = onnxName
        return onnxName
    }

    mutating func int64s(_ values: [Int]) -> String {
        let name = fresh("const")
        var raw = [UInt8]()
        for v in values { withUnsafeBytes(of: Int64(v).littleEndian) { raw += $0 } }
        program.initializers.append(.init(name: name, dataType: ONNXProgram.DataType.int64, dims: [values.count], raw: raw))
        return name
    }

    mutating func floatScalar(_ v: Float) -> String {
        let name = fresh("const")
        program.initializers.append(.init(name: name, dataType: ONNXProgram.DataType.float, dims: [], raw: floatBytes([v])))
        return name
    }

    func floatBytes(_ v: [Float]) -> [UInt8] { v.withUnsafeBytes { Array($0) } }

    // MARK: Emission

    mutating func fresh(_ base: String) -> String {
        counter += 1
        return "\(base)__\(counter)"
    }

    mutating func add(_ op: String, _ inputs: [String], _ outputs: [String], node: String,
                              _ attributes: [(String, ONNXProgram.AttributeValue)] = []) {
        program.nodes.append(.init(op: op, name: node, inputs: inputs, outputs: outputs, attributes: attributes))
    }

    private func unsupported(_ n: Node, _ needs: String) -> ExportError {
        .unsupported(model: modelName, format: "ONNX", place: "node '\(n.name)' (\(n.op.rawValue))", reason: "needs \(needs)")
    }
}

extension Array {
    subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}
