import MLToolCore

/// ONNX ConvTranspose (opsets 1–22) on a 2-D (N, C, H, W) input; 1-D inputs are lifted to 2-D (`lifted`). The
/// weights (C, OC/groups, KH, KW) become the IR's (C, KH, KW, OC/groups). `output_shape` and `auto_pad` SAME_* turn
/// into explicit pads as onnxruntime computes them: the total padding is split with the odd row at the end for
/// SAME_UPPER and at the start otherwise; an output larger than the unpadded one gets the extra rows at the end
/// (`outputPadding`).
extension ONNXGraphBuilder {
    mutating func convTranspose(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        guard x.shape.count == 4 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a 1-D or 2-D (N, C, H, W) input", actual: "rank \(x.shape.count) \(x.shape)")
        }
        let w = try constant(node, 1, what: "weights")
        guard w.rank == 4 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) weights", expected: "rank 4 (C, OC/groups, KH, KW)", actual: "\(w.shape)")
        }
        let groups = int(node, "group", 1)
        let c = w.shape[0], kernel = [w.shape[2], w.shape[3]]
        guard groups >= 1, groups <= max(c, 1), c % groups == 0, x.shape[1] < 0 || x.shape[1] == c else {
            throw ImportError.invalid(file: file, place: "\(place(node)) weights", expected: "\(x.shape[1]) input channels over \(groups) groups",
                                      actual: "\(w.shape)")
        }
        guard kernel.allSatisfy({ $0 >= 1 && $0 <= Self.maxWindow }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) weights", expected: "kernel in 1…\(Self.maxWindow)", actual: "\(w.shape)")
        }
        if let k = ints(node, "kernel_shape"), k != kernel {
            throw ImportError.invalid(file: file, place: "\(place(node)) kernel_shape", expected: "\(kernel) (from the weights)", actual: "\(k)")
        }
        let strides = try boundedInts(node, "strides", count: 2, range: 1...Self.maxWindow, [1, 1])
        let dilations = try boundedInts(node, "dilations", count: 2, range: 1...Self.maxWindow, [1, 1])
        var extra = try boundedInts(node, "output_padding", count: 2, range: 0...Self.maxWindow, [0, 0])
        var pads = try boundedInts(node, "pads", count: 4, range: 0...Self.maxWindow, [0, 0, 0, 0])
        let autoPad = string(node, "auto_pad", "NOTSET")
        guard ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"].contains(autoPad) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) auto_pad", expected: "NOTSET, SAME_UPPER, SAME_LOWER or VALID", actual: autoPad)
        }
        if autoPad == "VALID" { pads = [0, 0, 0, 0] }
        if let target = try outputTarget(node, x.shape, strides: strides, autoPad: autoPad) {
            let geometry = (kernel: kernel, strides: strides, dilations: dilations)
            try padToOutput(node, x.shape, to: target, geometry, autoPad: autoPad, pads: &pads, extra: &extra)
        }
        let wName = addWeight(node.inputs[1], w.transposed([0, 2, 3, 1]))
        var inputs = [x.name, wName]
        let oc = w.shape[1].multipliedReportingOverflow(by: groups).partialValue
        if let b = try optionalConstant(node, 2, what: "bias") {
            guard b.values.count == oc else {
                throw ImportError.invalid(file: file, place: "\(place(node)) bias", expected: "\(oc) values", actual: "\(b.shape)")
            }
            inputs.append(addWeight(node.inputs[2], shape: [oc], values: b.floats))
        }
        guard let out = node.outputs.first, !out.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        var attrs = Attributes(kernel: kernel, strides: strides, dilations: dilations, pads: pads, groups: groups)
        if extra != [0, 0] { attrs.outputPadding = extra }
        emit(node.name, .convTranspose, inputs, out, attrs)
        let size = try (0..<2).map { i -> Int in
            guard x.shape[2 + i] >= 0 else { return -1 }
            guard let full = Self.transposedSize(x.shape[2 + i], kernel: kernel[i], stride: strides[i], dilation: dilations[i], extra: extra[i]),
                  full - pads[i] - pads[i + 2] > 0 else {
                throw ImportError.invalid(file: file, place: place(node), expected: "a non-empty output after pads \(pads)", actual: "input \(x.shape)")
            }
            return full - pads[i] - pads[i + 2]
        }
        shapes[out] = [x.shape[0], oc, size[0], size[1]]
    }

    /// The output height and width asked for: `output_shape`, or the input size times the stride for SAME_*.
    private func outputTarget(_ node: ONNXFile.Node, _ shape: [Int], strides: [Int], autoPad: String) throws -> [Int]? {
        if let given = ints(node, "output_shape") {
            // The spatial sizes, alone or after N and C.
            guard given.count == 2 || given.count == 4, given.allSatisfy({ $0 >= 1 && $0 <= Self.maxWindow }) else {
                throw ImportError.invalid(file: file, place: "\(place(node)) output_shape", expected: "2 sizes (or N, C and 2 sizes) in 1…\(Self.maxWindow)",
                                          actual: "\(given)")
            }
            return Array(given.suffix(2))
        }
        guard autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" else { return nil }
        return try (0..<2).map { i in
            guard shape[2 + i] >= 0 else {
                throw ImportError.invalid(file: file, place: "\(place(node)) auto_pad", expected: "a known input size (use --input-size)", actual: "\(shape)")
            }
            return shape[2 + i].multipliedReportingOverflow(by: strides[i]).partialValue
        }
    }

    /// Pads (and output padding) that give `target`: the total split with the odd row at the end for SAME_UPPER and
    /// at the start otherwise; an output larger than the unpadded one gets the extra rows at the end.
    private func padToOutput(_ node: ONNXFile.Node, _ shape: [Int], to target: [Int], _ g: (kernel: [Int], strides: [Int], dilations: [Int]),
                     autoPad: String, pads: inout [Int], extra: inout [Int]) throws {
        for i in 0..<2 {
            guard shape[2 + i] >= 0 else {
                throw ImportError.invalid(file: file, place: "\(place(node)) output_shape", expected: "a known input size (use --input-size)", actual: "\(shape)")
            }
            guard let full = Self.transposedSize(shape[2 + i], kernel: g.kernel[i], stride: g.strides[i], dilation: g.dilations[i], extra: extra[i]) else {
                throw ImportError.invalid(file: file, place: place(node), expected: "an output size that fits", actual: "input \(shape)")
            }
            let total = full - target[i]
            if total < 0 {
                (pads[i], pads[i + 2]) = (0, 0)
                extra[i] -= total
            } else {
                let small = total / 2, large = total - small
                (pads[i], pads[i + 2]) = autoPad == "SAME_UPPER" ? (small, large) : (large, small)
            }
        }
    }

    /// (n − 1)·stride + (kernel − 1)·dilation + 1 + extra: the unpadded output size, or nil when it overflows.
    static func transposedSize(_ n: Int, kernel: Int, stride: Int, dilation: Int, extra: Int) -> Int? {
        guard n >= 1, case let (a, o1) = (n - 1).multipliedReportingOverflow(by: stride), !o1,
              case let (b, o2) = (kernel - 1).multipliedReportingOverflow(by: dilation), !o2,
              case let (s, o3) = a.addingReportingOverflow(b), !o3,
              case let (t, o4) = s.addingReportingOverflow(1 + extra), !o4 else { return nil }
        return t
    }
}
