import MLToolCore

/// Converters of TFLite's layers with weights, elementwise ops and pools (TFLite is NHWC: activations keep their
/// layout; weights move into the IR's).
extension TFLiteGraphBuilder {
    // MARK: - Options

    func optionInt(_ c: TFLiteCall, _ slot: Int, _ what: String, default value: Int32 = 0) throws -> Int {
        guard let t = c.options else { return Int(value) }
        return Int(try tfl.flat.int32(t, slot, what, default: value))
    }

    func optionByte(_ c: TFLiteCall, _ slot: Int, _ what: String, default value: Int8 = 0) throws -> Int {
        guard let t = c.options else { return Int(value) }
        return Int(try tfl.flat.int8(t, slot, what, default: value))
    }

    func optionBool(_ c: TFLiteCall, _ slot: Int, _ what: String) throws -> Bool {
        guard let t = c.options else { return false }
        return try tfl.flat.bool(t, slot, what)
    }

    /// The fused activation in options slot `slot` (ActivationFunctionType: NONE 0, RELU 1, RELU_N1_TO_1 2,
    /// RELU6 3, TANH 4); SIGN_BIT (5) and unknown codes are refused.
    /// An activation an 8-bit output's codes already imply is dropped (`activationIsImplied`).
    func fusedActivation(_ c: TFLiteCall, _ slot: Int) throws -> Activation? {
        let activation: Activation
        switch try optionByte(c, slot, "fused_activation_function") {
        case 0: return nil
        case 1: activation = .relu
        case 2: activation = Activation(op: .clip, min: -1, max: 1)
        case 3: activation = .relu6
        case 4: activation = Activation(op: .tanh)
        case let code:
            throw ImportError.unsupported(file: file, ops: [.init(op: "\(c.opName) with fused activation \(code)", count: 1, firstNodes: [c.node])])
        }
        return try activationIsImplied(activation, c) ? nil : activation
    }

    /// Emits `activation` as its own node from `input` to `output`.
    mutating func emitActivation(_ activation: Activation, node: String, input: String, output: String) {
        emit(node, activation.op, [input], output: output,
             Attributes(min: activation.min, max: activation.max, alpha: activation.alpha, beta: activation.beta))
    }

    /// Emits an op without a fused activation of its own, then the activation as a second node.
    mutating func emit(_ c: TFLiteCall, _ op: Op, _ inputs: [String], _ attributes: Attributes, activation: Activation?) {
        guard let activation else { return emit(c.node, op, inputs, output: c.output, attributes) }
        let pre = fresh(c.output, "linear")
        emit(c.node, op, inputs, output: pre, attributes)
        emitActivation(activation, node: c.node + ".activation", input: pre, output: c.output)
    }

    /// A rank-4 shape of input `k`.
    func shape4(_ c: TFLiteCall, _ k: Int) throws -> (index: Int, shape: [Int]) {
        let i = try c.input(k, self)
        let s = shape(i)
        guard s.count == 4 else {
            throw ImportError.invalid(file: file, place: c.place("input \(k) '\(name(i))'"), expected: "a rank-4 tensor", actual: "shape \(s)")
        }
        return (i, s)
    }

    /// Pads (begin, end) along one axis for TFLite's padding (0 SAME, 1 VALID): SAME pads
    /// max((out − 1)·stride + (k − 1)·dilation + 1 − in, 0) in all, out = ⌈in / stride⌉, the extra one at the end.
    func pads(_ input: Int, kernel: Int, stride: Int, dilation: Int, padding: Int, _ c: TFLiteCall) throws -> (Int, Int) {
        guard stride >= 1, dilation >= 1, kernel >= 1 else {
            throw ImportError.invalid(file: file, place: c.place("window"), expected: "kernel, stride and dilation ≥ 1",
                                      actual: "kernel \(kernel), stride \(stride), dilation \(dilation)")
        }
        switch padding {
        case 1: return (0, 0)
        case 0:
            let extent = try Checked.add(try Checked.mul(kernel - 1, dilation, file: file, what: c.place("kernel")), 1, file: file)
            let out = (input + stride - 1) / stride
            let total = max(try Checked.add(try Checked.mul(out - 1, stride, file: file, what: c.place("window")), extent, file: file) - input, 0)
            return (total / 2, total - total / 2)
        default:
            throw ImportError.invalid(file: file, place: c.place("padding"), expected: "0 (SAME) or 1 (VALID)", actual: "\(padding)")
        }
    }

    /// The IR's window attributes for an NHWC input of `size` (H, W).
    func window(_ c: TFLiteCall, size: [Int], kernel: [Int], strides: [Int], dilations: [Int], padding: Int) throws -> Attributes {
        var a = Attributes(kernel: kernel, strides: strides, dilations: dilations)
        if size.allSatisfy({ $0 >= 0 }) {
            let h = try pads(size[0], kernel: kernel[0], stride: strides[0], dilation: dilations[0], padding: padding, c)
            let w = try pads(size[1], kernel: kernel[1], stride: strides[1], dilation: dilations[1], padding: padding, c)
            a.pads = [h.0, w.0, h.1, w.1]
        } else {
            a.pads = [0, 0, 0, 0]
            // TFLite's SAME puts the odd pad at the end, as ONNX's SAME_UPPER.
            if padding == 0 { a.autoPad = "SAME_UPPER" }
        }
        return a
    }

    /// A constant weight of the given rank.
    func weightValues(_ c: TFLiteCall, _ k: Int, rank: Int) throws -> (index: Int, shape: [Int], values: [Float]) {
        let i = try c.input(k, self)
        let s = shape(i)
        guard s.count == rank else {
            throw ImportError.invalid(file: file, place: c.place("weights '\(name(i))'"), expected: "rank \(rank)", actual: "shape \(s)")
        }
        return (i, s, try constant(i, "\(c.opName) weights"))
    }

    /// Bias input `k` (optional), as a model tensor of `count` values.
    mutating func bias(_ c: TFLiteCall, _ k: Int, count: Int) throws -> [String] {
        guard let i = try c.optionalInput(k, self) else { return [] }
        let values = try constant(i, "\(c.opName) bias")
        guard values.count == count else {
            throw ImportError.invalid(file: file, place: c.place("bias '\(name(i))'"), expected: "\(count) values", actual: "\(values.count)")
        }
        return [try input(i)]
    }

    // MARK: - Convolutions

    /// CONV_2D: x (N,H,W,C), weights (OC,KH,KW,C/groups) → the IR's (KH,KW,C/groups,OC), bias (OC).
    mutating func conv(_ c: TFLiteCall) throws {
        let (x, xs) = try shape4(c, 0)
        let (_, ws, w) = try weightValues(c, 1, rank: 4)
        let (oc, kh, kw, ic) = (ws[0], ws[1], ws[2], ws[3])
        guard ic > 0, xs[3] < 0 || xs[3] % ic == 0 else {
            throw ImportError.invalid(file: file, place: c.place("weights"), expected: "input channels a multiple of \(ic)", actual: "\(xs[3])")
        }
        let groups = xs[3] < 0 ? 1 : xs[3] / ic
        var hwio = [Float](repeating: 0, count: w.count)
        for o in 0..<oc { for y in 0..<kh { for z in 0..<kw { for i in 0..<ic {
            hwio[((y * kw + z) * ic + i) * oc + o] = w[((o * kh + y) * kw + z) * ic + i]
        } } } }
        let weight = try layerWeight(c, 1, name: c.output + ".weight", shape: [kh, kw, ic, oc], data: hwio, axis: 3, fileAxis: 0)
        var a = try window(c, size: [xs[1], xs[2]], kernel: [kh, kw],
                           strides: [try optionInt(c, 2, "stride_h"), try optionInt(c, 1, "stride_w")],
                           dilations: [try optionInt(c, 5, "dilation_h_factor", default: 1), try optionInt(c, 4, "dilation_w_factor", default: 1)],
                           padding: try optionByte(c, 0, "padding"))
        a.kernel = nil
        a.groups = groups
        a.activation = try fusedActivation(c, 3)
        emit(c.node, .conv, [name(x), weight] + (try bias(c, 2, count: oc)), output: c.output, a)
    }

    /// DEPTHWISE_CONV_2D: weights (1,KH,KW,C·m) are already the IR's (KH,KW,1,C·m) for groups = C.
    mutating func depthwiseConv(_ c: TFLiteCall) throws {
        let (x, xs) = try shape4(c, 0)
        let (_, ws, w) = try weightValues(c, 1, rank: 4)
        guard ws[0] == 1, xs[3] > 0, ws[3] % xs[3] == 0 else {
            throw ImportError.invalid(file: file, place: c.place("weights"), expected: "shape (1, KH, KW, C·m) for \(xs[3]) input channels",
                                      actual: "\(ws)")
        }
        let weight = try layerWeight(c, 1, name: c.output + ".weight", shape: [ws[1], ws[2], 1, ws[3]], data: w, axis: 3, fileAxis: 3)
        var a = try window(c, size: [xs[1], xs[2]], kernel: [ws[1], ws[2]],
                           strides: [try optionInt(c, 2, "stride_h"), try optionInt(c, 1, "stride_w")],
                           dilations: [try optionInt(c, 6, "dilation_h_factor", default: 1), try optionInt(c, 5, "dilation_w_factor", default: 1)],
                           padding: try optionByte(c, 0, "padding"))
        a.kernel = nil
        a.groups = xs[3]
        a.activation = try fusedActivation(c, 4)
        emit(c.node, .conv, [name(x), weight] + (try bias(c, 2, count: ws[3])), output: c.output, a)
    }

    /// The IR's convTranspose from TFLite weights (OC,KH,KW,C) → (C,KH,KW,OC), pads from the output size the file
    /// gives (TFLite: total (H − 1)·s + KH − OH, the odd one at the end).
    private mutating func transposeConv(_ c: TFLiteCall, x: Int, weights k: Int, bias: Int?, strides: [Int], activation: Activation?) throws {
        let xs = shape(x)
        let (_, ws, w) = try weightValues(c, k, rank: 4)
        let (oc, kh, kw, ic) = (ws[0], ws[1], ws[2], ws[3])
        let os = shape(try out(c))
        guard xs.count == 4, os.count == 4, xs[3] == ic, strides.allSatisfy({ $0 >= 1 }) else {
            throw ImportError.invalid(file: file, place: c.place("shapes"), expected: "input (N,H,W,\(ic)), output rank 4, strides ≥ 1",
                                      actual: "input \(xs), output \(os), strides \(strides)")
        }
        var cio = [Float](repeating: 0, count: w.count)
        for o in 0..<oc { for y in 0..<kh { for z in 0..<kw { for i in 0..<ic {
            cio[((i * kh + y) * kw + z) * oc + o] = w[((o * kh + y) * kw + z) * ic + i]
        } } } }
        let weight = weight(c.output + ".weight", shape: [ic, kh, kw, oc], data: cio)
        var pads = [0, 0, 0, 0], extra = [0, 0]
        for (a, kernel) in [(0, kh), (1, kw)] {
            let full = try Checked.add(try Checked.mul(xs[1 + a] - 1, strides[a], file: file, what: c.place("size")), kernel, file: file)
            let total = full - os[1 + a]
            if total >= 0 { pads[a] = total / 2; pads[a + 2] = total - total / 2 } else { extra[a] = -total }
        }
        var a = Attributes(strides: strides, dilations: [1, 1], pads: pads, groups: 1, activation: activation)
        if extra != [0, 0] { a.outputPadding = extra }
        var inputs = [name(x), weight]
        if let bias {
            let values = try constant(bias, "\(c.opName) bias")
            guard values.count == oc else {
                throw ImportError.invalid(file: file, place: c.place("bias"), expected: "\(oc) values", actual: "\(values.count)")
            }
            inputs.append(try input(bias))
        }
        emit(c.node, .convTranspose, inputs, output: c.output, a)
    }

    /// TRANSPOSE_CONV: output_shape, weights (OC,KH,KW,C), x, bias? [TransposeConvOptions padding, strides, activation].
    mutating func transposeConv(_ c: TFLiteCall) throws {
        try transposeConv(c, x: try c.input(2, self), weights: 1, bias: try c.optionalInput(3, self),
                          strides: [try optionInt(c, 2, "stride_h"), try optionInt(c, 1, "stride_w")],
                          activation: try fusedActivation(c, 3))
    }

    /// MediaPipe's Convolution2DTransposeBias (mediapipe/util/tflite/operations/transpose_conv_bias.cc): x, weights
    /// (OC,KH,KW,C), bias (OC); custom_options the C struct TfLiteTransposeConvParams {padding, stride_width,
    /// stride_height} as three little-endian int32.
    mutating func transposeConvBias(_ c: TFLiteCall) throws {
        guard let range = c.op.customOptions, range.count >= 12 else {
            throw ImportError.invalid(file: file, place: c.place("custom_options"), expected: "12 bytes (TfLiteTransposeConvParams)",
                                      actual: "\(c.op.customOptions?.count ?? 0)")
        }
        let fb = tfl.flat
        let strides = [Int(Int32(bitPattern: try fb.u32(range.lowerBound + 8, "stride_height"))),
                       Int(Int32(bitPattern: try fb.u32(range.lowerBound + 4, "stride_width")))]
        try transposeConv(c, x: try c.input(0, self), weights: 1, bias: try c.input(2, self), strides: strides, activation: nil)
    }

    /// FULLY_CONNECTED: x (…, IN), weights (OUT, IN) → the IR's dense (IN, OUT); x of rank > 2 is read as (−1, IN)
    /// and the result takes the output's shape from the file (keep_num_dims).
    mutating func fullyConnected(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let (_, ws, w) = try weightValues(c, 1, rank: 2)
        guard try optionByte(c, 1, "weights_format") == 0 else {
            throw ImportError.unsupported(file: file, ops: [.init(op: "FULLY_CONNECTED with shuffled weights", count: 1, firstNodes: [c.node])])
        }
        let (units, inner) = (ws[0], ws[1])
        var io = [Float](repeating: 0, count: w.count)
        for o in 0..<units { for i in 0..<inner { io[i * units + o] = w[o * inner + i] } }
        let weight = try layerWeight(c, 1, name: c.output + ".weight", shape: [inner, units], data: io, axis: 1, fileAxis: 0)
        var source = name(x)
        if shape(x).count != 2 {
            source = fresh(c.output, "rows")
            emit(c.node + ".rows", .reshape, [name(x)], output: source, Attributes(shape: [-1, inner]))
        }
        let os = shape(try out(c))
        let a = Attributes(activation: try fusedActivation(c, 0))
        let inputs = [source, weight] + (try bias(c, 2, count: units))
        if os.count == 2 {
            emit(c.node, .dense, inputs, output: c.output, a)
        } else {
            let flat = fresh(c.output, "dense")
            emit(c.node, .dense, inputs, output: flat, a)
            emit(c.node + ".reshape", .reshape, [flat], output: c.output, Attributes(shape: os))
        }
    }

    // MARK: - Elementwise

    /// ADD, SUB, MUL, DIV with numpy broadcasting and the fused activation in options slot `optionsSlot`.
    mutating func binary(_ c: TFLiteCall, _ op: Op, optionsSlot: Int) throws {
        let a = try input(try c.input(0, self)), b = try input(try c.input(1, self))
        emit(c.node, op, [a, b], output: c.output, Attributes(activation: try fusedActivation(c, optionsSlot)))
    }

    /// MAXIMUM, MINIMUM, PRELU (x, alpha): a `binary` function.
    mutating func binaryFunction(_ c: TFLiteCall, _ f: BinaryFunction) throws {
        // MAXIMUM / MINIMUM of a tensor and one constant value is a clip: an activation the engine runs in place (or
        // fused into the op before it) instead of a broadcast binary op. The speech embedding has 19 of them, after
        // every LEAKY_RELU; as broadcasts they took 44% of its time.
        let x0 = try c.input(0, self), x1 = try c.input(1, self)
        if f == .max || f == .min, isConstant(x1), !isConstant(x0), shape(x0) == shape(try out(c)) {
            let bound = try constant(x1, c.place("bound"))
            if bound.count == 1, let v = bound.first, v.isFinite {
                return try unaryOp(c, f == .max ? Activation(op: .clip, min: v) : Activation(op: .clip, max: v))
            }
        }
        let a = try input(x0), b = try input(x1)
        emit(c.node, .binary, [a, b], output: c.output, Attributes(mode: f.rawValue))
    }

    /// LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, HARD_SWISH.
    mutating func unaryOp(_ c: TFLiteCall, _ activation: Activation) throws {
        emitActivation(activation, node: c.node, input: try input(try c.input(0, self)), output: c.output)
    }

    /// LEAKY_RELU [alpha]: x where x ≥ 0, alpha·x below (the speech embedding of issue 58 has 19).
    mutating func leakyRelu(_ c: TFLiteCall) throws {
        let alpha = try c.options.map { try tfl.flat.float32($0, 0, "alpha") } ?? 0
        try unaryOp(c, Activation(op: .leakyRelu, alpha: alpha))
    }

    /// SOFTMAX over the last axis of β·x.
    mutating func softmax(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        var source = try input(x)
        let beta = try c.options.map { try tfl.flat.float32($0, 0, "beta") } ?? 1
        if beta != 1 {
            let b = weight(c.output + ".beta", shape: [1], data: [beta])
            source = fresh(c.output, "scaled")
            emit(c.node + ".beta", .mul, [name(x), b], output: source)
        }
        emit(c.node, .softmax, [source], output: c.output, Attributes(axis: max(shape(x).count - 1, 0)))
    }

    /// DEQUANTIZE of a constant folds at import: float16 values as they are, int8/uint8 codes as
    /// (q − zero_point[c]) · scale[c], c the index along quantized_dimension.
    mutating func dequantize(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let values = try constant(x, "DEQUANTIZE input")
        let t = graph.tensors[x]
        let o = try out(c)
        guard try Checked.elementCount(shape(o), file: file, what: c.place("output shape")) == values.count else {
            throw ImportError.invalid(file: file, place: c.place("output '\(name(o))'"), expected: "\(values.count) elements (the input's)",
                                      actual: "shape \(shape(o))")
        }
        guard let q = t.quantization, t.type != 1, !values.isEmpty else { return setConstant(o, values) }
        let s = t.shape
        let channels = q.scales.count
        let dim = q.dimension
        guard channels == 1 || (dim >= 0 && dim < s.count && s[dim] == channels),
              q.zeroPoints.isEmpty || q.zeroPoints.count == channels else {
            throw ImportError.invalid(file: file, place: c.place("quantization of '\(t.name)'"),
                                      expected: "one scale or one per index of axis \(dim) of \(s)",
                                      actual: "\(channels) scales, \(q.zeroPoints.count) zero points")
        }
        let inner = channels == 1 ? values.count : s[(dim + 1)...].reduce(1, *)
        let folded = values.indices.map { i -> Float in
            let ch = channels == 1 ? 0 : (i / inner) % channels
            let zero = q.zeroPoints.isEmpty ? 0 : Float(q.zeroPoints[ch])
            return (values[i] - zero) * q.scales[ch]
        }
        setConstant(o, folded)
    }

    /// The first output of `c`.
    func out(_ c: TFLiteCall) throws -> Int {
        guard let o = c.outputs.first else {
            throw ImportError.invalid(file: file, place: c.place("outputs"), expected: "one output", actual: "none")
        }
        _ = try tensor(o, c.place("output"))
        return o
    }

    // MARK: - Pools

    /// MAX_POOL_2D, AVERAGE_POOL_2D [Pool2DOptions: padding, strides, filter size, activation]; TFLite's average
    /// divides by the number of unpadded inputs.
    mutating func pool(_ c: TFLiteCall, _ op: Op) throws {
        let (x, xs) = try shape4(c, 0)
        var a = try window(c, size: [xs[1], xs[2]],
                           kernel: [try optionInt(c, 4, "filter_height"), try optionInt(c, 3, "filter_width")],
                           strides: [try optionInt(c, 2, "stride_h"), try optionInt(c, 1, "stride_w")],
                           dilations: [1, 1], padding: try optionByte(c, 0, "padding"))
        a.dilations = nil
        a.ceilMode = false
        if op == .avgPool { a.countIncludePad = false }
        emit(c, op, [name(x)], a, activation: try fusedActivation(c, 5))
    }
}
