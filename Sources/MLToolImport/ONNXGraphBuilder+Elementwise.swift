import MLToolCore

/// Elementwise ONNX ops on computed tensors beyond the activations: unary math, comparisons and logic, Where, the
/// variadic Max / Min / Sum / Mean, Mod, PRelu and Cast. Constant inputs are folded before these run.
extension ONNXGraphBuilder {
    /// y = f(x) for a `UnaryFunction` (elementwise: no layout question).
    mutating func function(_ node: ONNXFile.Node, _ f: UnaryFunction, alpha: Float = 0, beta: Float? = nil) throws {
        var attrs = Attributes(alpha: alpha, mode: f.rawValue)
        attrs.beta = beta
        try unary(node, .unary, attrs)
    }

    /// Gelu (opset 20): `approximate` "none" (erf) or "tanh".
    mutating func gelu(_ node: ONNXFile.Node) throws {
        switch string(node, "approximate", "none") {
        case "none": try function(node, .gelu)
        case "tanh": try function(node, .geluTanh)
        case let other:
            throw ImportError.invalid(file: file, place: "\(place(node)) approximate", expected: "none or tanh", actual: other)
        }
    }

    /// IsInf: both signs (the default) or one (`detect_negative` / `detect_positive` 0), the latter as x = ±∞.
    mutating func isInf(_ node: ONNXFile.Node) throws {
        let (negative, positive) = (int(node, "detect_negative", 1) == 1, int(node, "detect_positive", 1) == 1)
        if negative && positive { return try function(node, .isInf) }
        let x = try activation(node)
        let out = try outputName(node)
        let limit = addWeight("\(node.name).limit", shape: [], values: [positive ? .infinity : negative ? -.infinity : .nan])
        emit(node.name, .binary, [x.name, limit], out, Attributes(mode: BinaryFunction.equal.rawValue))
        shapes[out] = x.shape
    }

    /// PRelu: the slope broadcast to x (numpy rules from opset 7; before it a 1-D slope of C values is per channel).
    mutating func prelu(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        var legacy = node
        if opset < 7, node.inputs.count > 1, var slope = constants[node.inputs[1]], slope.rank == 1,
           x.shape.count > 2, slope.shape[0] == x.shape[1], slope.shape[0] != 1 {
            slope.shape += [Int](repeating: 1, count: x.shape.count - 2)
            legacy.inputs[1] = fresh("\(node.inputs[1]).per_channel")
            constants[legacy.inputs[1]] = slope
        }
        if opset < 7 { legacy.attributes["broadcast"] = ONNXFile.Attribute(name: "broadcast", type: 2, i: 1) }
        try binary(legacy, .prelu)
    }

    /// A two-input `binary` op computing `f` (comparisons, logic, Mod, PRelu).
    mutating func binary(_ node: ONNXFile.Node, _ f: BinaryFunction) throws {
        try binary(node, .binary, Attributes(mode: f.rawValue))
    }

    /// Mod: `fmod` 1 is C's fmod (the dividend's sign), 0 the floored remainder (the divisor's sign).
    mutating func mod(_ node: ONNXFile.Node) throws {
        try binary(node, int(node, "fmod", 0) == 1 ? .fmod : .mod)
    }

    /// Max, Min, Sum, Mean of one or more inputs with broadcasting: a chain of two-input ops (Mean then scaled).
    mutating func variadic(_ node: ONNXFile.Node, _ f: BinaryFunction?, mean: Bool = false) throws {
        let inputs = node.inputs.filter { !$0.isEmpty }
        guard !inputs.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "at least one input", actual: "none")
        }
        let out = try outputName(node)
        var acc = inputs[0]
        if inputs.count == 1 {
            var single = node
            single.inputs = [acc]
            return try unary(single, .identity)
        }
        for (i, next) in inputs.dropFirst().enumerated() {
            let last = i == inputs.count - 2 && !mean
            let target = last ? out : fresh("\(out).\(i)")
            var step = node
            (step.name, step.inputs, step.outputs) = ("\(node.name).\(i)", [acc, next], [target])
            if let f { try binary(step, f) } else { try binary(step, .add) }
            acc = target
        }
        if mean {
            let scale = addWeight("\(node.name).1/n", shape: [], values: [1 / Float(inputs.count)])
            emit("\(node.name).mean", .mul, [acc, scale], out)
            shapes[out] = shapes[acc]
        }
    }

    /// Where(condition, a, b) with numpy broadcasting of all three; constants stored as weights in IR layout.
    mutating func select(_ node: ONNXFile.Node) throws {
        guard node.inputs.count == 3 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "3 inputs", actual: "\(node.inputs.count)")
        }
        let s = try node.inputs.map { try shape(of: $0, in: node) }
        let out = try broadcast(s[0], try broadcast(s[1], s[2], node), node)
        let names = try (0..<3).map { try rankedOperand(node, $0, shape: s[$0], outRank: out.count) }
        let o = try outputName(node)
        emit(node.name, .where, names, o)
        shapes[o] = out
    }

    /// Cast: to a float type nothing changes; to an integer type the value is truncated toward zero; to bool it
    /// becomes 1 or 0. Integer and bool tensors flow through the engine as float32 (exact to 2^24).
    mutating func cast(_ node: ONNXFile.Node) throws {
        let to = int(node, "to", 1)
        switch to {
        case 1, 10, 11, 16: try unary(node, .identity)
        case 2, 3, 4, 5, 6, 7, 12, 13: try function(node, .trunc)
        case 9: try function(node, .nonZero)
        default:
            throw ImportError.invalid(file: file, place: "\(place(node)) to", expected: "a numeric or bool element type",
                                      actual: TensorReader.elementTypes[Int32(truncatingIfNeeded: to)]?.name ?? "element type \(to)")
        }
    }

    /// Input `index` of a broadcasting op whose output has rank `outRank`, as an IR name: a lower-rank activation
    /// against a rank-4 output is reshaped to rank 4 first, constants are stored as weights. `mismatch` is the error's
    /// "actual" when the padded shape's NCHW and NHWC orders differ.
    mutating func rankedOperand(_ node: ONNXFile.Node, _ index: Int, shape s: [Int], outRank: Int,
                                mismatch: String? = nil) throws -> String {
        let name = node.inputs[index]
        guard outRank == 4, shapes[name] != nil, s.count < 4 else { return try operand(node, index, rank: outRank) }
        let padded = [Int](repeating: 1, count: 4 - s.count) + s
        guard Layout.orderFree(padded) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "broadcasting that keeps NCHW order",
                                      actual: mismatch ?? "input \(index) of shape \(s) against a rank-4 output")
        }
        let r = fresh("\(name).rank4")
        try emitReshape("\(node.name).rank4_\(index)", input: name, from: s, to: padded, output: r)
        return r
    }

    func outputName(_ node: ONNXFile.Node) throws -> String {
        guard let o = node.outputs.first, !o.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        return o
    }

    /// Clip with a computed bound (inputs `bounds`: 1 the minimum, 2 the maximum): max(x, min), then min(·, max).
    mutating func computedClip(_ node: ONNXFile.Node, _ bounds: [Int]) throws {
        let out = try outputName(node)
        var current = node.inputs[0]
        for i in bounds {
            var n = node
            n.name = i == bounds.last ? node.name : "\(node.name).min"
            n.inputs = [current, node.inputs[i]]
            n.outputs = [i == bounds.last ? out : fresh("\(out).atLeastMin")]
            try binary(n, .binary, Attributes(mode: (i == 1 ? BinaryFunction.max : .min).rawValue))
            current = n.outputs[0]
        }
    }
}
