import MLToolCore

/// Quantized ONNX on computed tensors: QuantizeLinear / DequantizeLinear (the QDQ format onnxruntime's
/// `quantize_static` writes) as the IR's `quantize` / `dequantize` (codes held as float32 values), and the operator
/// forms (QLinearConv, QLinearMatMul, com.microsoft's QLinearAdd, QGemm, ...) expanded into DequantizeLinear → the
/// float op → QuantizeLinear, whose constant weights fold into int8 model tensors (`ONNXFolding+Quant.swift`), so
/// conv and dense layers run on the engine's int8 kernels. A QuantizeLinear → DequantizeLinear pair becomes one
/// `quantize` node in mode "values" (`GraphPasses.fuseQuantizeDequantize`).
extension ONNXGraphBuilder {
    /// Code ranges by TensorProto element type: the integer types whose codes the IR holds exactly.
    static let codeRanges: [Int32: ClosedRange<Int>] = [2: 0...255, 3: -128...127, 4: 0...65535, 5: -32768...32767]

    /// Element types refused by name on computed tensors.
    static let refusedCodeTypes: [Int32: String] = [
        6: "int32 (codes beyond 2^24 are not exact in float32)", 17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
        20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
    ]

    /// The domain of the (De)QuantizeLinear nodes an operator form expands into: per-axis parameters are accepted
    /// whatever the file's opset (QLinearConv has had per-channel weights since opset 10).
    static let expansionDomain = "mltool.qlinear"

    /// The code type of a (De)QuantizeLinear: its zero point's, else `output_dtype` (QuantizeLinear, opset 21), else
    /// the input's when known, else uint8 (QuantizeLinear's default; a DequantizeLinear's arithmetic does not depend on
    /// it).
    private func codeType(_ node: ONNXFile.Node, zeroPoint: ONNXConstant?) throws -> (type: Int32, range: ClosedRange<Int>) {
        var type: Int32 = 2
        if let zp = zeroPoint, zp.dataType != 0 {
            type = zp.dataType
        } else if node.opType == "QuantizeLinear", let t = node.attributes["output_dtype"]?.i, t != 0 {
            type = Int32(truncatingIfNeeded: t)
        } else if node.opType == "DequantizeLinear", let t = elementTypes[node.inputs[0]] {
            type = t
        }
        if let why = Self.refusedCodeTypes[type] {
            throw ImportError.invalid(file: file, place: "\(place(node)) zero point type", expected: "uint8, int8, uint16 or int16 codes",
                                      actual: why)
        }
        guard let range = Self.codeRanges[type] else {
            throw ImportError.invalid(file: file, place: "\(place(node)) zero point type", expected: "uint8, int8, uint16 or int16 codes",
                                      actual: TensorReader.elementTypes[type]?.name ?? "element type \(type)")
        }
        return (type, range)
    }

    /// The IR attributes of a (De)QuantizeLinear of a computed tensor of ONNX shape `shape`.
    private func linearQuantAttributes(_ node: ONNXFile.Node, shape: [Int], range: ClosedRange<Int>) throws -> Attributes {
        if int(node, "block_size", 0) != 0 {
            throw ImportError.invalid(file: file, place: "\(place(node)) block_size", expected: "0 (per-tensor or per-axis; blocked quantization is not supported)",
                                      actual: "\(int(node, "block_size", 0))")
        }
        let scale = try constant(node, 1, what: "scale")
        let zp = try optionalConstant(node, 2, what: "zero point")
        guard scale.values.allSatisfy({ Float($0).isFinite && Float($0) != 0 }), !scale.values.isEmpty else {
            throw ImportError.invalid(file: file, place: "\(place(node)) scale", expected: "finite non-zero values", actual: "\(scale.values.prefix(8))")
        }
        let zps = zp?.values ?? [Double](repeating: 0, count: scale.values.count)
        guard zps.count == scale.values.count, zps.allSatisfy({ $0.rounded() == $0 && range.contains(Int($0)) }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) zero point", expected: "\(scale.values.count) integers in \(range)",
                                      actual: "\(zps.prefix(8))")
        }
        var attrs = Attributes(min: Float(range.lowerBound), max: Float(range.upperBound))
        attrs.quantScales = scale.values.map { Float($0) }
        attrs.quantZeroPoints = zps.map { Int($0) }
        if scale.rank >= 1 && (scale.values.count != 1 || node.attributes["axis"] != nil) {
            guard opset >= 13 || node.domain == Self.expansionDomain, scale.rank == 1 else {
                throw ImportError.invalid(file: file, place: "\(place(node)) scale", expected: "a scalar (per-tensor) or, from opset 13, a 1-D per-axis scale",
                                          actual: "\(scale.shape)")
            }
            let a = try normalize(int(node, "axis", 1), rank: shape.count, node)
            guard shape[a] < 0 || scale.values.count == shape[a] || scale.values.count == 1 else {
                throw ImportError.invalid(file: file, place: "\(place(node)) scale", expected: "\(shape[a]) values (axis \(a) of \(shape))",
                                          actual: "\(scale.shape)")
            }
            if scale.values.count != 1 { attrs.axis = Layout.irAxis(a, rank: shape.count) }
        }
        return attrs
    }

    /// QuantizeLinear of a computed tensor: the codes as float32 values.
    mutating func quantizeLinear(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let (type, range) = try codeType(node, zeroPoint: try optionalConstant(node, 2, what: "y_zero_point"))
        let attrs = try linearQuantAttributes(node, shape: x.shape, range: range)
        let out = try quantOutput(node)
        emit(node.name, .quantize, [x.name], out, attrs)
        shapes[out] = x.shape
        elementTypes[out] = type
    }

    /// DynamicQuantizeLinear → DequantizeLinear of a layer's input, as the dynamic-quantization rewrite makes it
    /// (`DynamicQuantizedChains`): the IR's `quantize` in mode "dynamic". The importer's own node: refused in a file.
    mutating func dynamicQuantizeValues(_ node: ONNXFile.Node) throws {
        guard node.domain == Self.expansionDomain else {
            throw ImportError.unsupported(file: file, ops: [.init(op: ONNXOps.key(node), count: 1, firstNodes: [node.name])])
        }
        let x = try activation(node)
        var attrs = Attributes(min: 0, max: 255)
        attrs.mode = "dynamic"
        let out = try quantOutput(node)
        emit(node.name, .quantize, [x.name], out, attrs)
        shapes[out] = x.shape
    }

    /// DequantizeLinear of a computed tensor (constants fold at import, keeping int8 codes as int8 weights).
    mutating func dequantizeLinear(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let (_, range) = try codeType(node, zeroPoint: try optionalConstant(node, 2, what: "x_zero_point"))
        var attrs = try linearQuantAttributes(node, shape: x.shape, range: range)
        (attrs.min, attrs.max) = (nil, nil)
        let out = try quantOutput(node)
        emit(node.name, .dequantize, [x.name], out, attrs)
        shapes[out] = x.shape
    }

    private func quantOutput(_ node: ONNXFile.Node) throws -> String {
        guard let o = node.outputs.first, !o.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        return o
    }

    // MARK: operator forms

    /// A node this importer makes while expanding `node`.
    private mutating func part(_ node: ONNXFile.Node, _ op: String, _ inputs: [String], _ output: String,
                               _ attributes: [String: ONNXFile.Attribute] = [:], domain: String = "") throws {
        try convert(ONNXFile.Node(name: fresh("\(node.name).\(op)"), opType: op, domain: domain, inputs: inputs, outputs: [output],
                                  attributes: attributes, label: place(node)))
    }

    private static func intAttribute(_ name: String, _ v: Int) -> ONNXFile.Attribute {
        var a = ONNXFile.Attribute(name: name, type: 2)
        a.i = v
        return a
    }

    /// Input `index` of `node` (codes with their scale and zero point at `index + 1`, `index + 2`) dequantized: a
    /// folded constant (int8 codes stay int8 weights) or a `dequantize` node; `axis` for per-channel parameters.
    private mutating func dequantized(_ node: ONNXFile.Node, _ index: Int, axis: Int? = nil) throws -> String {
        guard index + 1 < node.inputs.count, !node.inputs[index].isEmpty, !node.inputs[index + 1].isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "input \(index) with its scale", actual: "none")
        }
        let zp = index + 2 < node.inputs.count ? node.inputs[index + 2] : ""
        let out = fresh("\(node.inputs[index]).dequantized")
        try part(node, "DequantizeLinear", [node.inputs[index], node.inputs[index + 1], zp], out,
                 axis.map { ["axis": Self.intAttribute("axis", $0)] } ?? [:], domain: Self.expansionDomain)
        return out
    }

    /// The float result `value` quantized into `node`'s output with the scale and zero point at `index`, `index + 1`.
    private mutating func requantized(_ node: ONNXFile.Node, _ value: String, scale index: Int) throws {
        let zp = index + 1 < node.inputs.count ? node.inputs[index + 1] : ""
        try part(node, "QuantizeLinear", [value, node.inputs[index], zp], try quantOutput(node), domain: Self.expansionDomain)
    }

    /// A 32-bit bias (input `index`) of a QLinearConv / QGemm as floats: bias · a_scale · b_scale[c].
    private mutating func scaledBias(_ node: ONNXFile.Node, _ index: Int, aScale: Int, bScale: Int, count: Int) throws -> String? {
        guard let b = try optionalConstant(node, index, what: "bias") else { return nil }
        let sa = try constant(node, aScale, what: "input scale"), sb = try constant(node, bScale, what: "weight scale")
        guard b.values.count == count, sa.values.count == 1, sb.values.count == 1 || sb.values.count == count else {
            throw ImportError.invalid(file: file, place: "\(place(node)) bias", expected: "\(count) values, scales per tensor or per output channel",
                                      actual: "bias \(b.shape), scales \(sa.shape) and \(sb.shape)")
        }
        // onnxruntime: float(bias) · (float(a_scale) · float(b_scale)), in float32.
        let values = b.values.indices.map { c -> Double in
            let s = Float(sa.values[0]) * Float(sb.values[sb.values.count == 1 ? 0 : c])
            return Double(Float(b.values[c]) * s)
        }
        let name = fresh("\(node.inputs[index]).dequantized")
        constants[name] = ONNXConstant(shape: [count], values: values)
        return name
    }

    /// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B? (int32).
    mutating func qlinearConv(_ node: ONNXFile.Node) throws {
        let w = try constant(node, 3, what: "w")
        guard w.rank >= 3 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) w", expected: "rank ≥ 3 (OC, C/groups, kernel…)", actual: "\(w.shape)")
        }
        let x = try dequantized(node, 0)
        let weights = try dequantized(node, 3, axis: 0)
        var inputs = [x, weights]
        if let b = try scaledBias(node, 8, aScale: 1, bScale: 4, count: w.shape[0]) { inputs.append(b) }
        let y = fresh("\(node.outputs.first ?? node.name).float")
        var conv = node
        conv.inputs = inputs
        conv.outputs = [y]
        conv.opType = "Conv"
        conv.name = fresh("\(node.name).conv")
        conv.label = place(node)
        try convert(conv)
        try requantized(node, y, scale: 6)
    }

    /// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
    mutating func qlinearMatMul(_ node: ONNXFile.Node) throws {
        let a = try dequantized(node, 0)
        let bScale = try constant(node, 4, what: "b_scale")
        let b = try dequantized(node, 3, axis: bScale.values.count > 1 ? -1 : nil)
        let y = fresh("\(node.outputs.first ?? node.name).float")
        try part(node, "MatMul", [a, b], y)
        try requantized(node, y, scale: 6)
    }

    /// com.microsoft QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C? (int32), y_scale?, y_zp? [alpha, transA, transB];
    /// without y_scale the output is float.
    mutating func qgemm(_ node: ONNXFile.Node) throws {
        let a = try dequantized(node, 0)
        let bConst = try constant(node, 3, what: "B")
        let transB = int(node, "transB", 0)
        guard bConst.rank == 2 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) B", expected: "rank 2", actual: "\(bConst.shape)")
        }
        let n = bConst.shape[transB == 1 ? 0 : 1]
        let bScale = try constant(node, 4, what: "b_scale")
        let b = try dequantized(node, 3, axis: bScale.values.count > 1 ? (transB == 1 ? 0 : 1) : nil)
        var inputs = [a, b]
        if let c = try scaledBias(node, 6, aScale: 1, bScale: 4, count: n) { inputs.append(c) }
        let quantizedOutput = node.inputs.count > 7 && !node.inputs[7].isEmpty
        let y = quantizedOutput ? fresh("\(node.outputs.first ?? node.name).float") : try quantOutput(node)
        var attrs: [String: ONNXFile.Attribute] = [:]
        for key in ["alpha", "transA", "transB"] { attrs[key] = node.attributes[key] }
        try part(node, "Gemm", inputs, y, attrs)
        if quantizedOutput { try requantized(node, y, scale: 7) }
    }

    /// com.microsoft QLinearAdd / QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp.
    mutating func qlinearBinary(_ node: ONNXFile.Node, _ op: String) throws {
        let a = try dequantized(node, 0), b = try dequantized(node, 3)
        let y = fresh("\(node.outputs.first ?? node.name).float")
        try part(node, op, [a, b], y)
        try requantized(node, y, scale: 6)
    }

    /// com.microsoft QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool: X, X_scale, X_zp, Y_scale, Y_zp.
    mutating func qlinearUnary(_ node: ONNXFile.Node, _ op: String) throws {
        if op == "GlobalAveragePool", int(node, "channels_last", 0) != 0 {
            throw ImportError.invalid(file: file, place: "\(place(node)) channels_last", expected: "0 (NCHW input)", actual: "\(int(node, "channels_last", 0))")
        }
        let x = try dequantized(node, 0)
        let y = fresh("\(node.outputs.first ?? node.name).float")
        var attrs: [String: ONNXFile.Attribute] = [:]
        if op == "LeakyRelu" { attrs["alpha"] = node.attributes["alpha"] }
        try part(node, op, [x], y, attrs)
        try requantized(node, y, scale: 3)
    }

    /// com.microsoft QLinearConcat: Y_scale, Y_zp, then (X, X_scale, X_zp) per input [axis].
    mutating func qlinearConcat(_ node: ONNXFile.Node) throws {
        guard node.inputs.count >= 5, (node.inputs.count - 2) % 3 == 0 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "Y_scale, Y_zero_point, then 3 inputs per tensor",
                                      actual: "\(node.inputs.count) inputs")
        }
        var parts: [String] = []
        for i in stride(from: 2, to: node.inputs.count, by: 3) { parts.append(try dequantized(node, i)) }
        let y = fresh("\(node.outputs.first ?? node.name).float")
        try part(node, "Concat", parts, y, ["axis": node.attributes["axis"] ?? Self.intAttribute("axis", 0)])
        try requantized(node, y, scale: 0)
    }
}
