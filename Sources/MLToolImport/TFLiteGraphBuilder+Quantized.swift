import MLToolCore

/// Quantized TFLite: full-integer models (int8/uint8 activations with one scale and zero point each, int8 weights
/// with per-channel scales, int32 biases) and dynamic-range ones (int8 weights, float activations), imported into the
/// IR the ONNX QDQ importer makes (`ONNXGraphBuilder+Quantized.swift`):
/// - a computed int8/uint8 tensor holds its real values, scale · (q − zero point), made by a `quantize` node in mode
///   "values" after the float op (the codes a TFLite kernel writes, up to its rounding: docs/TFLITE.md); a graph
///   input of int8 codes takes real values and quantizes them, a graph output gives real values;
/// - conv, depthwise conv and dense weights are int8 model tensors with the file's per-channel scales (uint8 codes
///   q as int8 q − 128 with the zero point moved alike); an int32 bias is code · input scale · weight scale[c] in
///   float32, so the engine recovers the file's codes and requantizes (`Program.readInputCodes`);
/// - a fused activation is kept where it clamps codes inside the type's range, dropped where the output's codes
///   already imply it (TFLite's CalculateActivationRangeQuantized: ReLU6 on scale 6/255, zero point −128);
/// - QUANTIZE is a `quantize`, DEQUANTIZE of a computed tensor an `identity`.
extension TFLiteGraphBuilder {
    /// Ops that run on int8/uint8 tensors as their float op on real values followed by a `quantize` to the output's
    /// parameters.
    static let quantizedOps: Set<String> = [
        "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "SUB", "MUL", "AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN",
        "RESHAPE", "SQUEEZE", "CONCATENATION", "SOFTMAX", "LOGISTIC", "TANH", "HARD_SWISH", "RELU", "RELU6", "PAD", "PADV2",
        "TRANSPOSE", "STRIDED_SLICE", "SLICE", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "DEPTH_TO_SPACE", "MAXIMUM",
        "MINIMUM", "QUANTIZE", "DEQUANTIZE",
    ]

    /// Ops that move values without computing new ones: their output needs no `quantize` when it has its input's
    /// parameters.
    static let valueMoving: Set<String> = [
        "RESHAPE", "SQUEEZE", "TRANSPOSE", "STRIDED_SLICE", "SLICE", "MAX_POOL_2D", "DEPTH_TO_SPACE", "PAD",
    ]

    /// Ops whose constant input 1 may be int8 weights read as such (dynamic range or full integer).
    static let weightOps: Set<String> = ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"]

    /// The code range of an 8-bit tensor type (int8 9, uint8 3), nil for others.
    static func codeRange(_ type: Int8) -> ClosedRange<Int>? {
        switch type {
        case 9: return -128...127
        case 3: return 0...255
        default: return nil
        }
    }

    /// Whether tensor `i` is an 8-bit tensor computed at run time (a quantized activation).
    func isQuantizedActivation(_ i: Int) -> Bool {
        i >= 0 && i < graph.tensors.count && Self.codeRange(graph.tensors[i].type) != nil && !isConstant(i)
    }

    /// The one scale and zero point of 8-bit activation `i` and its code range (checked by
    /// `TFLiteImporter.checkQuantization`).
    func activationQuant(_ i: Int, _ c: TFLiteCall) throws -> (scale: Float, zeroPoint: Int, range: ClosedRange<Int>) {
        let t = graph.tensors[i]
        guard let range = Self.codeRange(t.type), let q = t.quantization, q.scales.count == 1 else {
            throw ImportError.invalid(file: file, place: c.place("tensor \(i) '\(t.name)' quantization"),
                                      expected: "one scale and zero point (a quantized activation)",
                                      actual: t.quantization.map { "\($0.scales.count) scales" } ?? "none")
        }
        return (q.scales[0], q.zeroPoints.first.map(Int.init) ?? 0, range)
    }

    /// Converts `c` with `convert`, quantized where its tensors are: int8 constants other than weights become their
    /// real values, an int32 bias its float value, and an 8-bit output is the float op's result quantized.
    mutating func convertQuantized(_ convert: TFLiteOps.Converter, _ c: TFLiteCall) throws {
        let o = try out(c)
        let outputQuantized = Self.codeRange(graph.tensors[o].type) != nil
        let quantizedInputs = c.inputs.filter(isQuantizedActivation)
        let int8Constants = c.inputs.enumerated().filter { $0.element >= 0 && isConstant($0.element) && Self.codeRange(graph.tensors[$0.element].type) != nil }
        guard outputQuantized || !quantizedInputs.isEmpty || !int8Constants.isEmpty else { return try convert(&self, c) }
        if c.opName == "DEQUANTIZE" && !int8Constants.isEmpty { return try convert(&self, c) }
        guard Self.quantizedOps.contains(c.opName) || (!outputQuantized && quantizedInputs.isEmpty && Self.weightOps.contains(c.opName)) else {
            let t = graph.tensors[outputQuantized ? o : (quantizedInputs.first ?? int8Constants[0].element)]
            throw ImportError.unsupported(file: file, ops: [.init(op: "\(c.opName) on \(TFLiteFile.typeName(t.type)) tensors ('\(t.name)')",
                                                                  count: 1, firstNodes: [c.node])])
        }
        for (k, i) in int8Constants {
            if k == 1 && Self.weightOps.contains(c.opName) { continue }
            setConstant(i, try dequantizedConstant(i, c))
        }
        if Self.weightOps.contains(c.opName), !quantizedInputs.isEmpty, let b = try c.optionalInput(2, self), graph.tensors[b].type == 2 {
            try scaleBias(c, bias: b)
        }
        switch c.opName {
        case "DEQUANTIZE":
            return emit(c.node, .identity, [try input(try c.input(0, self))], output: c.output)
        case "QUANTIZE":
            return try emitQuantize(c, from: try input(try c.input(0, self)), tensor: o)
        default:
            break
        }
        guard outputQuantized else {
            guard let x = c.inputs.first, Self.weightOps.contains(c.opName), quantizedInputs.isEmpty,
                  int8Constants.contains(where: { $0.offset == 1 }), graph.tensors[x].type == 0 else { return try convert(&self, c) }
            let original = name(x)
            defer { rename(x, to: original) }
            if c.opName == "CONV_2D", shape(c.inputs[1]).count == 4, shape(c.inputs[1])[1...2] == [1, 1] {
                rename(x, to: rowQuantized(original, c))
                dequantizesWeights = true
                defer { dequantizesWeights = false }
                return try convert(&self, c)
            }
            // Dynamic range: LiteRT (XNNPACK's qd8 kernels) quantizes the float input of an int8-weight CONV_2D,
            // DEPTHWISE_CONV_2D or FULLY_CONNECTED with asymmetric 8-bit pairs from the range widened to 0: one per
            // image for a conv with a window (measured: its depthwise output is that within 3.3e-6 of the range, 0.19
            // from a symmetric pair, 0.079 from float input), the IR's `quantize` in mode "dynamic"; one per row of
            // its GEMM for a 1×1 conv and FULLY_CONNECTED (3.7e-7 per pixel, 7.1e-3 per image): a 1×1 conv reads
            // its input quantized per pixel by plain IR ops (`rowQuantized`) with its weights in float32 (the engine's
            // int8 GEMM would quantize the rows again, to 7 bits); a dense layer at batch 1 has one row, which the
            // dynamic quantize gives.
            let codes = fresh(c.output, "dynamic")
            var a = Attributes(min: 0, max: 255)
            a.mode = "dynamic"
            emit(c.node + ".dynamic", .quantize, [original], output: codes, a)
            rename(x, to: codes)
            return try convert(&self, c)
        }
        if Self.valueMoving.contains(c.opName), let x = c.inputs.first, isQuantizedActivation(x),
           try activationQuant(x, c) == activationQuant(o, c) {
            return try convert(&self, c)
        }
        var inner = c
        inner.output = fresh(c.output, "float")
        try convert(&self, inner)
        try emitQuantize(c, from: inner.output, tensor: o)
    }

    /// QUANTIZE to anything but int8/uint8 (`convertQuantized` converts those): refused naming the output type.
    func quantizeOp(_ c: TFLiteCall) throws {
        let t = graph.tensors[try out(c)]
        throw ImportError.unsupported(file: file, ops: [.init(op: "QUANTIZE to \(TFLiteFile.typeName(t.type))", count: 1, firstNodes: [c.node])])
    }

    /// `x` (NHWC) quantized per pixel as DynamicQuantizeLinear quantizes a tensor, then dequantized: over the
    /// channels, lo = min(min x, 0), hi = max(max x, 0), s = max((hi − lo) / 255, 2^−126), z = round(−lo / s),
    /// value = (clamp(round(x / s) + z, 0, 255) − z) · s (rounding halves to even), in IR ops.
    private mutating func rowQuantized(_ x: String, _ c: TFLiteCall) -> String {
        let zero = weight(c.output + ".row_zero", shape: [1], data: [0])
        let levels = weight(c.output + ".row_levels", shape: [1], data: [255])
        let tiny = weight(c.output + ".row_tiny", shape: [1], data: [Float.leastNormalMagnitude])
        var step = 0
        func node(_ op: Op, _ inputs: [String], _ a: Attributes = Attributes()) -> String {
            step += 1
            let out = fresh(c.output, "row\(step)")
            emit("\(c.node).row\(step)", op, inputs, output: out, a)
            return out
        }
        let lo = node(.binary, [node(.reduce, [x], Attributes(axes: [3], mode: ReduceFunction.min.rawValue)), zero], Attributes(mode: BinaryFunction.min.rawValue))
        let hi = node(.binary, [node(.reduce, [x], Attributes(axes: [3], mode: ReduceFunction.max.rawValue)), zero], Attributes(mode: BinaryFunction.max.rawValue))
        let s = node(.binary, [node(.div, [node(.sub, [hi, lo]), levels]), tiny], Attributes(mode: BinaryFunction.max.rawValue))
        let z = node(.unary, [node(.div, [node(.sub, [zero, lo]), s])], Attributes(mode: UnaryFunction.round.rawValue))
        let q = node(.clip, [node(.add, [node(.unary, [node(.div, [x, s])], Attributes(mode: UnaryFunction.round.rawValue)), z])],
                     Attributes(min: 0, max: 255))
        return node(.mul, [node(.sub, [q, z]), s])
    }

    /// A `quantize` in mode "values" of `source` into `c`'s output at output tensor `o`'s parameters.
    private mutating func emitQuantize(_ c: TFLiteCall, from source: String, tensor o: Int) throws {
        let q = try activationQuant(o, c)
        var a = Attributes(min: Float(q.range.lowerBound), max: Float(q.range.upperBound), mode: "values")
        a.quantScales = [q.scale]
        a.quantZeroPoints = [q.zeroPoint]
        emit(c.opName == "QUANTIZE" ? c.node : c.node + ".quantize", .quantize, [source], output: c.output, a)
    }

    /// The real values of 8-bit constant `i`: (q − zero point[c]) · scale[c] along quantized_dimension.
    private func dequantizedConstant(_ i: Int, _ c: TFLiteCall) throws -> [Float] {
        let codes = try constant(i, "\(c.opName) input")
        guard let q = graph.tensors[i].quantization else {
            throw ImportError.invalid(file: file, place: c.place("tensor \(i) '\(name(i))' quantization"), expected: "a scale for 8-bit values",
                                      actual: "none")
        }
        let (channels, inner) = try Self.channels(q, shape: shape(i), count: codes.count)
        return codes.indices.map { k in
            let ch = channels == 1 ? 0 : (k / inner) % channels
            return (codes[k] - Float(q.zeroPoints.isEmpty ? 0 : q.zeroPoints[ch])) * q.scales[ch]
        }
    }

    /// Channels and the elements per channel run of a tensor quantized by `q` (validated by `checkQuantization`).
    private static func channels(_ q: TFLiteFile.Quantization, shape: [Int], count: Int) throws -> (Int, Int) {
        let channels = q.scales.count
        guard channels > 1, q.dimension >= 0, q.dimension < shape.count else { return (1, max(count, 1)) }
        return (channels, max(shape[(q.dimension + 1)...].reduce(1, *), 1))
    }

    /// An int32 bias of a full-integer layer as floats, code · (input scale · weight scale[c]) in float32 (the
    /// product the engine divides by to recover the codes).
    private mutating func scaleBias(_ c: TFLiteCall, bias b: Int) throws {
        let x = try c.input(0, self), w = try c.input(1, self)
        let sx = try activationQuant(x, c).scale
        guard let qw = graph.tensors[w].quantization else {
            throw ImportError.invalid(file: file, place: c.place("weights '\(name(w))' quantization"), expected: "scales (an int32 bias needs them)",
                                      actual: "none")
        }
        let codes = try constant(b, "\(c.opName) bias")
        guard qw.scales.count == 1 || qw.scales.count == codes.count else {
            throw ImportError.invalid(file: file, place: c.place("bias '\(name(b))'"), expected: "\(qw.scales.count) values (one per weight scale)",
                                      actual: "\(codes.count)")
        }
        // A dead channel's bias (weights near 0, a scale near 1e-9) is clipped by the quantizer to −2^31, and
        // LiteRT's int32 sum wraps past it; the engine carries wrapping codes only up to ±(2^31 − 128)
        // (`QuantizedWeights.isInt32`), which shifts the wrapped sum by 128 codes of a tiny scale (~1e-6 output codes).
        setConstant(b, codes.indices.map { k in
            min(max(codes[k], -2_147_483_520), 2_147_483_520) * (sx * qw.scales[qw.scales.count == 1 ? 0 : k])
        })
    }

    /// A layer's weights, `data` in the IR layout `shape` (rearranged from weight input `k`): int8 codes with their
    /// scales along IR axis `axis` (the file's quantized_dimension `fileAxis`) when the file stores them quantized,
    /// float32 otherwise.
    mutating func layerWeight(_ c: TFLiteCall, _ k: Int, name base: String, shape: [Int], data: [Float], axis: Int, fileAxis: Int) throws -> String {
        let i = try c.input(k, self)
        let t = graph.tensors[i]
        guard let range = Self.codeRange(t.type) else { return weight(base, shape: shape, data: data) }
        guard let q = t.quantization else {
            throw ImportError.invalid(file: file, place: c.place("weights '\(name(i))' quantization"), expected: "scales for \(TFLiteFile.typeName(t.type)) weights",
                                      actual: "none")
        }
        let perChannel = q.scales.count > 1
        if dequantizesWeights {
            let inner = perChannel ? shape[(axis + 1)...].reduce(1, *) : 1
            return weight(base, shape: shape, data: data.indices.map { k in
                let ch = perChannel ? (k / inner) % q.scales.count : 0
                return (data[k] - Float(q.zeroPoints.isEmpty ? 0 : q.zeroPoints[ch])) * q.scales[ch]
            })
        }
        guard !perChannel || q.dimension == fileAxis else {
            throw ImportError.invalid(file: file, place: c.place("weights '\(name(i))' quantization.quantized_dimension"),
                                      expected: "\(fileAxis) (the output channels)", actual: "\(q.dimension)")
        }
        let shift = range.lowerBound == 0 ? 128 : 0
        let zeroPoints = (q.zeroPoints.isEmpty ? [Int64](repeating: 0, count: q.scales.count) : q.zeroPoints).map { Int($0) - shift }
        let codes = data.map { UInt8(bitPattern: Int8(clamping: Int($0) - shift)) }
        return store(base) {
            StoredTensor(name: $0, dtype: .int8, shape: shape,
                         quant: QuantParams(axis: perChannel ? axis : nil, scales: q.scales, zeroPoints: zeroPoints),
                         bytes: TensorBytes(copying: codes))
        }
    }

    /// Whether `activation` fused into `c` changes nothing: its code range (TFLite's CalculateActivationRangeQuantized,
    /// bounds rounded half away from zero) is the output type's whole range.
    func activationIsImplied(_ activation: Activation, _ c: TFLiteCall) throws -> Bool {
        let o = try out(c)
        guard Self.codeRange(graph.tensors[o].type) != nil, activation.op == .relu || activation.op == .clip else { return false }
        let q = try activationQuant(o, c)
        func code(_ v: Float) -> Int {
            let r = (v / q.scale).rounded(.toNearestOrAwayFromZero)
            return r.isFinite && abs(r) < 1e6 ? q.zeroPoint + Int(r) : (r > 0 ? Int.max / 2 : Int.min / 2)
        }
        let lo = activation.op == .relu ? code(0) : activation.min.map(code) ?? Int.min / 2
        let hi = activation.op == .relu ? Int.max / 2 : activation.max.map(code) ?? Int.max / 2
        return lo <= q.range.lowerBound && hi >= q.range.upperBound
    }
}
