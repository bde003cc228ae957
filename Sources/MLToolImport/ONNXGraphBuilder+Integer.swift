import MLToolCore

/// ONNX's integer ops where they are not a dynamic-quantization chain (`ONNXGraphBuilder+DynamicQuantized.swift`
/// reads those as layers on int8 weights): DynamicQuantizeLinear with its three outputs, MatMulInteger and
/// ConvInteger, expanded into float ops that compute the integers the ops define. Codes, zero points and int32 sums
/// below 2^24 are exact in float32 (a sum beyond that rounds to float32, where ONNX's int32 would be exact).
extension ONNXGraphBuilder {
    /// DynamicQuantizeLinear (opset 11): y_scale = (max(x, 0) − min(x, 0)) / 255 (1 when that is 0), y_zero_point =
    /// round(clamp(−min / y_scale, 0, 255)), y = clamp(round(x / y_scale) + y_zero_point, 0, 255), halves to even;
    /// the scale and zero point are scalars.
    mutating func dynamicQuantizeLinear(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        guard node.outputs.count == 3, node.outputs.allSatisfy({ !$0.isEmpty }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "outputs y, y_scale and y_zero_point",
                                      actual: "\(node.outputs)")
        }
        let axes = ONNXFile.Attribute(name: "axes", type: 7, ints: Array(0..<x.shape.count))
        let whole = ONNXFile.Attribute(name: "keepdims", type: 2, i: 0)
        func extreme(_ op: String) throws -> String {
            if opset >= 18 {
                let a = expansionConstant(node, "axes", shape: [x.shape.count], values: (0..<x.shape.count).map(Double.init),
                                          integer: true)
                return try step(node, op, [x.name, a], [whole])
            }
            return try step(node, op, [x.name], [whole, axes])
        }
        let zero = scalarConstant(node, "zero", 0), one = scalarConstant(node, "one", 1)
        let top = scalarConstant(node, "qmax", 255)
        let lo = try step(node, "Min", [extreme("ReduceMin"), zero])
        let hi = try step(node, "Max", [extreme("ReduceMax"), zero])
        let range = try step(node, "Sub", [hi, lo])
        let scale = try step(node, "Where", [step(node, "Equal", [range, zero]), one, step(node, "Div", [range, top])],
                             output: node.outputs[1])
        let clamped = try step(node, "Clip", [step(node, "Neg", [step(node, "Div", [lo, scale])]), zero, top])
        let zp = try step(node, "Round", [clamped], output: node.outputs[2])
        let codes = try step(node, "Add", [step(node, "Round", [step(node, "Div", [x.name, scale])]), zp])
        try step(node, "Clip", [codes, zero, top], output: node.outputs[0])
        elementTypes[node.outputs[0]] = 2
        elementTypes[node.outputs[2]] = 2
    }

    /// MatMulInteger (opset 10): (A − a_zero_point) · (B − b_zero_point) in int32; a per-tensor a_zero_point, a
    /// b_zero_point per tensor or per column. A constant B is shifted here.
    mutating func matMulInteger(_ node: ONNXFile.Node) throws {
        let a = try shifted(node, 0, zeroPoint: 2, what: "a_zero_point")
        let b = try constantShift(node, 1, zeroPoint: 3, axis: -1) ?? shifted(node, 1, zeroPoint: 3, what: "b_zero_point")
        try step(node, "MatMul", [a, b], output: outputName(node))
        elementTypes[try outputName(node)] = 6
    }

    /// ConvInteger (opset 10): Conv(x − x_zero_point, w − w_zero_point) in int32 (padding is the zero point, 0 once
    /// shifted); w constant, its zero point per tensor or per output channel.
    mutating func convInteger(_ node: ONNXFile.Node) throws {
        let x = try shifted(node, 0, zeroPoint: 2, what: "x_zero_point")
        guard let w = try constantShift(node, 1, zeroPoint: 3, axis: 0) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) w", expected: "a constant (initializer)",
                                      actual: "computed tensor '\(node.inputs.count > 1 ? node.inputs[1] : "")'")
        }
        var conv = node
        (conv.opType, conv.domain, conv.inputs) = ("Conv", "", [x, w])
        try convert(conv)
        elementTypes[try outputName(node)] = 6
    }

    /// Input `index` less its zero point (input `zeroPoint`, one constant value; none: the input itself).
    private mutating func shifted(_ node: ONNXFile.Node, _ index: Int, zeroPoint: Int, what: String) throws -> String {
        guard let z = try optionalConstant(node, zeroPoint, what: what) else { return node.inputs[index] }
        guard z.values.count == 1 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) \(what)", expected: "one value (per tensor)",
                                      actual: "\(z.values.count) values")
        }
        return z.values[0] == 0 ? node.inputs[index] : try step(node, "Sub", [node.inputs[index], node.inputs[zeroPoint]])
    }

    /// Constant input `index` less its zero point (one value, or one per index along `axis`), as a new constant; nil
    /// when the input is computed.
    private mutating func constantShift(_ node: ONNXFile.Node, _ index: Int, zeroPoint: Int, axis: Int) throws -> String? {
        guard index < node.inputs.count, let w = constants[node.inputs[index]] else { return nil }
        let zps = try optionalConstant(node, zeroPoint, what: "zero point")?.values ?? [0]
        let ax = axis < 0 ? w.shape.count + axis : axis
        guard ax >= 0, ax < w.shape.count else {
            throw ImportError.invalid(file: file, place: "\(place(node)) input \(index)", expected: "rank above \(ax)",
                                      actual: "shape \(w.shape)")
        }
        guard zps.count == 1 || zps.count == w.shape[ax] else {
            throw ImportError.invalid(file: file, place: "\(place(node)) zero point",
                                      expected: "one value or \(w.shape[ax]) (one per index of axis \(ax))", actual: "\(zps.count) values")
        }
        let inner = w.shape.suffix(from: ax + 1).reduce(1, *), count = w.shape[ax]
        let values = w.values.enumerated().map { i, v in v - zps[zps.count == 1 ? 0 : (i / inner) % count] }
        return expansionConstant(node, "shifted", shape: w.shape, values: values, integer: true)
    }
}
