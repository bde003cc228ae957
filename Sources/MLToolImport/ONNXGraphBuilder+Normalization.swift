import MLToolCore

/// LayerNormalization (opset 17) as the IR's `layerNorm` (its Mean and InvStdDev outputs as `layerNorm` nodes giving
/// those statistics); InstanceNormalization and GroupNormalization (opsets 18
/// and 21) as a `layerNorm` over each group's values (a reshape to (N, G, C/G · spatial), as ONNX defines them)
/// followed by the per-channel scale and bias. Statistics are computed in float32 whatever `stash_type` asks.
extension ONNXGraphBuilder {
    mutating func layerNormalization(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let r = x.shape.count
        let axis = try normalize(int(node, "axis", -1), rank: r, node)
        let normalized = Array(x.shape[axis...])
        guard normalized.allSatisfy({ $0 >= 0 }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "known sizes of the normalised axes \(axis)…\(r - 1) (use --input-size)",
                                      actual: "\(x.shape)")
        }
        let out = try output(of: node)
        var inputs = [x.name]
        // Over H and W (or W) of an NCHW tensor: not the trailing axes in NHWC, so on the NCHW order.
        let nchw = r == 4 && axis >= 2
        let src = nchw ? fresh("\(x.name).nchw") : x.name
        if nchw {
            emit("\(node.name).to_nchw", .transpose, [x.name], src, Attributes(perm: Layout.toNCHW))
            inputs = [src]
        }
        for (i, what) in [(1, "scale"), (2, "bias")] {
            guard let c = try optionalConstant(node, i, what: what) else {
                if i == 1 {
                    throw ImportError.invalid(file: file, place: place(node), expected: "input 1 (scale)", actual: "none")
                }
                continue
            }
            var full = try expanded(c, to: normalized, node, what)
            // The normalised axes of an NCHW tensor from axis 0 or 1 are NHWC-ordered in the IR.
            if r == 4 && !nchw { full = full.leftPadded(to: 4).transposed(Layout.toNHWC) }
            inputs.append(addWeight(node.inputs[i], shape: [full.values.count], values: full.floats))
        }
        let attrs = Attributes(axis: axis, epsilon: float(node, "epsilon", 1e-5))
        if axis == 0 { batchFree = false }
        if nchw {
            let y = fresh("\(out).nchw")
            emit(node.name, .layerNorm, inputs, y, attrs)
            emit("\(node.name).to_nhwc", .transpose, [y], out, Attributes(perm: Layout.toNHWC))
        } else {
            // Axes 0 and 1 start the same trailing axes in NHWC.
            emit(node.name, .layerNorm, inputs, out, attrs)
        }
        shapes[out] = x.shape
        let reduced = Array(x.shape[..<axis]) + [Int](repeating: 1, count: r - axis)
        for (i, mode) in [(1, "mean"), (2, "invStdDev")] where i < node.outputs.count && !node.outputs[i].isEmpty {
            let o = node.outputs[i]
            var statAttrs = attrs
            statAttrs.mode = mode
            if nchw {
                let y = fresh("\(o).nchw")
                emit("\(node.name).\(mode)", .layerNorm, [src], y, statAttrs)
                emit("\(node.name).\(mode).to_nhwc", .transpose, [y], o, Attributes(perm: Layout.toNHWC))
            } else {
                emit("\(node.name).\(mode)", .layerNorm, [x.name], o, statAttrs)
            }
            shapes[o] = reduced
        }
    }

    mutating func instanceNormalization(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let scale = try constant(node, 1, what: "scale"), bias = try constant(node, 2, what: "B")
        guard x.shape.count >= 3 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an input (N, C, spatial…) of rank ≥ 3", actual: "\(x.shape)")
        }
        let c = scale.values.count
        guard x.shape[1] < 0 || x.shape[1] == c, bias.values.count == c else {
            throw ImportError.invalid(file: file, place: "\(place(node)) scale and B", expected: "\(x.shape[1]) values each",
                                      actual: "\(scale.shape) and \(bias.shape)")
        }
        try groupNorm(node, x, groups: c, channels: c, scale: scale.floats, bias: bias.floats, epsilon: float(node, "epsilon", 1e-5))
    }

    mutating func groupNormalization(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let scale = try constant(node, 1, what: "scale"), bias = try constant(node, 2, what: "bias")
        guard x.shape.count >= 3, x.shape[1] > 0 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an input (N, C, spatial…) of rank ≥ 3 with known C", actual: "\(x.shape)")
        }
        let c = x.shape[1]
        guard let g = node.attributes["num_groups"]?.i, g >= 1, g <= c, c % g == 0 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) num_groups", expected: "a divisor of the \(c) channels",
                                      actual: node.attributes["num_groups"]?.i.map(String.init) ?? "none")
        }
        // Opset 18 scales per group, 21 per channel.
        func perChannel(_ t: ONNXConstant, _ what: String) throws -> [Float] {
            if t.values.count == c { return t.floats }
            guard t.values.count == g, opset < 21 else {
                throw ImportError.invalid(file: file, place: "\(place(node)) \(what)", expected: opset < 21 ? "\(g) values (one per group)" : "\(c) values",
                                          actual: "\(t.shape)")
            }
            return (0..<c).map { Float(t.values[$0 / (c / g)]) }
        }
        try groupNorm(node, x, groups: g, channels: c, scale: perChannel(scale, "scale"), bias: perChannel(bias, "bias"),
                      epsilon: float(node, "epsilon", 1e-5))
    }

    /// (N, C, spatial…) → (N, G, C/G · spatial) → layerNorm over the last axis → back, then y · scale + bias per channel.
    private mutating func groupNorm(_ node: ONNXFile.Node, _ x: (name: String, shape: [Int]), groups: Int, channels: Int,
                                    scale: [Float], bias: [Float], epsilon: Float) throws {
        try onlyFirstOutput(node, "more than Y")
        let out = try output(of: node)
        if groups == channels, x.shape.count == 4, x.shape[1] == channels, x.shape.dropFirst(2).contains(where: { $0 < 0 }) {
            return try instanceNormOverFreeSizes(node, x, scale: scale, bias: bias, epsilon: epsilon, output: out)
        }
        guard x.shape.dropFirst(2).allSatisfy({ $0 >= 0 }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "known spatial sizes (use --input-size)", actual: "\(x.shape)")
        }
        let spatial = try knownCount(Array(x.shape.dropFirst(2)), node)
        let perGroup = (channels / groups).multipliedReportingOverflow(by: spatial)
        guard !perGroup.overflow else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a shape whose size fits in memory", actual: "\(x.shape)")
        }
        let grouped = [x.shape[0], groups, perGroup.partialValue]
        let a = fresh("\(out).groups"), b = fresh("\(out).normalized"), c = fresh("\(out).unscaled")
        try emitReshape("\(node.name).to_groups", input: x.name, from: x.shape, to: grouped, output: a)
        emit(node.name, .layerNorm, [a], b, Attributes(axis: 2, epsilon: epsilon))
        shapes[b] = grouped
        try emitReshape("\(node.name).from_groups", input: b, from: grouped, to: x.shape, output: c)
        let r = x.shape.count
        if r == 4 {
            // NHWC: the channel is the last axis.
            let names = [c, addWeight("\(node.name).scale", shape: [channels], values: scale),
                         addWeight("\(node.name).bias", shape: [channels], values: bias),
                         addWeight("\(node.name).mean", shape: [channels], values: [Float](repeating: 0, count: channels)),
                         addWeight("\(node.name).var", shape: [channels], values: [Float](repeating: 1, count: channels))]
            emit("\(node.name).affine", .batchNorm, names, out, Attributes(epsilon: 0))
        } else {
            let shape = [channels] + [Int](repeating: 1, count: r - 2)
            let m = fresh("\(out).scaled")
            emit("\(node.name).scale", .mul, [c, addWeight("\(node.name).scale", shape: shape, values: scale)], m)
            shapes[m] = x.shape
            emit("\(node.name).bias", .add, [m, addWeight("\(node.name).bias", shape: shape, values: bias)], out)
        }
        shapes[out] = x.shape
    }

    /// One group per channel of an image whose height or width is known only at run time: the statistics per image
    /// and channel as reductions over H and W (NHWC axes 1 and 2), (x − mean) · rsqrt(variance + ε), then the affine.
    private mutating func instanceNormOverFreeSizes(_ node: ONNXFile.Node, _ x: (name: String, shape: [Int]), scale: [Float],
                                                    bias: [Float], epsilon: Float, output out: String) throws {
        let stats = [x.shape[0], x.shape[1], 1, 1], channels = x.shape[1]
        let mean = fresh("\(out).mean"), centered = fresh("\(out).centered"), square = fresh("\(out).square"),
            variance = fresh("\(out).variance"), inverse = fresh("\(out).rstd"), normalized = fresh("\(out).normalized")
        let over = Attributes(axes: [1, 2], mode: ReduceFunction.mean.rawValue)
        emit("\(node.name).mean", .reduce, [x.name], mean, over)
        emit("\(node.name).center", .sub, [x.name, mean], centered)
        emit("\(node.name).square", .mul, [centered, centered], square)
        emit("\(node.name).variance", .reduce, [square], variance, over)
        emit("\(node.name).rstd", .unary, [variance], inverse, Attributes(alpha: epsilon, mode: UnaryFunction.rsqrt.rawValue))
        emit("\(node.name).normalize", .mul, [centered, inverse], normalized)
        for (name, shape) in [(mean, stats), (centered, x.shape), (square, x.shape), (variance, stats), (inverse, stats),
                              (normalized, x.shape)] {
            shapes[name] = shape
        }
        let names = [normalized, addWeight("\(node.name).scale", shape: [channels], values: scale),
                     addWeight("\(node.name).bias", shape: [channels], values: bias),
                     addWeight("\(node.name).mean", shape: [channels], values: [Float](repeating: 0, count: channels)),
                     addWeight("\(node.name).var", shape: [channels], values: [Float](repeating: 1, count: channels))]
        emit("\(node.name).affine", .batchNorm, names, out, Attributes(epsilon: 0))
        shapes[out] = x.shape
    }

    /// `c` broadcast (numpy rules) to `shape`.
    private func expanded(_ c: ONNXConstant, to shape: [Int], _ node: ONNXFile.Node, _ what: String) throws -> ONNXConstant {
        if c.shape == shape { return c }
        let r = shape.count
        guard c.rank <= r else {
            throw ImportError.invalid(file: file, place: "\(place(node)) \(what)", expected: "broadcastable to \(shape)", actual: "\(c.shape)")
        }
        let padded = [Int](repeating: 1, count: r - c.rank) + c.shape
        guard zip(padded, shape).allSatisfy({ $0 == $1 || $0 == 1 }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) \(what)", expected: "broadcastable to \(shape)", actual: "\(c.shape)")
        }
        let count = try knownCount(shape, node)
        var values = [Double](repeating: 0, count: count)
        for i in 0..<count {
            var rest = i, src = 0, step = 1
            for d in stride(from: r - 1, through: 0, by: -1) {
                let idx = rest % shape[d]
                rest /= shape[d]
                if padded[d] != 1 { src += idx * step }
                step *= padded[d]
            }
            values[i] = c.values[src]
        }
        return ONNXConstant(shape: shape, values: values)
    }

    private func onlyFirstOutput(_ node: ONNXFile.Node, _ what: String) throws {
        guard node.outputs.dropFirst().allSatisfy(\.isEmpty) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "only the first output used (not \(what))",
                                      actual: "outputs \(node.outputs)")
        }
    }

    private func output(of node: ONNXFile.Node) throws -> String {
        guard let o = node.outputs.first, !o.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        return o
    }
}
