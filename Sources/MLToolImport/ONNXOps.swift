import MLToolCore

/// The ONNX op registry: one converter per supported op type. "Unsupported" errors come from this table alone.
enum ONNXOps {
    typealias Converter = @Sendable (inout ONNXGraphBuilder, ONNXFile.Node) throws -> Void

    static let converters: [String: Converter] = [
        "Conv": { try $0.conv($1) },
        "ConvTranspose": { try $0.convTranspose($1) },
        "Gemm": { try $0.gemm($1) },
        "MatMul": { try $0.matMul($1) },
        "Einsum": { try $0.einsum($1) },
        "DepthToSpace": { try $0.depthToSpace($1) },
        "SpaceToDepth": { try $0.spaceToDepth($1) },
        "Tile": { try $0.tile($1) },
        "BatchNormalization": { try $0.batchNorm($1) },
        "LayerNormalization": { try $0.layerNormalization($1) },
        "InstanceNormalization": { try $0.instanceNormalization($1) },
        "GroupNormalization": { try $0.groupNormalization($1) },
        "Relu": { try $0.unary($1, .relu) },
        "Sigmoid": { try $0.unary($1, .sigmoid) },
        "Tanh": { try $0.unary($1, .tanh) },
        "HardSwish": { try $0.unary($1, .hardSwish) },
        "Identity": { try $0.unary($1, .identity) },
        "Dropout": { try $0.dropout($1) },
        "Cast": { try $0.cast($1) },
        "Clip": { try $0.clip($1) },
        "LeakyRelu": { b, n in try b.unary(n, .leakyRelu, Attributes(alpha: b.float(n, "alpha", 0.01))) },
        "HardSigmoid": { b, n in
            try b.unary(n, .hardSigmoid, Attributes(alpha: b.float(n, "alpha", 0.2), beta: b.float(n, "beta", 0.5)))
        },
        "Softmax": { try $0.softmax($1) },
        "Add": { try $0.binary($1, .add) },
        "Sub": { try $0.binary($1, .sub) },
        "Mul": { try $0.binary($1, .mul) },
        "Div": { try $0.divide($1) },
        "MaxPool": { try $0.pool($1, .maxPool) },
        "AveragePool": { try $0.pool($1, .avgPool) },
        "GlobalAveragePool": { try $0.globalPool($1, .globalAvgPool) },
        "GlobalMaxPool": { try $0.globalPool($1, .globalMaxPool) },
        "Concat": { try $0.concat($1) },
        "Reshape": { try $0.reshapeLike($1) },
        "Flatten": { try $0.reshapeLike($1) },
        "Squeeze": { try $0.reshapeLike($1) },
        "Unsqueeze": { try $0.reshapeLike($1) },
        "Transpose": { try $0.transpose($1) },
        "Pad": { try $0.pad($1) },
        "Pow": { try $0.binary($1, .pow) },
        "Resize": { try $0.resize($1) },
        "Upsample": { try $0.resize($1) },
        "Split": { try $0.split($1) },
        "TopK": { try $0.topK($1) },
        "LSTM": { try $0.recurrent($1, .lstm) },
        "GRU": { try $0.recurrent($1, .gru) },
        "RNN": { try $0.recurrent($1, .rnn) },
        "Expand": { try $0.expand($1) },
        "NonMaxSuppression": { try $0.nonMaxSuppression($1) },
        // Control flow, inlined (ONNXGraphBuilder+Control.swift).
        "If": { try $0.ifNode($1) },
        "Loop": { try $0.loop($1) },
        "Scan": { try $0.scan($1) },
        // Elementwise math, comparisons and logic on computed tensors (ONNXGraphBuilder+Elementwise.swift).
        "Neg": { try $0.function($1, .neg) },
        "Floor": { try $0.function($1, .floor) },
        "Ceil": { try $0.function($1, .ceil) },
        "Round": { try $0.function($1, .round) },
        "Sign": { try $0.function($1, .sign) },
        "Abs": { try $0.function($1, .abs) },
        "Exp": { try $0.function($1, .exp) },
        "Log": { try $0.function($1, .log) },
        "Sqrt": { try $0.function($1, .sqrt) },
        "Reciprocal": { try $0.function($1, .reciprocal) },
        "Sin": { try $0.function($1, .sin) },
        "Cos": { try $0.function($1, .cos) },
        "Tan": { try $0.function($1, .tan) },
        "Asin": { try $0.function($1, .asin) },
        "Acos": { try $0.function($1, .acos) },
        "Atan": { try $0.function($1, .atan) },
        "Sinh": { try $0.function($1, .sinh) },
        "Cosh": { try $0.function($1, .cosh) },
        "Asinh": { try $0.function($1, .asinh) },
        "Acosh": { try $0.function($1, .acosh) },
        "Atanh": { try $0.function($1, .atanh) },
        "Erf": { try $0.function($1, .erf) },
        "Softplus": { try $0.function($1, .softplus) },
        "Softsign": { try $0.function($1, .softsign) },
        "Mish": { try $0.function($1, .mish) },
        "Gelu": { try $0.gelu($1) },
        "Elu": { b, n in try b.function(n, .elu, alpha: b.float(n, "alpha", 1)) },
        "Celu": { b, n in try b.function(n, .celu, alpha: b.float(n, "alpha", 1)) },
        "Selu": { b, n in
            try b.function(n, .selu, alpha: b.float(n, "alpha", 1.67326319217681884765625),
                           beta: b.float(n, "gamma", 1.05070102214813232421875))
        },
        "ThresholdedRelu": { b, n in try b.function(n, .thresholdedRelu, alpha: b.float(n, "alpha", 1)) },
        "Not": { try $0.function($1, .not) },
        "IsNaN": { try $0.function($1, .isNaN) },
        "IsInf": { try $0.isInf($1) },
        "Equal": { try $0.binary($1, BinaryFunction.equal) },
        "Less": { try $0.binary($1, BinaryFunction.less) },
        "LessOrEqual": { try $0.binary($1, BinaryFunction.lessOrEqual) },
        "Greater": { try $0.binary($1, BinaryFunction.greater) },
        "GreaterOrEqual": { try $0.binary($1, BinaryFunction.greaterOrEqual) },
        "And": { try $0.binary($1, BinaryFunction.and) },
        "Or": { try $0.binary($1, BinaryFunction.or) },
        "Xor": { try $0.binary($1, BinaryFunction.xor) },
        "PRelu": { try $0.prelu($1) },
        "Mod": { try $0.mod($1) },
        "Max": { try $0.variadic($1, .max) },
        "Min": { try $0.variadic($1, .min) },
        "Sum": { try $0.variadic($1, nil) },
        "Mean": { try $0.variadic($1, nil, mean: true) },
        "Where": { try $0.select($1) },
        // Along axes (ONNXGraphBuilder+Reduce.swift).
        "ReduceSum": { try $0.reduce($1, .sum) },
        "ReduceMean": { try $0.reduce($1, .mean) },
        "ReduceMax": { try $0.reduce($1, .max) },
        "ReduceMin": { try $0.reduce($1, .min) },
        "ReduceProd": { try $0.reduce($1, .prod) },
        "ReduceL1": { try $0.reduce($1, .l1) },
        "ReduceL2": { try $0.reduce($1, .l2) },
        "ReduceLogSum": { try $0.reduce($1, .logSum) },
        "ReduceLogSumExp": { try $0.reduce($1, .logSumExp) },
        "ReduceSumSquare": { try $0.reduce($1, .sumSquare) },
        "ArgMax": { try $0.argMax($1, largest: true) },
        "ArgMin": { try $0.argMax($1, largest: false) },
        "LogSoftmax": { try $0.softmaxLike($1, .logSoftmax) },
        "Hardmax": { try $0.softmaxLike($1, .hardmax) },
        // On computed data with constant indices (else folded with the shape arithmetic), or computed indices.
        "Gather": { try $0.gather($1) },
        "Slice": { try $0.slice($1) },
        // Expanded into ops converted above (ONNXGraphBuilder+Composite.swift, +Scatter.swift, +Attention.swift,
        // +GridSample.swift, +Bitwise.swift).
        "Shrink": { try $0.shrink($1) },
        "Trilu": { try $0.trilu($1) },
        "CastLike": { try $0.castLike($1) },
        "CumSum": { try $0.cumSum($1) },
        "CumProd": { try $0.cumProd($1) },
        "Compress": { try $0.compress($1) },
        "ReverseSequence": { try $0.reverseSequence($1) },
        "RMSNormalization": { try $0.rmsNormalization($1) },
        "LpNormalization": { try $0.lpNormalization($1) },
        "MeanVarianceNormalization": { try $0.meanVarianceNormalization($1) },
        "LRN": { try $0.lrn($1) },
        "LpPool": { try $0.lpPool($1) },
        "GatherElements": { try $0.gatherElements($1) },
        "GatherND": { try $0.gatherND($1) },
        "ScatterElements": { try $0.scatterElements($1) },
        "Scatter": { try $0.scatterElements($1) },
        "ScatterND": { try $0.scatterND($1) },
        "OneHot": { try $0.oneHot($1) },
        "Attention": { try $0.attention($1) },
        "GridSample": { try $0.gridSample($1) },
        "RotaryEmbedding": { try $0.rotaryEmbedding($1) },
        "CenterCropPad": { try $0.centerCropPad($1) },
        "AffineGrid": { try $0.affineGrid($1) },
        "TensorScatter": { try $0.tensorScatter($1) },
        "BitShift": { try $0.bitShift($1) },
        "BitwiseAnd": { try $0.bitwise($1, "And") },
        "BitwiseOr": { try $0.bitwise($1, "Or") },
        "BitwiseXor": { try $0.bitwise($1, "Xor") },
        "BitwiseNot": { try $0.bitwiseNot($1) },
        // Only as constant arithmetic (folded before conversion).
        "Constant": { try $0.foldOnly($1) },
        "Shape": { try $0.foldOnly($1) },
        "Size": { try $0.foldOnly($1) },
        "Range": { try $0.foldOnly($1) },
        "ConstantOfShape": { try $0.constantOfShape($1) },
        // Quantized ONNX (ONNXGraphBuilder+Quantized.swift): folded on constants, computed otherwise; the operator
        // forms expanded into DequantizeLinear → the float op → QuantizeLinear. Other domains by "domain.Op" (`key`).
        "DequantizeLinear": { try $0.dequantizeLinear($1) },
        "QuantizeLinear": { try $0.quantizeLinear($1) },
        "DynamicQuantizeValues": { try $0.dynamicQuantizeValues($1) },
        "DynamicQuantizeLinear": { try $0.dynamicQuantizeLinear($1) },
        "MatMulInteger": { try $0.matMulInteger($1) },
        "ConvInteger": { try $0.convInteger($1) },
        "QLinearConv": { try $0.qlinearConv($1) },
        "QLinearMatMul": { try $0.qlinearMatMul($1) },
        "com.microsoft.QGemm": { try $0.qgemm($1) },
        "com.microsoft.QLinearAdd": { try $0.qlinearBinary($1, "Add") },
        "com.microsoft.QLinearMul": { try $0.qlinearBinary($1, "Mul") },
        "com.microsoft.QLinearSigmoid": { try $0.qlinearUnary($1, "Sigmoid") },
        "com.microsoft.QLinearLeakyRelu": { try $0.qlinearUnary($1, "LeakyRelu") },
        "com.microsoft.QLinearGlobalAveragePool": { try $0.qlinearUnary($1, "GlobalAveragePool") },
        "com.microsoft.QLinearConcat": { try $0.qlinearConcat($1) },
    ]

    /// A node's key in `converters`: its op type in the default domain (and in the expansions of quantized operator
    /// forms), else "domain.OpType".
    static func key(_ node: ONNXFile.Node) -> String {
        ["", "ai.onnx", ONNXGraphBuilder.expansionDomain].contains(node.domain) ? node.opType : "\(node.domain).\(node.opType)"
    }
}

extension ONNXGraphBuilder {
    /// Converts one node: folds it when it is constant, else runs its converter.
    mutating func convert(_ node: ONNXFile.Node) throws {
        if try fold(node) { return }
        guard let converter = ONNXOps.converters[ONNXOps.key(node)] else {
            throw ImportError.unsupported(file: file, ops: [.init(op: ONNXOps.key(node), count: 1, firstNodes: [node.name])])
        }
        let node = try withRunTimeInputs(node)
        if Self.liftable.contains(node.opType), let s = shapes[node.inputs.first ?? ""], s.count == 3 {
            return try lifted(node, converter)
        }
        if Self.spatial3D.contains(node.opType), let s = shapes[node.inputs.first ?? ""], s.count == 5 {
            return try convert3D(node, converter)
        }
        try converter(&self, node)
    }

    mutating func foldOnly(_ node: ONNXFile.Node) throws {
        // The elementwise ops claimed only for shape arithmetic are, on computed data, ops the engine lacks: they
        // are reported as unsupported, like any op outside the table.
        if Self.foldedElementwise.contains(node.opType) {
            throw ImportError.unsupported(file: file, ops: [ImportError.Unsupported(op: node.opType, count: 1, firstNodes: [node.name])])
        }
        throw ImportError.invalid(file: file, place: place(node), expected: "constant inputs (folded at import: shape arithmetic, weight dequantization)",
                                  actual: "computed inputs \(node.inputs.filter { shapes[$0] != nil })")
    }

    static let foldedElementwise: Set<String> = ["Range", "ConstantOfShape"]

    private func output(_ node: ONNXFile.Node) throws -> String {
        guard let o = node.outputs.first, !o.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        return o
    }

    // MARK: elementwise

    mutating func unary(_ node: ONNXFile.Node, _ op: Op, _ attrs: Attributes = Attributes()) throws {
        let x = try activation(node)
        let out = try output(node)
        emit(node.name, op, [x.name], out, attrs)
        shapes[out] = x.shape
    }

    mutating func dropout(_ node: ONNXFile.Node) throws {
        if opset >= 12, node.inputs.count > 2, !node.inputs[2].isEmpty {
            let training = try constant(node, 2, what: "training_mode")
            if !training.values.allSatisfy({ $0 == 0 }) {
                // Training mode drops at random, except with ratio 0 (the default ratio is 0.5).
                let ratio = try optionalConstant(node, 1, what: "ratio")?.scalar ?? 0.5
                guard ratio == 0 else {
                    throw ImportError.invalid(file: file, place: place(node), expected: "inference (training_mode false) or ratio 0",
                                              actual: "training_mode true, ratio \(ratio)")
                }
            }
        }
        if opset < 7 && int(node, "is_test", 0) == 0 {
            throw ImportError.invalid(file: file, place: place(node), expected: "inference mode", actual: "is_test = 0")
        }
        try unary(node, .identity)
    }

    mutating func clip(_ node: ONNXFile.Node) throws {
        let bounds = [1, 2].filter { opset >= 11 && $0 < node.inputs.count && !node.inputs[$0].isEmpty }
        if bounds.contains(where: { !isConstant(node.inputs[$0]) }) { return try computedClip(node, bounds) }
        var lo = -Float.greatestFiniteMagnitude, hi = Float.greatestFiniteMagnitude
        if opset < 11 {
            lo = float(node, "min", lo); hi = float(node, "max", hi)
        } else {
            if let c = try optionalConstant(node, 1, what: "min") { lo = Float(c.scalar ?? Double(lo)) }
            if let c = try optionalConstant(node, 2, what: "max") { hi = Float(c.scalar ?? Double(hi)) }
        }
        // min(max(x, lo), hi): when lo > hi every value becomes hi.
        try unary(node, .clip, Attributes(min: Swift.min(lo, hi), max: hi))
    }

    mutating func binary(_ onnxNode: ONNXFile.Node, _ op: Op, _ attrs: Attributes = Attributes()) throws {
        var node = onnxNode
        guard node.inputs.count >= 2 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "2 inputs", actual: "\(node.inputs.count)")
        }
        let sa = try shape(of: node.inputs[0], in: node)
        var sb = try shape(of: node.inputs[1], in: node)
        if opset < 7 {
            node.inputs[1] = try legacyBroadcast(node, a: sa, b: &sb)
        }
        let out = try broadcast(sa, sb, node)
        var names: [String] = []
        for (i, s) in [sa, sb].enumerated() {
            names.append(try rankedOperand(node, i, shape: s, outRank: out.count, mismatch: "\(sa) with \(sb)"))
        }
        let o = try output(node)
        emit(node.name, op, names, o, attrs)
        shapes[o] = out
    }

    /// Opset 6 and earlier: B is broadcast to A only with `broadcast = 1`, aligned at `axis` (default: trailing
    /// axes). Gives B the equivalent numpy shape (1s appended), as a new constant or a reshape.
    private mutating func legacyBroadcast(_ node: ONNXFile.Node, a: [Int], b: inout [Int]) throws -> String {
        let name = node.inputs[1]
        guard int(node, "broadcast", 0) == 1 else {
            guard a == b else {
                throw ImportError.invalid(file: file, place: place(node), expected: "equal shapes (broadcast = 0)", actual: "\(a) and \(b)")
            }
            return name
        }
        guard let axisAttr = node.attributes["axis"]?.i else { return name }
        let axis = axisAttr < 0 ? axisAttr + a.count : axisAttr
        let trailing = a.count - axis - b.count
        guard axis >= 0, trailing >= 0 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) axis", expected: "B \(b) to fit A \(a) at the axis", actual: "\(axisAttr)")
        }
        guard trailing > 0 else { return name }
        let padded = b + [Int](repeating: 1, count: trailing)
        let aligned = fresh(name + ".aligned")
        if var c = constants[name] {
            c.shape = padded
            constants[aligned] = c
        } else {
            try emitReshape("\(node.name).align", input: name, from: b, to: padded, output: aligned)
        }
        b = padded
        return aligned
    }

    mutating func softmax(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let r = x.shape.count
        let axis = try normalize(int(node, "axis", opset < 13 ? 1 : -1), rank: r, node)
        let out = try output(node)
        if opset >= 13 || axis == r - 1 {
            emit(node.name, .softmax, [x.name], out, Attributes(axis: Layout.irAxis(axis, rank: r)))
            shapes[out] = x.shape
            return
        }
        // Before opset 13 the input is coerced to 2-D at `axis` and the softmax runs over all trailing axes.
        if axis == 0 { batchFree = false }
        let flat = [Self.product(x.shape[..<axis]), Self.product(x.shape[axis...])]
        let a = fresh("\(out).2d"), b = fresh("\(out).softmax2d")
        try emitReshape("\(node.name).to2d", input: x.name, from: x.shape, to: flat, output: a)
        emit(node.name, .softmax, [a], b, Attributes(axis: 1))
        try emitReshape("\(node.name).back", input: b, from: flat, to: x.shape, output: out)
        shapes[out] = x.shape
    }

    // MARK: convolution, dense

    /// Explicit pads (top, left, bottom, right) from `pads` / `auto_pad` for a 2-D window; empty for SAME_* on a
    /// size known only at run time (the IR node then carries `autoPad`: `windowAttributes`).
    private func windowPads(_ node: ONNXFile.Node, input: [Int], kernel: [Int], strides: [Int], dilations: [Int]) throws -> [Int] {
        let autoPad = string(node, "auto_pad", "NOTSET")
        switch autoPad {
        case "NOTSET":
            return try boundedInts(node, "pads", count: 4, range: 0...Self.maxWindow, [0, 0, 0, 0])
        case "VALID": return [0, 0, 0, 0]
        case "SAME_UPPER", "SAME_LOWER":
            var begin = [0, 0], end = [0, 0]
            for i in 0..<2 {
                let n = input[2 + i]
                if n < 0 { return [] }
                let outSize = (n + strides[i] - 1) / strides[i]
                let total = max((outSize - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - n, 0)
                let small = total / 2, large = total - small
                (begin[i], end[i]) = autoPad == "SAME_UPPER" ? (small, large) : (large, small)
            }
            return [begin[0], begin[1], end[0], end[1]]
        default:
            throw ImportError.invalid(file: file, place: "\(place(node)) auto_pad", expected: "NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                                      actual: autoPad)
        }
    }

    private func spatialRank4(_ node: ONNXFile.Node, _ s: [Int]) throws {
        guard s.count == 4 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a 2-D (N, C, H, W) input", actual: "rank \(s.count) \(s)")
        }
    }

    mutating func conv(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        try spatialRank4(node, x.shape)
        let w = try constant(node, 1, what: "weights")
        guard w.rank == 4 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) weights", expected: "rank 4 (OC, C/groups, KH, KW)", actual: "\(w.shape)")
        }
        let groups = int(node, "group", 1)
        let oc = w.shape[0], kernel = [w.shape[2], w.shape[3]]
        guard groups >= 1, groups <= max(oc, 1), oc % groups == 0,
              x.shape[1] < 0 || x.shape[1] == w.shape[1].multipliedReportingOverflow(by: groups).partialValue else {
            throw ImportError.invalid(file: file, place: "\(place(node)) weights", expected: "\(x.shape[1]) input channels over \(groups) groups",
                                      actual: "\(w.shape)")
        }
        let strides = try boundedInts(node, "strides", count: 2, range: 1...Self.maxWindow, [1, 1])
        let dilations = try boundedInts(node, "dilations", count: 2, range: 1...Self.maxWindow, [1, 1])
        guard kernel.allSatisfy({ $0 <= Self.maxWindow }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) weights", expected: "kernel ≤ \(Self.maxWindow)", actual: "\(w.shape)")
        }
        let pads = try windowPads(node, input: x.shape, kernel: kernel, strides: strides, dilations: dilations)
        let wName = addWeight(node.inputs[1], w.transposed([2, 3, 1, 0]))
        var inputs = [x.name, wName]
        if let b = try optionalConstant(node, 2, what: "bias") {
            guard b.values.count == oc else {
                throw ImportError.invalid(file: file, place: "\(place(node)) bias", expected: "\(oc) values", actual: "\(b.shape)")
            }
            inputs.append(addWeight(node.inputs[2], shape: [oc], values: b.floats, quant: b.rank == 1 ? b.quant : nil))
        }
        let out = try output(node)
        var attrs = Attributes(kernel: kernel, strides: strides, dilations: dilations, pads: pads, groups: groups)
        if pads.isEmpty { automaticPads(&attrs, node) }
        emit(node.name, .conv, inputs, out, attrs)
        if pads.isEmpty { return shapes[out] = [x.shape[0], oc] + Self.sameSizes(x.shape, strides) }
        let oh = x.shape[2] < 0 ? -1 : (x.shape[2] + pads[0] + pads[2] - (kernel[0] - 1) * dilations[0] - 1) / strides[0] + 1
        let ow = x.shape[3] < 0 ? -1 : (x.shape[3] + pads[1] + pads[3] - (kernel[1] - 1) * dilations[1] - 1) / strides[1] + 1
        shapes[out] = [x.shape[0], oc, oh, ow]
    }

    mutating func gemm(_ node: ONNXFile.Node) throws {
        var a = try activation(node)
        guard a.shape.count == 2 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "input A of rank 2", actual: "\(a.shape)")
        }
        if int(node, "transA", 0) == 1 {
            let t = fresh("\(a.name).T")
            emit("\(node.name).transA", .transpose, [a.name], t, Attributes(perm: [1, 0]))
            a = (t, [a.shape[1], a.shape[0]])
            shapes[t] = a.shape
            batchFree = false
        }
        var b = try constant(node, 1, what: "B")
        guard b.rank == 2 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) B", expected: "rank 2", actual: "\(b.shape)")
        }
        if int(node, "transB", 0) == 1 { b = b.transposed([1, 0]) }
        let k = b.shape[0], n = b.shape[1]
        guard a.shape[1] < 0 || a.shape[1] == k else {
            throw ImportError.invalid(file: file, place: "\(place(node)) B", expected: "\(a.shape[1]) rows", actual: "\(b.shape)")
        }
        let alpha = Double(float(node, "alpha", 1)), beta = Double(float(node, "beta", 1))
        if alpha != 1 { b.values = b.values.map { $0 * alpha }; b.quant = nil }
        var inputs = [a.name, addWeight(node.inputs[1], b)]
        let out = try output(node)
        var biasActivation: String?
        if node.inputs.count > 2, !node.inputs[2].isEmpty {
            if let c = constants[node.inputs[2]], c.values.count == n || c.values.count == 1 {
                let v = c.values.count == n ? c.values : [Double](repeating: c.values[0], count: n)
                inputs.append(addWeight(node.inputs[2], shape: [n], values: v.map { Float($0 * beta) }))
            } else if let c = constants[node.inputs[2]] {
                // A bias matrix broadcast against (M, N): added after the product.
                _ = try broadcast([a.shape[0], n], c.shape, node)
                biasActivation = addWeight(node.inputs[2], shape: c.shape, values: c.values.map { Float($0 * beta) })
                if c.rank == 2 && c.shape[0] != 1 { batchFree = false }
            } else if beta == 1 {
                biasActivation = node.inputs[2]
            } else {
                throw ImportError.invalid(file: file, place: "\(place(node)) C", expected: "a constant when beta ≠ 1", actual: "computed")
            }
        }
        if let c = biasActivation {
            let mid = fresh("\(out).gemm")
            emit(node.name, .dense, inputs, mid)
            emit("\(node.name).bias", .add, [mid, c], out)
        } else {
            emit(node.name, .dense, inputs, out)
        }
        shapes[out] = [a.shape[0], n]
    }

    mutating func matMul(_ node: ONNXFile.Node) throws {
        if node.inputs.count == 2, !isConstant(node.inputs[1]) || isConstant(node.inputs[0]) { return try computedMatMul(node) }
        let a = try activation(node)
        let b = try constant(node, 1, what: "B")
        let out = try output(node)
        if b.rank != 2 || a.shape.count < 2 { return try batchedMatMul(node, a: a, b: b, output: out) }
        guard a.shape.last.map({ $0 < 0 || $0 == b.shape[0] }) ?? false else {
            throw ImportError.invalid(file: file, place: "\(place(node)) B", expected: "a constant (K, N) matrix matching \(a.shape)",
                                      actual: "\(b.shape)")
        }
        let w = addWeight(node.inputs[1], b)
        let outShape = a.shape.dropLast() + [b.shape[1]]
        if a.shape.count == 4 {
            // MatMul over the last NCHW axis (W): run it on the NCHW tensor, then back to NHWC.
            let t = fresh("\(a.name).nchw"), m = fresh("\(out).nchw")
            emit("\(node.name).to_nchw", .transpose, [a.name], t, Attributes(perm: Layout.toNCHW))
            emit(node.name, .matMul, [t, w], m)
            emit("\(node.name).to_nhwc", .transpose, [m], out, Attributes(perm: Layout.toNHWC))
        } else {
            emit(node.name, a.shape.count == 2 ? .dense : .matMul, [a.name, w], out)
        }
        shapes[out] = Array(outShape)
    }

    mutating func batchNorm(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        guard x.shape.count == 4 || x.shape.count == 2, int(node, "training_mode", 0) == 0, int(node, "spatial", 1) == 1,
              node.outputs.dropFirst().allSatisfy(\.isEmpty) || opset < 9 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "inference mode on (N, C) or (N, C, H, W)",
                                      actual: "\(x.shape)")
        }
        var names = [x.name]
        for (i, what) in [(1, "scale"), (2, "bias"), (3, "mean"), (4, "var")] {
            let c = try constant(node, i, what: what)
            guard x.shape[1] < 0 || c.values.count == x.shape[1] else {
                throw ImportError.invalid(file: file, place: "\(place(node)) \(what)", expected: "\(x.shape[1]) values", actual: "\(c.shape)")
            }
            names.append(addWeight(node.inputs[i], shape: [c.values.count], values: c.floats))
        }
        let out = try output(node)
        emit(node.name, .batchNorm, names, out, Attributes(epsilon: float(node, "epsilon", 1e-5)))
        shapes[out] = x.shape
    }

    // MARK: pooling

    mutating func pool(_ node: ONNXFile.Node, _ op: Op) throws {
        let x = try activation(node)
        try spatialRank4(node, x.shape)
        if node.outputs.count > 1 && !node.outputs[1].isEmpty {
            throw ImportError.invalid(file: file, place: place(node), expected: "one output", actual: "an Indices output too")
        }
        let kernel = try boundedInts(node, "kernel_shape", count: 2, range: 1...Self.maxWindow, [])
        let strides = try boundedInts(node, "strides", count: 2, range: 1...Self.maxWindow, [1, 1])
        let dilations = try boundedInts(node, "dilations", count: 2, range: 1...Self.maxWindow, [1, 1])
        guard kernel.count == 2 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) kernel_shape", expected: "2 values", actual: "none")
        }
        let pads = try windowPads(node, input: x.shape, kernel: kernel, strides: strides, dilations: dilations)
        let ceil = int(node, "ceil_mode", 0) == 1
        let includePad = int(node, "count_include_pad", 0) == 1
        var attrs = Attributes(kernel: kernel, strides: strides, dilations: dilations == [1, 1] ? nil : dilations, pads: pads, ceilMode: ceil)
        if op == .avgPool { attrs.countIncludePad = includePad }
        if pads.isEmpty { automaticPads(&attrs, node) }
        let out = try output(node)
        emit(node.name, op, [x.name], out, attrs)
        if pads.isEmpty { return shapes[out] = [x.shape[0], x.shape[1]] + Self.sameSizes(x.shape, strides) }
        func size(_ n: Int, _ i: Int) -> Int {
            guard n >= 0 else { return -1 }
            let span = n + pads[i] + pads[i + 2] - (kernel[i] - 1) * dilations[i] - 1
            var o = (ceil ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1
            // A window may not start inside the end padding.
            if ceil && (o - 1) * strides[i] >= n + pads[i] { o -= 1 }
            return o
        }
        shapes[out] = [x.shape[0], x.shape[1], size(x.shape[2], 0), size(x.shape[3], 1)]
    }

    mutating func globalPool(_ node: ONNXFile.Node, _ op: Op) throws {
        let x = try activation(node)
        try spatialRank4(node, x.shape)
        let out = try output(node)
        emit(node.name, op, [x.name], out)
        shapes[out] = [x.shape[0], x.shape[1], 1, 1]
    }

    // MARK: shape ops

    mutating func concat(_ node: ONNXFile.Node) throws {
        let inputs = node.inputs.indices.filter { !node.inputs[$0].isEmpty }
        guard let firstIndex = inputs.first(where: { shapes[node.inputs[$0]] != nil }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a computed input", actual: "none")
        }
        let first = try shape(of: node.inputs[firstIndex], in: node)
        let axis = try normalize(int(node, "axis", 1), rank: first.count, node)
        if axis == 0 { batchFree = false }
        var out = first
        out[axis] = 0
        var names: [String] = []
        for i in inputs {
            let s = try shape(of: node.inputs[i], in: node)
            guard s.count == first.count else {
                throw ImportError.invalid(file: file, place: place(node), expected: "inputs of rank \(first.count)", actual: "\(s)")
            }
            out[axis] = out[axis] < 0 || s[axis] < 0 ? -1 : out[axis] + s[axis]
            names.append(try operand(node, i, rank: first.count))
        }
        let o = try output(node)
        emit(node.name, .concat, names, o, Attributes(axis: Layout.irAxis(axis, rank: first.count)))
        shapes[o] = out
    }

    mutating func reshapeLike(_ node: ONNXFile.Node) throws {
        var x = try activation(node)
        let noAxes = opset >= 13 ? node.inputs.count < 2 || node.inputs[1].isEmpty : node.attributes["axes"] == nil
        if node.opType == "Squeeze" && noAxes && x.shape.contains(where: { $0 < 0 }) {
            x.shape = try assumeSqueezedSizes(node, x)
        }
        let to = try reshapedShape(node, input: x.shape)
        if node.opType == "Reshape", to.filter({ $0 < 0 }).count > 1 { return try reshapeWithFreeDimensions(node, x, to: to) }
        if ["Squeeze", "Unsqueeze"].contains(node.opType) && to.filter({ $0 < 0 }).count > 1 {
            return try squeezeLike(node, x, to: to)
        }
        if node.opType == "Flatten" && (int(node, "axis", 1) == 0 || int(node, "axis", 1) == -x.shape.count) { batchFree = false }
        if ["Squeeze", "Unsqueeze"].contains(node.opType) && to.first != x.shape.first { batchFree = false }
        // Flatten at axis 1 keeps the first dimension, whatever the others are.
        let keepsFirst = node.opType == "Flatten" && (int(node, "axis", 1) == 1 || int(node, "axis", 1) == 1 - x.shape.count)
        try emitReshape(node.name, input: x.name, from: x.shape, to: to, output: try output(node), keepingFirst: keepsFirst)
    }

    mutating func transpose(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let r = x.shape.count
        let perm = ints(node, "perm") ?? Array((0..<r).reversed())
        guard perm.count == r, Set(perm) == Set(0..<r) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) perm", expected: "a permutation of 0..<\(r)", actual: "\(perm)")
        }
        // For rank 4 both sides are NHWC in the IR: IR axis j ← ONNX axis nhwcToNchw[j] → permuted → back to IR.
        if perm.first != 0 { batchFree = false }
        let irPerm = r == 4 ? (0..<4).map { Layout.nchwToNhwc[perm[Layout.nhwcToNchw[$0]]] } : perm
        let out = try output(node)
        emit(node.name, .transpose, [x.name], out, Attributes(perm: irPerm))
        shapes[out] = perm.map { x.shape[$0] }
    }

    mutating func pad(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let r = x.shape.count
        var pads: [Int], value: Float = 0
        let mode = string(node, "mode", "constant")
        if opset < 11 {
            pads = ints(node, "pads") ?? []
            value = float(node, "value", 0)
        } else {
            pads = try constant(node, 1, what: "pads").ints.map { $0 ?? -1 }
            if let v = try optionalConstant(node, 2, what: "constant_value") { value = Float(v.scalar ?? 0) }
            if let axesConstant = try optionalConstant(node, 3, what: "axes") {
                let axes = try axesConstant.ints.map { try normalize($0 ?? -1, rank: r, node) }
                guard pads.count == 2 * axes.count else {
                    throw ImportError.invalid(file: file, place: "\(place(node)) pads", expected: "\(2 * axes.count) values", actual: "\(pads)")
                }
                var full = [Int](repeating: 0, count: 2 * r)
                for (k, a) in axes.enumerated() { full[a] = pads[k]; full[r + a] = pads[axes.count + k] }
                pads = full
            }
        }
        guard pads.count == 2 * r, pads.allSatisfy({ $0 >= 0 && $0 <= Self.maxWindow }), ["constant", "reflect", "edge"].contains(mode) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) pads", expected: "\(2 * r) values ≥ 0, mode constant|reflect|edge",
                                      actual: "\(pads), mode \(mode)")
        }
        let begin = Array(pads[..<r]), end = Array(pads[r...])
        let irPads = r == 4 ? Layout.irShape(begin) + Layout.irShape(end) : pads
        let out = try output(node)
        emit(node.name, .pad, [x.name], out, Attributes(pads: irPads, value: value, mode: mode))
        shapes[out] = (0..<r).map { x.shape[$0] < 0 ? -1 : x.shape[$0] + begin[$0] + end[$0] }
    }
}
