import MLToolCore

/// BitShift, BitwiseAnd / Or / Xor / Not on integer tensors carried as float32 (exact below 2^24), expanded into
/// arithmetic: a shift is a product or floored quotient by 2^y; the binary bitwise ops split both operands into bits
/// (floor(x / 2^b) mod 2, two's complement for negative values) and weigh the combined bits back; Not is
/// 2^bits − 1 − x unsigned, −x − 1 signed. The element type (and so the width) comes from the operand: a graph input
/// or a constant read from the file; a computed operand of unknown type is refused.
extension ONNXGraphBuilder {
    /// (bits, signed) of the TensorProto integer element types: 2 uint8, 3 int8, 4 uint16, 5 int16, 6 int32,
    /// 7 int64, 12 uint32, 13 uint64.
    static let integerWidths: [Int32: (bits: Int, signed: Bool)] = [2: (8, false), 3: (8, true), 4: (16, false), 5: (16, true),
                                                                     6: (32, true), 7: (64, true), 12: (32, false), 13: (64, false)]

    /// (bits, signed) of the integer element type of input `index`.
    func integerType(_ node: ONNXFile.Node, _ index: Int) throws -> (bits: Int, signed: Bool) {
        let name = index < node.inputs.count ? node.inputs[index] : ""
        let type = elementTypes[name] ?? constants[name].map(\.dataType) ?? 0
        guard let w = Self.integerWidths[type] else {
            throw ImportError.invalid(file: file, place: "\(place(node)) input \(index)", expected: "an integer graph input or constant (its width)",
                                      actual: type == 0 ? "a computed tensor of unknown element type" : "element type \(type)")
        }
        return w
    }

    /// Div: of integer graph inputs, truncated toward zero (ONNX's integer division); else the float quotient.
    mutating func divide(_ node: ONNXFile.Node) throws {
        guard let x = node.inputs.first, let type = elementTypes[x], Self.integerWidths[type] != nil else {
            return try binary(node, .div)
        }
        let out = try outputName(node)
        let quotient = fresh("\(out).quotient")
        var divided = node
        divided.outputs = [quotient]
        try binary(divided, .div)
        var truncated = node
        (truncated.inputs, truncated.outputs) = ([quotient], [out])
        try function(truncated, .trunc)
    }

    /// BitShift (opset 11; signed types from 28): `direction` LEFT (x·2^y wrapped to the type's width, two's
    /// complement for 8- and 16-bit signed types) or RIGHT (floor(x / 2^y): arithmetic for signed types); a shift below 0 or of the
    /// width or more shifts by the width (0, or -1 for a negative x shifted right).
    mutating func bitShift(_ node: ONNXFile.Node) throws {
        guard node.inputs.count == 2 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "inputs X and Y", actual: "\(node.inputs)")
        }
        let direction = string(node, "direction", "")
        guard direction == "LEFT" || direction == "RIGHT" else {
            throw ImportError.invalid(file: file, place: "\(place(node)) direction", expected: "LEFT or RIGHT", actual: direction)
        }
        let (bits, signed) = try integerType(node, 0)
        let width = scalarConstant(node, "bits", Float(bits))
        let outside = try step(node, "Or", [step(node, "Less", [node.inputs[1], scalarConstant(node, "zero", 0)]),
                                            step(node, "GreaterOrEqual", [node.inputs[1], width])])
        let shift = try step(node, "Where", [outside, width, node.inputs[1]])
        let power = try step(node, "Pow", [scalarConstant(node, "two", 2), shift])
        let out = try outputName(node)
        if direction == "RIGHT" {
            // × 2^-y (exact), not Div: Div truncates integer inputs.
            try step(node, "Floor", [step(node, "Mul", [node.inputs[0], step(node, "Reciprocal", [power])])], output: out)
            return
        }
        let range = scalarConstant(node, "2^bits", Float(Double(sign: .plus, exponent: bits, significand: 1)))
        let product = try step(node, "Mul", [node.inputs[0], power])
        if !signed { try step(node, "Mod", [product, range], output: out); return }
        // A 32- or 64-bit signed result wraps only past 2^31, where float32 is no longer exact anyway (v + 2^31
        // would round away v's low bits); a shift by the width gives 0.
        if bits >= 32 { try step(node, "Where", [outside, scalarConstant(node, "zero", 0), product], output: out); return }
        // Two's complement: (v + 2^(bits-1)) mod 2^bits − 2^(bits-1).
        let half = scalarConstant(node, "2^(bits-1)", Float(Double(sign: .plus, exponent: bits - 1, significand: 1)))
        let wrapped = try step(node, "Mod", [step(node, "Add", [product, half]), range])
        try step(node, "Sub", [wrapped, half], output: out)
    }

    /// The bits of input `index` (least significant first): `count` of them, the last the sign when `signed`.
    private mutating func bits(_ node: ONNXFile.Node, _ index: Int, count: Int) throws -> [String] {
        let two = scalarConstant(node, "two", 2)
        return try (0..<count).map { b in
            // × 2^-b (exact), not Div: Div truncates integer inputs.
            let scaled = try step(node, "Mul", [node.inputs[index], scalarConstant(node, "2^-\(b)", 1 / Float(1 << b))])
            let shifted = try step(node, "Floor", [scaled])
            return try step(node, "Mod", [shifted, two])
        }
    }

    /// BitwiseAnd / Or / Xor (opset 18): bit by bit (a·b, a + b − a·b, a + b − 2·a·b), weighed back; integers
    /// beyond 2^24 in magnitude are not exact.
    mutating func bitwise(_ node: ONNXFile.Node, _ op: String) throws {
        guard node.inputs.count == 2 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "inputs A and B", actual: "\(node.inputs)")
        }
        let (width, signed) = try integerType(node, 0)
        // Values are exact below 2^24: bits from 24 up repeat the sign (signed) or are 0 (unsigned).
        let count = min(width, signed ? 25 : 24)
        let (a, b) = (try bits(node, 0, count: count), try bits(node, 1, count: count))
        var total: String?
        for i in 0..<count {
            let both = try step(node, "Mul", [a[i], b[i]])
            let bit: String
            switch op {
            case "And": bit = both
            case "Or": bit = try step(node, "Sub", [step(node, "Add", [a[i], b[i]]), both])
            default: bit = try step(node, "Sub", [step(node, "Add", [a[i], b[i]]), step(node, "Add", [both, both])])
            }
            let weight = Float(1 << i) * (signed && i == count - 1 ? -1 : 1)
            let weighed = try step(node, "Mul", [bit, scalarConstant(node, "weight\(i)", weight)])
            total = try total.map { try step(node, "Add", [$0, weighed]) } ?? weighed
        }
        try step(node, "Identity", [total ?? node.inputs[0]], output: outputName(node))
    }

    /// BitwiseNot (opset 18): 2^bits − 1 − x for unsigned types, −x − 1 for signed ones.
    mutating func bitwiseNot(_ node: ONNXFile.Node) throws {
        let (width, signed) = try integerType(node, 0)
        let top = signed ? -1 : Float(Double(sign: .plus, exponent: width, significand: 1) - 1)
        let x = try activation(node)
        try step(node, "Sub", [scalarConstant(node, "all_ones", top), x.name], output: outputName(node))
    }
}
