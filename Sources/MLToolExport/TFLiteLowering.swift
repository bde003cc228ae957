import MLToolCore

/// Lowers a model's NHWC IR graph to a TensorFlow Lite subgraph. TFLite is NHWC too, so every IR tensor is one TFLite
/// tensor of the same name and shape: no transposes. Conv kernels (KH, KW, C, OC) become OHWI, depthwise kernels
/// (KH, KW, 1, C·m) become (1, KH, KW, C·m) (the same bytes), dense weights (in, out) become (out, in). Explicit pads
/// that are neither SAME nor VALID for the tensor's size become a PAD before a VALID layer. int8, palettized and f16
/// weights stay compressed behind a DEQUANTIZE (`TFLiteWeights` says how and why); what cannot be kept is dequantized
/// to float32; each is listed in `notes`.
///
/// `shapes` holds every activation's shape for one image at the model's input size (`ModelExport` infers them with
/// the engine); the batch stays free (axis 0 of the input's shape_signature is −1), and reshapes that keep the
/// batch write it as −1.
struct TFLiteLowering {
    typealias Op = TFLiteProgram.Operator
    typealias Field = TFLiteProgram.Field

    let modelName: String
    let graph: Graph
    let tensors: [String: StoredTensor]
    let shapes: [String: [Int]]
    var program = TFLiteProgram()
    private(set) var notes: [String] = []
    /// TFLite tensor index of every IR tensor lowered so far.
    private(set) var index: [String: Int] = [:]
    /// IR tensors whose axis 0 is the batch (the input's, kept through the ops that keep it).
    private var batched: Set<String> = []
    private var emittedConstants: [String: Int] = [:]

    init(model: Model, name: String, graph: Graph, shapes: [String: [Int]]) {
        self.modelName = name
        self.graph = graph
        self.tensors = model.tensorsByName
        self.shapes = shapes
    }

    // MARK: Graph

    mutating func lower() throws {
        for input in graph.inputs {
            let shape = try shapeOf(input.name)
            let signature = [-1] + shape.dropFirst()
            let i = add(TFLiteProgram.Tensor(name: input.name, shape: shape, signature: signature))
            index[input.name] = i
            batched.insert(input.name)
            program.inputs.append(i)
        }
        for node in graph.nodes { try lower(node) }
        for o in graph.outputs {
            guard let i = index[o] else {
                throw ExportError.invalid(model: modelName, place: "graph output '\(o)'", expected: "a tensor computed by the graph",
                                          actual: "undefined")
            }
            if batched.contains(o) { program.tensors[i].signature = [-1] + program.tensors[i].shape.dropFirst() }
            program.outputs.append(i)
        }
    }

    private mutating func lower(_ n: Node) throws {
        let a = n.attributes
        let x = n.inputs.first ?? ""
        let out = n.outputs.first ?? ""
        let outShape = try shapeOf(out)
        if n.op == .identity, a.activation == nil {
            index[out] = try operand(x, n)
            if batched.contains(x) { batched.insert(out) }
            return
        }
        // An activation TFLite fuses into the op, or one written after it (the op then writes a temporary).
        let fusable: Set<IROp> = [.conv, .dense, .matMul, .add, .sub, .mul, .div, .maxPool, .avgPool, .concat, .batchNorm]
        let fused = fusable.contains(n.op) ? Self.fused(a.activation) : nil
        let separate = a.activation != nil && fused == nil
        let y = separate ? computed(out + "/pre_activation", outShape) : computed(out, outShape)
        let act = (fused ?? .none).rawValue
        switch n.op {
        case .conv:
            try conv(n, x, y, act)
        case .dense, .matMul:
            try fullyConnected(n, x, y, act)
        case .batchNorm:
            try batchNorm(n, x, y, act)
        case .relu, .clip, .leakyRelu, .sigmoid, .hardSigmoid, .hardSwish, .swish, .tanh:
            try activation(Activation(op: n.op, min: a.min, max: a.max, alpha: a.alpha, beta: a.beta), try operand(x, n), y, n)
        case .softmax:
            let r = outShape.count
            guard (a.axis ?? -1) == -1 || a.axis == r - 1 else { throw unsupported(n, "softmax over the last axis (TFLite's only)") }
            emit(.softmax, [try operand(x, n)], [y], .softmax, [.float(0, 1)])
        case .add, .sub, .mul, .div:
            guard n.inputs.count == 2 else { throw unsupported(n, "two inputs") }
            let op: Op = [.add: .add, .sub: .sub, .mul: .mul, .div: .div][n.op] ?? .add
            let options: TFLiteProgram.OptionsType = [.add: .add, .sub: .sub, .mul: .mul, .div: .div][n.op] ?? .add
            emit(op, [try operand(x, n), try operand(n.inputs[1], n)], [y], options, [.int8(0, act)])
            if batched.contains(n.inputs[1]) { batched.insert(out) }
        case .maxPool, .avgPool:
            try pool(n, x, y, act)
        case .globalAvgPool, .globalMaxPool:
            guard try shapeOf(x).count == 4 else { throw unsupported(n, "a rank-4 input") }
            emit(n.op == .globalAvgPool ? .mean : .reduceMax, [try operand(x, n), int32s([1, 2])], [y], .reducer, [.bool(0, true)])
        case .concat:
            let r = outShape.count
            let axis = (a.axis ?? 0) < 0 ? (a.axis ?? 0) + r : (a.axis ?? 0)
            emit(.concatenation, try n.inputs.map { try operand($0, n) }, [y], .concatenation, [.int32(0, Int32(axis), default: 0), .int8(1, act)])
        case .reshape, .flatten, .squeeze, .unsqueeze:
            try reshape(n, x, y, outShape)
        case .transpose:
            let r = try shapeOf(x).count
            let perm = a.perm ?? Array((0..<r).reversed())
            emit(.transpose, [try operand(x, n), int32s(perm)], [y], .transpose, [])
            if perm.first == 0, batched.contains(x) { batched.insert(out) }
        case .pad:
            try pad(n, x, y)
        case .resize:
            try resize(n, x, y, outShape)
        case .unary:
            // α is the shift of rsqrt and the slope of elu: TFLite's have 0 and 1.
            let f = UnaryFunction(rawValue: a.mode ?? "")
            guard let f, let op = Self.unaryOps[f], f == .elu ? a.alpha == 1 : (a.alpha ?? 0) == 0 else {
                throw unsupported(n, "a unary function TFLite has as an operator (not '\(a.mode ?? "")'\(a.alpha.map { " with α \($0)" } ?? ""))")
            }
            emit(op, [try operand(x, n)], [y], nil, [])
        default:
            throw unsupported(n, "a TensorFlow Lite lowering for \(n.op.rawValue) (not yet supported)")
        }
        if separate, let a = a.activation { try activation(a, y, computed(out, outShape), n) }
        // Ops that move axis 0 decided above; every other keeps the batch where its first input has it.
        if ![.reshape, .flatten, .squeeze, .unsqueeze, .transpose].contains(n.op), batched.contains(x) { batched.insert(out) }
    }

    /// dense and matMul: FULLY_CONNECTED on the (out, in) weights (keep_num_dims for a matMul).
    private mutating func fullyConnected(_ n: Node, _ x: String, _ y: Int, _ act: Int8) throws {
        guard let w = tensors[n.inputs[safe: 1] ?? ""], w.shape.count == 2 else {
            throw unsupported(n, "a constant weight matrix (in, out)")
        }
        let weights = try constant(w.name, perm: [1, 0])
        let bias = try n.inputs[safe: 2].flatMap { $0.isEmpty ? nil : try constant($0) } ?? zeros(w.shape[1])
        emit(.fullyConnected, [try operand(x, n), weights, bias], [y], .fullyConnected,
             [.int8(0, act), .bool(2, n.op == .matMul)])
    }

    /// reshape, flatten, squeeze, unsqueeze: RESHAPE to the output's shape; the batch stays free where axis 0 passes
    /// through unchanged.
    private mutating func reshape(_ n: Node, _ x: String, _ y: Int, _ outShape: [Int]) throws {
        let a = n.attributes
        let out = n.outputs.first ?? ""
        guard n.inputs.count == 1 else { throw unsupported(n, "a constant target shape (this one is computed)") }
        let keepsBatch = batched.contains(x) && (n.op == .flatten ? (a.axis ?? 1) == 1
            : n.op == .reshape ? [0, -1].contains(a.shape?.first ?? 1)
            : !(a.axes ?? [0]).contains(where: { $0 == 0 || $0 == -outShape.count }))
        var target = outShape
        if keepsBatch, !target.isEmpty { target[0] = -1; batched.insert(out) }
        emit(.reshape, [try operand(x, n), int32s(target)], [y], .reshape, [.ints(0, target.map { Int32(clamping: $0) })])
    }

    typealias IROp = MLToolCore.Op

    /// Unary functions that are one TFLite operator without parameters.
    private static let unaryOps: [UnaryFunction: Op] = [
        .exp: .exp, .log: .log, .abs: .abs, .sqrt: .sqrt, .rsqrt: .rsqrt, .neg: .neg, .floor: .floor, .ceil: .ceil,
        .sin: .sin, .cos: .cos, .round: .round, .elu: .elu,
    ]

    /// TFLite's fused activation for `a`, nil when it has none (the activation is then an operator of its own).
    static func fused(_ a: Activation?) -> TFLiteProgram.FusedActivation? {
        guard let a else { return TFLiteProgram.FusedActivation.none }
        let bounds = [a.min, a.max]
        switch a.op {
        case .relu: return .relu
        case .tanh: return .tanh
        case .clip where bounds == [0, 6]: return .relu6
        case .clip where bounds == [0, nil]: return .relu
        case .clip where bounds == [-1, 1]: return .reluN1To1
        default: return nil
        }
    }

    // MARK: Layers

    /// CONV_2D (groups 1) or DEPTHWISE_CONV_2D (one input channel per group).
    private mutating func conv(_ n: Node, _ x: String, _ y: Int, _ act: Int8) throws {
        let a = n.attributes
        let xs = try shapeOf(x)
        guard xs.count == 4, let w = tensors[n.inputs[safe: 1] ?? ""], w.shape.count == 4 else {
            throw unsupported(n, "a rank-4 input and a constant rank-4 kernel")
        }
        let (kh, kw, cin, oc) = (w.shape[0], w.shape[1], w.shape[2], w.shape[3])
        let groups = a.groups ?? 1
        let strides = a.strides ?? [1, 1], dilations = a.dilations ?? [1, 1]
        let (padding, input) = try padded(n, x, kernel: [kh, kw], strides: strides, dilations: dilations, value: 0)
        let bias = try n.inputs[safe: 2].flatMap { $0.isEmpty ? nil : try constant($0) } ?? zeros(oc)
        if groups == 1 {
            let weights = try constant(w.name, perm: [3, 0, 1, 2])
            emit(.conv2D, [input, weights, bias], [y], .conv2D, [
                .int8(0, padding.rawValue), .int32(1, Int32(strides[1]), default: 0), .int32(2, Int32(strides[0]), default: 0),
                .int8(3, act), .int32(4, Int32(dilations[1]), default: 1), .int32(5, Int32(dilations[0]), default: 1),
            ])
        } else if groups == xs[3], cin == 1, oc % groups == 0 {
            let weights = try constant(w.name, reshape: [1, kh, kw, oc])
            emit(.depthwiseConv2D, [input, weights, bias], [y], .depthwiseConv2D, [
                .int8(0, padding.rawValue), .int32(1, Int32(strides[1]), default: 0), .int32(2, Int32(strides[0]), default: 0),
                .int32(3, Int32(oc / groups), default: 0), .int8(4, act),
                .int32(5, Int32(dilations[1]), default: 1), .int32(6, Int32(dilations[0]), default: 1),
            ])
        } else {
            throw unsupported(n, "groups 1 or one group per input channel (depthwise), not \(groups) groups of \(cin) channels")
        }
    }

    private mutating func pool(_ n: Node, _ x: String, _ y: Int, _ act: Int8) throws {
        let a = n.attributes
        guard try shapeOf(x).count == 4, let k = a.kernel, k.count == 2, (a.dilations ?? [1, 1]) == [1, 1] else {
            throw unsupported(n, "a rank-4 input, a 2-D kernel and no dilation")
        }
        let strides = a.strides ?? [1, 1]
        let max = n.op == .maxPool
        // TFLite's SAME average leaves the padding out of the count; a PAD before it puts it in.
        let (padding, input) = try padded(n, x, kernel: k, strides: strides, dilations: [1, 1], value: max ? -.infinity : 0,
                                          allowSame: max || a.countIncludePad != true, allowPad: max || a.countIncludePad == true)
        emit(max ? .maxPool2D : .averagePool2D, [input], [y], .pool2D, [
            .int8(0, padding.rawValue), .int32(1, Int32(strides[1]), default: 0), .int32(2, Int32(strides[0]), default: 0),
            .int32(3, Int32(k[1]), default: 0), .int32(4, Int32(k[0]), default: 0), .int8(5, act),
        ])
    }

    /// The padding mode for a layer's pads on `x`, and its input: `x` itself for SAME or VALID, else a PAD of it.
    private mutating func padded(_ n: Node, _ x: String, kernel k: [Int], strides s: [Int], dilations d: [Int], value: Float,
                                 allowSame: Bool = true, allowPad: Bool = true) throws -> (TFLiteProgram.Padding, Int) {
        let a = n.attributes
        let xs = try shapeOf(x)
        guard k.count == 2, s.count == 2, d.count == 2, s.allSatisfy({ $0 > 0 }) else { throw unsupported(n, "2-D kernel, strides, dilations") }
        // TensorFlow's SAME: total = max(0, (⌈n / s⌉ − 1)·s + (k − 1)·d + 1 − n), the smaller half first.
        var same = [0, 0, 0, 0]
        for i in 0..<2 {
            let size = xs[1 + i]
            let total = Swift.max(0, ((size + s[i] - 1) / s[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - size)
            same[i] = total / 2
            same[2 + i] = total - total / 2
        }
        let pads: [Int]
        switch a.autoPad {
        case "SAME_UPPER"?: pads = same
        case "SAME_LOWER"?: pads = [same[2], same[3], same[0], same[1]]
        case "VALID"?, nil: pads = a.pads ?? [0, 0, 0, 0]
        case let other?: throw unsupported(n, "auto_pad SAME_UPPER, SAME_LOWER or VALID, not \(other)")
        }
        guard pads.count == 4, n.attributes.ceilMode != true else { throw unsupported(n, "4 pads (top, left, bottom, right) and floor rounding") }
        let input = try operand(x, n)
        if pads == [0, 0, 0, 0] { return (.valid, input) }
        if pads == same, allowSame { return (.same, input) }
        guard allowPad else {
            throw unsupported(n, "average pooling whose pads \(pads) are TensorFlow's SAME (\(same)) or counted in the average")
        }
        var paddedShape = xs
        paddedShape[1] += pads[0] + pads[2]
        paddedShape[2] += pads[1] + pads[3]
        let p = computed(n.name + "/pad", paddedShape)
        let paddings = int32s([0, 0, pads[0], pads[2], pads[1], pads[3], 0, 0], shape: [4, 2])
        if value == 0 {
            emit(.pad, [input, paddings], [p], .pad, [])
        } else {
            emit(.padV2, [input, paddings, floats([value], shape: [])], [p], .padV2, [])
        }
        return (.valid, p)
    }

    /// A batch norm as MUL by scale/√(var + ε) and ADD of bias − mean·that (inputs scale, bias, mean, var).
    private mutating func batchNorm(_ n: Node, _ x: String, _ y: Int, _ act: Int8) throws {
        guard n.inputs.count == 5 else { throw unsupported(n, "scale, bias, mean and variance") }
        let p = try n.inputs.dropFirst().map { name -> [Float] in
            guard let t = tensors[name] else { throw unsupported(n, "constant parameters ('\(name)' is computed)") }
            return try floatValues(t)
        }
        let c = p[0].count
        guard p.allSatisfy({ $0.count == c }), try shapeOf(x).last == c else { throw unsupported(n, "one parameter per channel") }
        let eps = n.attributes.epsilon ?? 1e-5
        let scale = (0..<c).map { p[0][$0] / (p[3][$0] + eps).squareRoot() }
        let shift = (0..<c).map { p[1][$0] - p[2][$0] * scale[$0] }
        let scaled = computed(n.name + "/scaled", try shapeOf(x))
        emit(.mul, [try operand(x, n), floats(scale, shape: [c])], [scaled], .mul, [.int8(0, 0)])
        emit(.add, [scaled, floats(shift, shape: [c])], [y], .add, [.int8(0, act)])
    }

    /// An elementwise activation from tensor `input` to tensor `output`.
    private mutating func activation(_ a: Activation, _ input: Int, _ output: Int, _ n: Node) throws {
        let shape = program.tensors[output].shape
        switch a.op {
        case .relu: emit(.relu, [input], [output], nil, [])
        case .sigmoid: emit(.logistic, [input], [output], nil, [])
        case .tanh: emit(.tanh, [input], [output], nil, [])
        case .hardSwish: emit(.hardSwish, [input], [output], .hardSwish, [])
        case .leakyRelu: emit(.leakyRelu, [input], [output], .leakyRelu, [.float(0, a.alpha ?? 0.01)])
        case .swish:
            let gate = computed(n.name + "/gate", shape)
            emit(.logistic, [input], [gate], nil, [])
            emit(.mul, [input, gate], [output], .mul, [.int8(0, 0)])
        case .clip:
            switch Self.fused(a) {
            case .relu6?: emit(.relu6, [input], [output], nil, [])
            case .relu?: emit(.relu, [input], [output], nil, [])
            case .reluN1To1?: emit(.reluN1To1, [input], [output], nil, [])
            default:
                // max(x, min) then min(·, max); an absent bound is no operator.
                var v = input
                if let lo = a.min {
                    let t = a.max == nil ? output : computed(n.name + "/clip_min", shape)
                    emit(.maximum, [v, floats([lo], shape: [])], [t], .maximumMinimum, [])
                    v = t
                }
                if let hi = a.max { emit(.minimum, [v, floats([hi], shape: [])], [output], .maximumMinimum, []) }
                if a.min == nil, a.max == nil { emit(.reshape, [input, int32s(shape)], [output], .reshape, []) }
            }
        case .hardSigmoid:
            // max(0, min(1, α·x + β)).
            let scaled = computed(n.name + "/scaled", shape), shifted = computed(n.name + "/shifted", shape)
            let low = computed(n.name + "/clip_min", shape)
            emit(.mul, [input, floats([a.alpha ?? 0.2], shape: [])], [scaled], .mul, [.int8(0, 0)])
            emit(.add, [scaled, floats([a.beta ?? 0.5], shape: [])], [shifted], .add, [.int8(0, 0)])
            emit(.maximum, [shifted, floats([0], shape: [])], [low], .maximumMinimum, [])
            emit(.minimum, [low, floats([1], shape: [])], [output], .maximumMinimum, [])
        default:
            throw unsupported(n, "an activation TFLite has ('\(a.op.rawValue)' is none)")
        }
    }

    /// PAD, PADV2 (a constant other than 0) or MIRROR_PAD (reflect) over `pads` (begins, then ends).
    private mutating func pad(_ n: Node, _ x: String, _ y: Int) throws {
        let a = n.attributes
        let r = try shapeOf(x).count
        guard let pads = a.pads, pads.count == 2 * r else { throw unsupported(n, "2·rank pads") }
        let paddings = int32s((0..<r).flatMap { [pads[$0], pads[r + $0]] }, shape: [r, 2])
        switch a.mode ?? "constant" {
        case "constant" where (a.value ?? 0) == 0: emit(.pad, [try operand(x, n), paddings], [y], .pad, [])
        case "constant": emit(.padV2, [try operand(x, n), paddings, floats([a.value ?? 0], shape: [])], [y], .padV2, [])
        case "reflect": emit(.mirrorPad, [try operand(x, n), paddings], [y], .mirrorPad, [.int8(0, 0)])
        case let mode: throw unsupported(n, "constant or reflect padding (TFLite has no '\(mode)')")
        }
    }

    /// RESIZE_BILINEAR or RESIZE_NEAREST_NEIGHBOR to the output's size, where TFLite's sampling is the IR's.
    private mutating func resize(_ n: Node, _ x: String, _ y: Int, _ outShape: [Int]) throws {
        let a = n.attributes
        let mode = a.mode ?? "nearest", coordinates = a.coordinateMode ?? "half_pixel"
        let nearest = a.nearestMode ?? "round_prefer_floor"
        guard outShape.count == 4, a.antialias != true else { throw unsupported(n, "a feature map and no antialiasing") }
        let size = int32s([outShape[1], outShape[2]])
        let halfPixel = coordinates == "half_pixel" || (coordinates == "pytorch_half_pixel" && outShape[1] > 1 && outShape[2] > 1)
        if mode == "linear", halfPixel || coordinates == "align_corners" || coordinates == "asymmetric" {
            emit(.resizeBilinear, [try operand(x, n), size], [y], .resizeBilinear,
                 [.bool(2, coordinates == "align_corners"), .bool(3, halfPixel)])
        } else if mode == "nearest", (coordinates == "asymmetric" && nearest == "floor")
                    || ((halfPixel || coordinates == "align_corners") && nearest == "round_prefer_ceil") {
            // TFLite: floor(o·scale), or with half-pixel centres floor((o + ½)·scale) (round_prefer_ceil of
            // (o + ½)·scale − ½); aligned corners round(o·scale).
            emit(.resizeNearestNeighbor, [try operand(x, n), size], [y], .resizeNearestNeighbor,
                 [.bool(0, coordinates == "align_corners"), .bool(1, halfPixel)])
        } else {
            throw unsupported(n, "bilinear (half_pixel, align_corners or asymmetric) or nearest (asymmetric floor, or half_pixel "
                + "or align_corners with round_prefer_ceil) sampling, not \(mode) \(coordinates) \(nearest)")
        }
    }

    // MARK: Tensors

    mutating func add(_ t: TFLiteProgram.Tensor) -> Int {
        program.tensors.append(t)
        return program.tensors.count - 1
    }

    /// A computed tensor named `name`; registered as the IR tensor of that name.
    private mutating func computed(_ name: String, _ shape: [Int]) -> Int {
        let i = add(TFLiteProgram.Tensor(name: name, shape: shape, signature: nil))
        index[name] = i
        return i
    }

    /// The TFLite tensor of IR tensor `name`: a computed one, or a weight written as a constant.
    private mutating func operand(_ name: String, _ n: Node) throws -> Int {
        if let i = index[name] { return i }
        if tensors[name] != nil { return try constant(name) }
        throw ExportError.invalid(model: modelName, place: "node '\(n.name)' input", expected: "a computed tensor or a weight",
                                  actual: "'\(name)'")
    }

    /// The TFLite tensor of computed IR tensor `name`, carrying that name (nil when not computed): an identity's
    /// output is its input's tensor (no operator), so it gets a RESHAPE of its own, which a reader finds by name (the
    /// importer reads an exported detector up to its heads by their names).
    mutating func named(_ name: String) -> Int? {
        guard let i = index[name] else { return nil }
        guard program.tensors[i].name != name else { return i }
        let t = program.tensors[i]
        let copy = add(TFLiteProgram.Tensor(name: name, shape: t.shape, signature: nil, type: t.type))
        emit(.reshape, [i, int32s(t.shape)], [copy], .reshape, [.ints(0, t.shape.map { Int32(clamping: $0) })])
        index[name] = copy
        return copy
    }

    func shapeOf(_ name: String) throws -> [Int] {
        if let s = shapes[name] { return s }
        if let t = tensors[name] { return t.shape }
        throw ExportError.invalid(model: modelName, place: "tensor '\(name)'", expected: "a shape from shape inference", actual: "none")
    }

    /// Weight `name` as float32, transposed by `perm` or given the shape `reshape` (same element order).
    private mutating func constant(_ name: String, perm: [Int]? = nil, reshape: [Int]? = nil) throws -> Int {
        let key = "\(name)|\(perm ?? [])|\(reshape ?? [])"
        if let done = emittedConstants[key] { return done }
        guard let t = tensors[name] else {
            throw ExportError.invalid(model: modelName, place: "weight", expected: "a tensor in the model", actual: "'\(name)'")
        }
        if let kept = try TFLiteWeights.kept(t, perm: perm, reshape: reshape) {
            let i = dequantized(kept, name: name)
            emittedConstants[key] = i
            return i
        }
        var values = try floatValues(t)
        var shape = t.shape
        if let p = perm {
            values = WeightLayout.transpose(values, shape: shape, perm: p)
            shape = WeightLayout.permuted(shape, p)
        }
        if let r = reshape { shape = r }
        let i = floats(values, shape: shape, name: name)
        emittedConstants[key] = i
        return i
    }

    /// A compressed weight as its stored tensor behind a DEQUANTIZE (as TensorFlow's converter writes float16 and
    /// dynamic-range models); the DEQUANTIZE's float32 output is the weight `name`.
    private mutating func dequantized(_ kept: TFLiteWeights.Kept, name: String) -> Int {
        let stored: TFLiteProgram.Tensor
        switch kept {
        case let .int8(bytes, shape, quantization, note):
            stored = TFLiteProgram.Tensor(name: name + "/int8", shape: shape, signature: nil, type: .int8, buffer: program.buffer(bytes),
                                          quantization: quantization)
            notes += [note, Self.floatActivations]
        case let .float16(bytes, shape, note):
            stored = TFLiteProgram.Tensor(name: name + "/f16", shape: shape, signature: nil, type: .float16, buffer: program.buffer(bytes))
            notes.append(note)
        }
        let source = add(stored)
        let i = add(TFLiteProgram.Tensor(name: name, shape: stored.shape, signature: nil))
        emit(.dequantize, [source], [i], nil, [])
        return i
    }

    /// The note of a model with int8 weights (once: `TFLiteExporter` drops repeated notes).
    static let floatActivations = "activations stay float32 (DEQUANTIZE then float kernels): the model records no activation "
        + "ranges, so there is no full-integer export"

    /// A stored tensor's values as float32 (dequantized, with a note, when it is not float32).
    private mutating func floatValues(_ t: StoredTensor) throws -> [Float] {
        let count = try Checked.elementCount(t.shape, what: "weight '\(t.name)'")
        let need = try t.dtype.traits.byteCount(elements: count)
        guard t.bytes.count >= need else {
            throw ExportError.invalid(model: modelName, place: "weight '\(t.name)'", expected: "\(need) bytes", actual: "\(t.bytes.count)")
        }
        if t.dtype != .f32 { notes.append("\(t.name): \(t.dtype.name) weights dequantized to float32") }
        return try t.floats()
    }

    mutating func floats(_ values: [Float], shape: [Int], name: String? = nil) -> Int {
        let buffer = program.buffer(values.withUnsafeBytes { Array($0) })
        return add(TFLiteProgram.Tensor(name: name ?? "const/\(program.tensors.count)", shape: shape, signature: nil, type: .float32, buffer: buffer))
    }

    private mutating func zeros(_ count: Int) -> Int { floats([Float](repeating: 0, count: count), shape: [count]) }

    mutating func int32s(_ values: [Int], shape: [Int]? = nil) -> Int {
        let v = values.map { Int32(clamping: $0) }
        let buffer = program.buffer(v.withUnsafeBytes { Array($0) })
        return add(TFLiteProgram.Tensor(name: "const/\(program.tensors.count)", shape: shape ?? [values.count], signature: nil,
                                        type: .int32, buffer: buffer))
    }

    mutating func emit(_ op: Op, _ inputs: [Int], _ outputs: [Int], _ options: TFLiteProgram.OptionsType?, _ fields: [Field]) {
        program.nodes.append(TFLiteProgram.Node(op: op, inputs: inputs, outputs: outputs, optionsType: options, options: fields))
    }

    private func unsupported(_ n: Node, _ needs: String) -> ExportError {
        .unsupported(model: modelName, format: "TensorFlow Lite", place: "node '\(n.name)' (\(n.op.rawValue))", reason: "needs \(needs)")
    }
}
