import CCoreMLProto
import MLToolCore

/// The MIL op registry: one converter per supported op type (MIL's names). "Unsupported" errors come from this
/// table alone. Ops are channel-first (conv weights (O, I/groups, KH, KW), linear weights (OUT, IN)).
enum CoreMLProgramOps {
    typealias Op = CoreML__Specification__MILOperation
    typealias Converter = @Sendable (inout CoreMLProgramReader, Op, [String]) throws -> Void

    /// Every converter: the ones below, then those of `CoreMLProgramOps+Tensor` and `+Layers` (which replace
    /// `reduce_mean`, `reduce_max` and `matmul` with their general forms) and `+Recurrent`.
    static let converters: [String: Converter] = baseConverters.merging(tensorConverters) { _, new in new }
        .merging(layerConverters) { _, new in new }.merging(recurrentConverters) { _, new in new }

    private static let baseConverters: [String: Converter] = [
        "const": { r, op, out in
            guard let v = attribute(op, "val") else { throw r.g.invalid("", expected: "attribute 'val'", actual: "none") }
            let t = try r.tensor(v, place: r.g.label)
            r.consts[out[0]] = t
            if t.strings.isEmpty { r.g.b.constants[out[0]] = t.constant }
        },
        "constexpr_affine_dequantize": { try $0.affineDequantize($1, $2) },
        "constexpr_lut_to_dense": { try $0.lutToDense($1, $2) },
        "cast": { r, op, out in
            let dtype = try r.string(op, "dtype", "fp32")
            guard ["fp32", "fp16"].contains(dtype) else { throw r.g.refused("a cast to \(dtype) (mltool computes in float32)") }
            try r.g.op("Identity", [r.required(op, "x")], out[0])
        },
        "identity": { r, op, out in try r.g.op("Identity", [r.required(op, "x")], out[0]) },
        "conv": { try $0.conv($1, $2) },
        "linear": { try $0.linear($1, $2) },
        "batch_norm": { try $0.batchNorm($1, $2) },
        "relu": { r, op, out in try r.g.op("Relu", [r.required(op, "x")], out[0]) },
        "sigmoid": { r, op, out in try r.g.op("Sigmoid", [r.required(op, "x")], out[0]) },
        "tanh": { r, op, out in try r.g.op("Tanh", [r.required(op, "x")], out[0]) },
        "relu6": { r, op, out in
            try r.g.op("Clip", [r.required(op, "x"), r.g.scalar(out[0] + ".min", 0), r.g.scalar(out[0] + ".max", 6)], out[0])
        },
        "silu": { r, op, out in
            let x = try r.required(op, "x")
            r.g.b.emit(out[0], .swish, [x], out[0])
            r.g.b.shapes[out[0]] = try r.g.need(x)
        },
        "leaky_relu": { r, op, out in
            try r.g.op("LeakyRelu", [r.required(op, "x")], out[0], ["alpha": CoreMLGraph.float(try r.float(op, "alpha", 0.01))])
        },
        "sigmoid_hard": { r, op, out in
            try r.g.op("HardSigmoid", [r.required(op, "x")], out[0],
                       ["alpha": CoreMLGraph.float(try r.float(op, "alpha", 0.2)), "beta": CoreMLGraph.float(try r.float(op, "beta", 0.5))])
        },
        "clip": { r, op, out in
            try r.g.op("Clip", [r.required(op, "x"), r.g.scalar(out[0] + ".min", try r.float(op, "alpha", 0)),
                                r.g.scalar(out[0] + ".max", try r.float(op, "beta", 0))], out[0])
        },
        "thresholded_relu": { r, op, out in try r.g.unary(.thresholdedRelu, r.required(op, "x"), out[0], alpha: r.float(op, "alpha", 1)) },
        "elu": { r, op, out in try r.g.unary(.elu, r.required(op, "x"), out[0], alpha: r.float(op, "alpha", 1)) },
        "softplus": { r, op, out in try r.g.unary(.softplus, r.required(op, "x"), out[0]) },
        "softsign": { r, op, out in try r.g.unary(.softsign, r.required(op, "x"), out[0]) },
        "exp": { r, op, out in try r.g.unary(.exp, r.required(op, "x"), out[0]) },
        "log": { r, op, out in try r.g.unary(.log, r.required(op, "x"), out[0], alpha: 0) },
        "sqrt": { r, op, out in try r.g.unary(.sqrt, r.required(op, "x"), out[0]) },
        "rsqrt": { r, op, out in try r.g.unary(.rsqrt, r.required(op, "x"), out[0], alpha: r.float(op, "epsilon", 1e-12)) },
        "inverse": { r, op, out in try r.g.unary(.reciprocal, r.required(op, "x"), out[0], alpha: r.float(op, "epsilon", 1e-4)) },
        "abs": { r, op, out in try r.g.unary(.abs, r.required(op, "x"), out[0]) },
        "prelu": { try $0.prelu($1, $2) },
        "add": { try $0.binary("Add", $1, $2) },
        "sub": { try $0.binary("Sub", $1, $2) },
        "mul": { try $0.binary("Mul", $1, $2) },
        "real_div": { try $0.binary("Div", $1, $2) },
        "concat": { r, op, out in
            guard try !r.bool(op, "interleave", false) else { throw r.g.refused("interleaved concatenation is not supported") }
            try r.g.op("Concat", r.variables(op, "values"), out[0], ["axis": CoreMLGraph.int(try r.int(op, "axis", 0))])
        },
        "reshape": { r, op, out in
            // A shape computed from a flexible input's size is a plan-time value (docs/FORMAT.md).
            let target = try r.required(op, "shape")
            let shape = r.consts[target].map { r.g.ints(out[0] + ".shape", $0.ints) } ?? target
            try r.g.op("Reshape", [r.required(op, "x"), shape], out[0])
        },
        "transpose": { r, op, out in
            try r.g.op("Transpose", [r.required(op, "x")], out[0], ["perm": CoreMLGraph.ints(try r.ints(op, "perm", []))])
        },
        "squeeze": { r, op, out in
            let x = try r.required(op, "x"), s = try r.g.need(x)
            let axes = try r.ints(op, "axes", s.indices.filter { s[$0] == 1 })
            try r.g.op("Squeeze", [x, r.g.ints(out[0] + ".axes", axes)], out[0])
        },
        "expand_dims": { r, op, out in
            try r.g.op("Unsqueeze", [r.required(op, "x"), r.g.ints(out[0] + ".axes", try r.ints(op, "axes", []))], out[0])
        },
        "softmax": { r, op, out in
            try r.g.op("Softmax", [r.required(op, "x")], out[0], ["axis": CoreMLGraph.int(try r.int(op, "axis", -1))])
        },
        "max_pool": { try $0.pool("MaxPool", $1, $2) },
        "avg_pool": { try $0.pool("AveragePool", $1, $2) },
        "upsample_nearest_neighbor": { r, op, out in
            let h = try r.float(op, "scale_factor_height", 1), w = try r.float(op, "scale_factor_width", 1)
            guard h == h.rounded(), w == w.rounded(), h >= 1, w >= 1, h <= 4096, w <= 4096 else {
                throw r.g.refused("fractional upsampling factors \(h)×\(w) are not supported")
            }
            try r.g.upsampleNearest(r.required(op, "x"), factors: [Int(h), Int(w)], out[0])
        },
        "pad": { try $0.pad($1, $2) },
        "classify": { r, op, out in
            guard let classes = try r.constInput(op, "classes") else { throw r.g.invalid("", expected: "input 'classes'", actual: "none") }
            r.labels = classes.strings.isEmpty ? classes.ints.map(String.init) : classes.strings
            r.probabilities = try r.required(op, "probabilities")
        },
    ]

    static func attribute(_ op: Op, _ key: String) -> CoreML__Specification__MILValue? {
        for i in 0..<op.n_attributes {
            if let e = op.attributes[i]?.pointee, cString(e.key) == key { return e.value?.pointee }
        }
        return nil
    }

    /// Every unsupported op type of the block, all at once.
    static func checkSupported(_ ops: [Op], file: String) throws {
        var counts: [String: (count: Int, names: [String], order: Int)] = [:]
        for op in ops {
            let type = cString(op.type)
            guard converters[type] == nil else { continue }
            var e = counts[type] ?? (0, [], counts.count)
            e.count += 1
            if e.names.count < 3 { e.names.append(op.n_outputs > 0 ? cString(op.outputs[0]?.pointee.name) : "") }
            counts[type] = e
        }
        guard counts.isEmpty else {
            throw ImportError.unsupported(file: file, ops: counts.sorted { $0.value.order < $1.value.order }
                .map { ImportError.Unsupported(op: $0.key, count: $0.value.count, firstNodes: $0.value.names) })
        }
    }
}

extension CoreMLProgramReader {
    /// A constant weight input as an ONNX constant (its compression kept), registered under its variable name.
    mutating func weight(_ op: CoreMLProgramOps.Op, _ key: String) throws -> String? {
        guard let v = try variable(op, key) else { return nil }
        guard g.b.constants[v] != nil else { throw g.invalid("input '\(key)'", expected: "a constant", actual: "computed tensor '\(v)'") }
        return v
    }

    /// MIL's window padding → ONNX attributes (`pad` is [top, bottom, left, right]).
    mutating func window(_ op: CoreMLProgramOps.Op) throws -> [String: ONNXFile.Attribute] {
        switch try string(op, "pad_type", "valid") {
        case "valid": return ["pads": CoreMLGraph.ints([0, 0, 0, 0])]
        case "same": return ["auto_pad": CoreMLGraph.string("SAME_UPPER")]
        case "same_lower": return ["auto_pad": CoreMLGraph.string("SAME_LOWER")]
        case "custom":
            let p = try ints(op, "pad", [0, 0, 0, 0])
            guard p.count == 4 else { throw g.invalid("pad", expected: "4 values (2-D)", actual: "\(p)") }
            return ["pads": CoreMLGraph.ints([p[0], p[2], p[1], p[3]])]
        case let other: throw g.invalid("pad_type", expected: "valid, same, same_lower or custom", actual: other)
        }
    }

    /// `conv` (weights (O, I/groups, KH, KW)) or, as "ConvTranspose", `conv_transpose` (weights (C, OC/groups, KH,
    /// KW), and its optional `output_shape`).
    mutating func conv(_ op: CoreMLProgramOps.Op, _ out: [String], onnx: String = "Conv") throws {
        let x = try required(op, "x")
        guard let w = try weight(op, "weight") else { throw g.invalid("", expected: "input 'weight'", actual: "none") }
        var ins = [x, w]
        if let b = try weight(op, "bias") { ins.append(b) }
        var attrs = try window(op)
        attrs["strides"] = CoreMLGraph.ints(try ints(op, "strides", [1, 1]))
        attrs["dilations"] = CoreMLGraph.ints(try ints(op, "dilations", [1, 1]))
        attrs["group"] = CoreMLGraph.int(try int(op, "groups", 1))
        if onnx == "ConvTranspose", let shape = try constInput(op, "output_shape")?.ints, !shape.isEmpty {
            attrs["output_shape"] = CoreMLGraph.ints(Array(shape.suffix(2)))
        }
        try g.op(onnx, ins, out[0], attrs)
    }

    mutating func linear(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x")
        guard let w = try weight(op, "weight") else { throw g.invalid("", expected: "input 'weight'", actual: "none") }
        let b = try weight(op, "bias")
        let s = try g.need(x)
        if s.count == 2 { return try g.op("Gemm", [x, w] + (b.map { [$0] } ?? []), out[0], ["transB": CoreMLGraph.int(1)]) }
        guard var wt = g.b.constants[w] else { throw g.invalid("weight", expected: "a constant", actual: "none") }
        wt = wt.transposed([1, 0])
        let product = b == nil ? out[0] : g.fresh(out[0] + ".product")
        try g.op("MatMul", [x, g.constant(w + ".T", wt)], product)
        if let b { try g.op("Add", [product, b], out[0]) }
    }

    mutating func matmul(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x"), y = try required(op, "y")
        guard try !bool(op, "transpose_x", false) else { throw g.refused("transpose_x is not supported") }
        guard var c = g.b.constants[y] else { throw g.refused("a product of two computed tensors is not supported (y must be a constant)") }
        if try bool(op, "transpose_y", false) {
            guard c.rank == 2 else { throw g.refused("transpose_y of a rank-\(c.rank) constant is not supported") }
            c = c.transposed([1, 0])
        }
        try g.op("MatMul", [x, g.constant(y + ".matrix", c)], out[0])
    }

    mutating func batchNorm(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x")
        guard let mean = try weight(op, "mean"), let variance = try weight(op, "variance"), let c = g.b.constants[mean] else {
            throw g.invalid("", expected: "inputs 'mean' and 'variance'", actual: "none")
        }
        let n = c.values.count
        let gamma = try weight(op, "gamma") ?? g.constant(out[0] + ".gamma", ONNXConstant(shape: [n], values: [Double](repeating: 1, count: n)))
        let beta = try weight(op, "beta") ?? g.constant(out[0] + ".beta", ONNXConstant(shape: [n], values: [Double](repeating: 0, count: n)))
        try g.op("BatchNormalization", [x, gamma, beta, mean, variance], out[0], ["epsilon": CoreMLGraph.float(try float(op, "epsilon", 1e-5))])
    }

    mutating func prelu(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x")
        guard let a = try weight(op, "alpha"), var slope = g.b.constants[a] else { throw g.invalid("", expected: "a constant 'alpha'", actual: "none") }
        let s = try g.need(x)
        if slope.values.count > 1, s.count == 4 { slope.shape = [slope.values.count, 1, 1] }
        slope.quant = nil
        try g.prelu(x, slope: slope, out[0])
    }

    mutating func binary(_ type: String, _ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        try g.op(type, [required(op, "x"), required(op, "y")], out[0])
    }

    mutating func pool(_ type: String, _ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        var attrs = try window(op)
        attrs["kernel_shape"] = CoreMLGraph.ints(try ints(op, "kernel_sizes", []))
        attrs["strides"] = CoreMLGraph.ints(try ints(op, "strides", [1, 1]))
        attrs["ceil_mode"] = CoreMLGraph.int(try bool(op, "ceil_mode", false) ? 1 : 0)
        if type == "AveragePool" { attrs["count_include_pad"] = CoreMLGraph.int(try bool(op, "exclude_padding_from_average", false) ? 0 : 1) }
        try g.op(type, [required(op, "x")], out[0], attrs)
    }

    mutating func pad(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x"), s = try g.need(x)
        let p = try ints(op, "pad", [])
        guard p.count % 2 == 0, p.count / 2 <= s.count else { throw g.invalid("pad", expected: "pairs for the last axes of \(s)", actual: "\(p)") }
        // MIL pads the last p.count/2 axes, (before, after) each; ONNX takes all begins then all ends.
        let lead = s.count - p.count / 2
        let begins = [Int](repeating: 0, count: lead) + stride(from: 0, to: p.count, by: 2).map { p[$0] }
        let ends = [Int](repeating: 0, count: lead) + stride(from: 1, to: p.count, by: 2).map { p[$0] }
        let mode = try string(op, "mode", "constant")
        guard let onnxMode = ["constant": "constant", "reflect": "reflect", "replicate": "edge"][mode] else {
            throw g.invalid("mode", expected: "constant, reflect or replicate", actual: mode)
        }
        try g.op("Pad", [x, g.ints(out[0] + ".pads", begins + ends), g.scalar(out[0] + ".value", try float(op, "constant_val", 0))],
                 out[0], ["mode": CoreMLGraph.string(onnxMode)])
    }

    /// scale · (q − zero_point) along `axis`: int8 (or uint8, shifted by 128) codes kept as an int8 weight.
    mutating func affineDequantize(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        guard let q = try constInput(op, "quantized_data"), let scale = try constInput(op, "scale"), let zp = try constInput(op, "zero_point") else {
            throw g.invalid("", expected: "quantized_data, scale and zero_point", actual: "missing")
        }
        guard q.dataType == 21 || q.dataType == 31 else { throw g.invalid("quantized_data", expected: "int8 or uint8", actual: "data type \(q.dataType)") }
        let axis = try int(op, "axis", 0)
        guard axis >= 0, axis < max(q.shape.count, 1) else { throw g.invalid("axis", expected: "0..<\(q.shape.count)", actual: "\(axis)") }
        let n = q.shape.isEmpty ? 1 : q.shape[axis]
        guard n >= 1 else { throw g.invalid("quantized_data", expected: "a non-empty tensor", actual: "shape \(q.shape)") }
        guard (scale.values.count == 1 || scale.values.count == n), (zp.values.count == 1 || zp.values.count == n) else {
            throw g.invalid("scale", expected: "1 or \(n) values (axis \(axis) of \(q.shape))", actual: "\(scale.values.count) scales, \(zp.values.count) zero points")
        }
        let inner = q.shape.isEmpty ? 1 : q.shape[(axis + 1)...].reduce(1, *)
        let perChannel = scale.values.count > 1 || zp.values.count > 1
        let scales = (0..<n).map { Float(scale.values[scale.values.count == 1 ? 0 : $0]) }
        let zeros = (0..<n).map { zp.values[zp.values.count == 1 ? 0 : $0] }
        var c = ONNXConstant(shape: q.shape, values: q.values.indices.map { i in
            let ch = (i / inner) % n
            return Double(scales[ch] * (Float(q.values[i]) - Float(zeros[ch])))
        })
        let shift = q.dataType == 31 ? 128.0 : 0
        c.quant = .init(axis: perChannel ? axis : nil, scales: perChannel ? scales : [scales[0]],
                        zeroPoints: (perChannel ? zeros : [zeros[0]]).map { Int($0 - shift) })
        g.b.constants[out[0]] = c
    }

    /// lut[indices] reshaped to `shape` (iOS 16 form: one table of 2^bits entries, indices packed least significant
    /// bit first): kept as a palette weight.
    mutating func lutToDense(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        guard let lut = try constInput(op, "lut"), let packed = try constInput(op, "indices"), let shape = try constInput(op, "shape") else {
            throw g.invalid("", expected: "lut, indices and shape", actual: "missing")
        }
        let dims = shape.ints
        let count = try Checked.elementCount(dims, what: "\(file): \(g.label) shape")
        let entries = lut.values.count
        guard lut.shape.count == 1, [2, 4, 8, 16, 64, 256].contains(entries) else {
            throw g.refused("a look-up table of shape \(lut.shape) (one table of 2, 4, 16, 64 or 256 entries is supported)")
        }
        let bits = entries.trailingZeroBitCount
        let bytes = packed.values.map { UInt8(clamping: Int($0)) }
        guard bytes.count >= (count * bits + 7) / 8 else {
            throw g.invalid("indices", expected: "\((count * bits + 7) / 8) bytes for \(count) \(bits)-bit indices", actual: "\(bytes.count)")
        }
        let table = lut.values.map { Float($0) }
        var c = ONNXConstant(shape: dims, values: bytes.withUnsafeBytes { raw in
            (0..<count).map { Double(table[PackedBits.get(raw, index: $0, bits: bits)]) }
        })
        c.quant = .init(axis: nil, scales: [], zeroPoints: [], lut: table, lutBits: bits)
        g.b.constants[out[0]] = c
    }
}
