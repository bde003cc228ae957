import MLToolCore

/// MIL ops of transformer and decoder networks: normalizations, gelu, matmul of two computed tensors,
/// conv_transpose (through `conv`), bilinear upsampling and resizing, crop.
extension CoreMLProgramOps {
    static let layerConverters: [String: Converter] = [
        "layer_norm": { try $0.layerNorm($1, $2) },
        "instance_norm": { try $0.instanceNorm($1, $2) },
        "gelu": { r, op, out in try r.g.gelu(r.required(op, "x"), mode: try r.string(op, "mode", "EXACT"), out[0]) },
        "matmul": { try $0.matmulAny($1, $2) },
        "conv_transpose": { try $0.conv($1, $2, onnx: "ConvTranspose") },
        "upsample_bilinear": { r, op, out in
            let h = try r.float(op, "scale_factor_height", 1), w = try r.float(op, "scale_factor_width", 1)
            let align = try r.bool(op, "align_corners", false)
            let half = try r.bool(op, "half_pixel_centers", !align)
            let mode = align ? "align_corners" : half ? "half_pixel" : "asymmetric"
            try r.g.op("Resize", [r.required(op, "x"), "", r.g.constant(out[0] + ".scales", ONNXConstant(shape: [4], values: [1, 1, Double(h), Double(w)]))],
                       out[0], ["mode": CoreMLGraph.string("linear"), "coordinate_transformation_mode": CoreMLGraph.string(mode)])
        },
        "resize_bilinear": { r, op, out in
            let x = try r.required(op, "x"), s = try r.g.need(x)
            guard s.count == 4 else { throw r.g.invalid("x", expected: "(N, C, H, W)", actual: "\(s)") }
            let modes = ["DEFAULT": "asymmetric", "ALIGN_CORNERS": "align_corners", "STRICT_ALIGN_CORNERS": "align_corners", "UNALIGN_CORNERS": "half_pixel"]
            let sampling = try r.string(op, "sampling_mode", "DEFAULT")
            guard let mode = modes[sampling] else { throw r.g.refused("sampling_mode \(sampling) is not supported") }
            let sizes = [s[0], s[1], try r.int(op, "target_size_height", 1), try r.int(op, "target_size_width", 1)]
            guard sizes.allSatisfy({ $0 >= 0 }) else { throw r.g.refused("resizing a tensor of unknown batch or channels \(s)") }
            try r.g.op("Resize", [x, "", "", r.g.ints(out[0] + ".sizes", sizes)], out[0],
                       ["mode": CoreMLGraph.string("linear"), "coordinate_transformation_mode": CoreMLGraph.string(mode)])
        },
        "crop": { r, op, out in
            let h = try r.ints(op, "crop_height", [0, 0]), w = try r.ints(op, "crop_width", [0, 0])
            guard h.count == 2, w.count == 2, (h + w).allSatisfy({ $0 >= 0 }) else {
                throw r.g.invalid("", expected: "crop_height and crop_width of 2 values ≥ 0", actual: "\(h), \(w)")
            }
            try r.g.op("Slice", [r.required(op, "x"), r.g.ints(out[0] + ".starts", [h[0], w[0]]),
                                 r.g.ints(out[0] + ".ends", [h[1] == 0 ? Self.past : -h[1], w[1] == 0 ? Self.past : -w[1]]),
                                 r.g.ints(out[0] + ".axes", [2, 3])], out[0])
        },
    ]

    static let past = CoreMLProgramReader.past
}

extension CoreMLProgramReader {
    /// A constant input, or a constant of `fill` shaped `shape` when the op leaves it out.
    mutating func weightOrFill(_ op: CoreMLProgramOps.Op, _ key: String, shape: [Int], fill: Double, base: String) throws -> String {
        if let w = try weight(op, key) { return w }
        guard shape.allSatisfy({ $0 >= 0 }) else { throw g.refused("no '\(key)' for a tensor of unknown size \(shape)") }
        let n = try Checked.elementCount(shape, what: "\(file): \(g.label) \(key)")
        return g.constant(base + "." + key, ONNXConstant(shape: shape, values: [Double](repeating: fill, count: n)))
    }

    /// `layer_norm(x, axes, gamma, beta, epsilon)` over trailing axes: ONNX LayerNormalization from the first.
    mutating func layerNorm(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x"), s = try g.need(x)
        let axes = try ints(op, "axes", [s.count - 1]).map { $0 < 0 ? $0 + s.count : $0 }.sorted()
        guard let first = axes.first, axes == Array(first..<s.count) else {
            throw g.refused("a layer norm over axes \(axes) of \(s) (only trailing axes are supported)")
        }
        let normalized = Array(s[first...])
        let gamma = try weightOrFill(op, "gamma", shape: normalized, fill: 1, base: out[0])
        let beta = try weightOrFill(op, "beta", shape: normalized, fill: 0, base: out[0])
        try g.op("LayerNormalization", [x, gamma, beta], out[0],
                 ["axis": CoreMLGraph.int(first), "epsilon": CoreMLGraph.float(try float(op, "epsilon", 1e-5))])
    }

    mutating func instanceNorm(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x"), s = try g.need(x)
        guard s.count >= 3 else { throw g.invalid("x", expected: "(N, C, …)", actual: "\(s)") }
        let gamma = try weightOrFill(op, "gamma", shape: [s[1]], fill: 1, base: out[0])
        let beta = try weightOrFill(op, "beta", shape: [s[1]], fill: 0, base: out[0])
        try g.op("InstanceNormalization", [x, gamma, beta], out[0], ["epsilon": CoreMLGraph.float(try float(op, "epsilon", 1e-5))])
    }

    /// `matmul(x, y, transpose_x, transpose_y)`: a constant y as before (`matmul`); otherwise a batched product of
    /// two computed tensors, each transposed over its last two axes first when asked.
    mutating func matmulAny(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let y = try required(op, "y")
        if g.isConstant(y), try !bool(op, "transpose_x", false) { return try matmul(op, out) }
        func operand(_ key: String, _ v: String) throws -> String {
            try bool(op, "transpose_" + key, false) ? try g.transposedLastTwo(v, out[0] + ".\(key)T") : v
        }
        try g.op("MatMul", [operand("x", try required(op, "x")), operand("y", y)], out[0])
    }
}
