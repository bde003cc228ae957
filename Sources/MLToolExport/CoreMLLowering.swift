import MLToolCore

/// Lowers a model's NHWC IR graph to classic Core ML layers (CHW blobs per image).
///
/// IR rank-4 tensors (N, H, W, C) are (C, H, W) blobs and rank-2 tensors (N, C) are (C, 1, 1) blobs, so per-channel
/// constants become bias / scale layers and a flatten of a feature map is Core ML's channel-last flatten. Ops with
/// no classic-layer equivalent (matMul, transpose, general reshapes) are refused with the node named.
struct CoreMLLowering {
    let modelName: String
    let graph: Graph
    let tensors: [String: StoredTensor]
    var program = CoreMLProgram()
    private(set) var notes: [String] = []
    var rank: [String: Int] = [:]
    /// IR tensor name → blob name (the input becomes `image`, the probabilities `classLabelProbs`).
    private var blobs: [String: String] = [:]
    private var counter = 0

    init(model: Model, name: String, graph: Graph) {
        self.modelName = name
        self.graph = graph
        self.tensors = model.tensorsByName
    }

    /// Lowers the graph's nodes, or with `upTo` only the nodes those tensors need (a "boxes" detector's feature maps:
    /// the shape-only nodes after them are the decoder's business, `CoreMLBoxes.swift`).
    mutating func lower(probabilities: Bool, upTo: [String]? = nil) throws {
        guard graph.inputs.count == 1, let input = graph.inputs.first, input.shape.count == 4 else {
            throw ExportError.unsupported(model: modelName, format: "Core ML", place: "inputs", reason: "needs one image input (N, H, W, C)")
        }
        guard let output = graph.outputs.first else {
            throw ExportError.invalid(model: modelName, place: "graph outputs", expected: "at least one", actual: "none")
        }
        blobs[input.name] = program.inputName
        rank[input.name] = 4
        if probabilities { blobs[output] = program.probabilityBlob }
        let needed = upTo.map { Self.ancestors(of: $0, in: graph) }
        for (i, node) in graph.nodes.enumerated() where needed?.contains(i) ?? true { try lower(node) }
        if program.detector != nil { return }
        guard rank[output] != nil else {
            throw ExportError.invalid(model: modelName, place: "graph output '\(output)'", expected: "a computed tensor", actual: "undefined")
        }
        if !probabilities {
            add(output + ".softmax", [blob(output)], [program.probabilityBlob], .softmax)
        }
    }

    private mutating func lower(_ n: Node) throws {
        let a = n.attributes
        let x = n.inputs.first ?? ""
        let out = n.outputs.first ?? ""
        let xr = try rankOf(x, n)
        var outRank = xr
        let act = a.activation
        let target = act == nil ? blob(out) : fresh(out)
        let input = blob(x)
        if n.attributes.sizedAtRunTime(n) {
            throw unsupported(n, "sizes fixed when the model is exported (this node's follow from the input size: import with --input-size)")
        }
        switch n.op {
        case .conv: try convolution(n, input, target, xr)
        case .dense: outRank = try dense(n, x, input, target, xr)
        case .batchNorm:
            guard n.inputs.count == 5 else { throw unsupported(n, "scale, bias, mean and variance") }
            let p = try n.inputs.dropFirst().map { try floats($0, n) }
            add(n.name, [input], [target], .batchnorm(channels: p[0].count, epsilon: a.epsilon ?? 1e-5, gamma: p[0], beta: p[1],
                                                       mean: p[2], variance: p[3]))
        case .relu, .clip, .leakyRelu, .sigmoid, .hardSigmoid, .hardSwish, .swish, .tanh, .identity:
            try activation(Activation(op: n.op, min: a.min, max: a.max, alpha: a.alpha, beta: a.beta), input, target, n.name)
        case .softmax:
            let axis = a.axis ?? -1
            guard axis == -1 || axis == xr - 1, xr == 2 || xr == 4 else { throw unsupported(n, "the channel (last) axis") }
            add(n.name, [input], [target], .softmax)
        case .add, .sub, .mul, .div:
            try binary(n, input, target)
            outRank = max(xr, try rankOf(n.inputs[safe: 1] ?? "", n))
        case .maxPool, .avgPool:
            guard xr == 4, let k = a.kernel, a.ceilMode != true, (a.dilations ?? [1, 1]) == [1, 1] else {
                throw unsupported(n, "a kernel size, no dilation and floor rounding")
            }
            add(n.name, [input], [target], .pooling(type: n.op == .maxPool ? 0 : 1, kernel: k, stride: a.strides ?? [1, 1],
                                                    pads: a.pads ?? [0, 0, 0, 0], excludePadding: a.countIncludePad != true, global: false))
        case .globalAvgPool, .globalMaxPool:
            add(n.name, [input], [target], .pooling(type: n.op == .globalMaxPool ? 0 : 1, kernel: [1, 1], stride: [1, 1],
                                                    pads: [0, 0, 0, 0], excludePadding: true, global: true))
        case .concat:
            let axis = a.axis ?? -1
            guard axis == -1 || axis == xr - 1, n.inputs.allSatisfy({ tensors[$0] == nil }) else {
                throw unsupported(n, "computed inputs joined along the channel axis")
            }
            add(n.name, n.inputs.map { blob($0) }, [target], .concat)
        case .flatten, .reshape, .squeeze: outRank = try flattening(n, input, target, xr)
        case .pad:
            guard xr == 4, let p = a.pads, p.count == 8, p[0] == 0, p[3] == 0, p[4] == 0, p[7] == 0 else {
                throw unsupported(n, "padding of height and width only")
            }
            add(n.name, [input], [target], .padding(mode: a.mode ?? "constant", value: a.value ?? 0, pads: [p[1], p[2], p[5], p[6]]))
        case .matMul, .transpose, .unsqueeze, .unary:
            throw unsupported(n, "a classic Core ML layer (none exists for \(n.op.rawValue))")
        case .pow, .resize, .slice, .topK, .binary, .where, .reduce, .argMax, .logSoftmax, .hardmax, .gather, .shape, .expand:
            throw unsupported(n, "a Core ML lowering for \(n.op.rawValue) (not yet supported)")
        case .lstm, .gru, .rnn:
            throw unsupported(n, "a Core ML lowering for \(n.op.rawValue) (not yet supported)")
        case .convTranspose, .layerNorm, .batchMatMul:
            throw unsupported(n, "a Core ML lowering for \(n.op.rawValue) (not yet supported)")
        case .ifElse:
            throw unsupported(n, "a Core ML lowering for \(n.op.rawValue) (not yet supported)")
        case .quantize, .dequantize:
            throw unsupported(n, "a Core ML lowering for \(n.op.rawValue) (not yet supported)")
        }
        if let act { try activation(act, target, blob(out), n.name + ".activation") }
        for o in n.outputs { rank[o] = outRank }
    }

    private mutating func convolution(_ n: Node, _ input: String, _ target: String, _ xr: Int) throws {
        let a = n.attributes
        guard xr == 4, let w = tensors[n.inputs[safe: 1] ?? ""], w.shape.count == 4 else {
            throw unsupported(n, "a feature-map input and a constant kernel")
        }
        let groups = a.groups ?? 1
        let weights = try CoreMLProgram.Weights.from(w, perm: WeightLayout.hwioToOIHW, notes: &notes)
        add(n.name, [input], [target], .convolution(
            outputChannels: w.shape[3], kernelChannels: w.shape[2], groups: groups, kernel: [w.shape[0], w.shape[1]],
            stride: a.strides ?? [1, 1], dilation: a.dilations ?? [1, 1], pads: a.pads ?? [0, 0, 0, 0],
            weights: weights, bias: try optionalFloats(n.inputs[safe: 2])))
    }

    /// An inner product, after a channel-last flatten of a feature map.
    private mutating func dense(_ n: Node, _ x: String, _ input: String, _ target: String, _ xr: Int) throws -> Int {
        guard let w = tensors[n.inputs[safe: 1] ?? ""], w.shape.count == 2 else { throw unsupported(n, "a constant 2-D weight") }
        var source = input
        if xr == 4 {
            source = fresh(x)
            add(n.name + ".flatten", [input], [source], .flatten(channelLast: true))
        } else if xr != 2 {
            throw unsupported(n, "a rank-2 or feature-map input")
        }
        add(n.name, [source], [target], .innerProduct(
            inputChannels: w.shape[0], outputChannels: w.shape[1],
            weights: try CoreMLProgram.Weights.from(w, perm: [1, 0], notes: &notes), bias: try optionalFloats(n.inputs[safe: 2])))
        return 2
    }

    /// Only the forms that turn (N, H, W, C) or (N, C) into (N, features) in NHWC order.
    private mutating func flattening(_ n: Node, _ input: String, _ target: String, _ xr: Int) throws -> Int {
        let a = n.attributes
        let ok: Bool
        switch n.op {
        case .flatten: ok = (a.axis ?? 1) == 1
        case .reshape: ok = (a.shape?.count ?? 0) == 2 && [0, -1, 1].contains(a.shape?[0] ?? 9)
        default: ok = xr == 4 && Set(a.axes ?? []) == [1, 2]
        }
        guard ok else { throw unsupported(n, "a flatten to (N, features)") }
        add(n.name, [input], [target], xr == 4 ? .flatten(channelLast: true) : .activation(.linear(alpha: 1, beta: 0)))
        return 2
    }

    /// Indices of the nodes that compute `tensors`, in graph order.
    static func ancestors(of tensors: [String], in graph: Graph) -> Set<Int> {
        var producer: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { producer[o] = i } }
        var seen = Set<Int>(), stack = tensors.compactMap { producer[$0] }
        while let i = stack.popLast() {
            guard seen.insert(i).inserted else { continue }
            stack += graph.nodes[i].inputs.compactMap { producer[$0] }
        }
        return seen
    }

    private mutating func binary(_ n: Node, _ input: String, _ target: String) throws {
        guard n.inputs.count == 2 else { throw unsupported(n, "two inputs") }
        let lhs = n.inputs[0], rhs = n.inputs[1]
        let lc = tensors[lhs] != nil, rc = tensors[rhs] != nil
        switch (lc, rc) {
        case (false, false):
            guard try rankOf(lhs, n) == rankOf(rhs, n) else { throw unsupported(n, "inputs of equal rank") }
            switch n.op {
            case .add: add(n.name, [blob(lhs), blob(rhs)], [target], .add)
            case .mul: add(n.name, [blob(lhs), blob(rhs)], [target], .multiply)
            case .sub:
                let negated = fresh(rhs)
                add(n.name + ".negate", [blob(rhs)], [negated], .scale(scale: [-1], bias: nil))
                add(n.name, [blob(lhs), negated], [target], .add)
            default: throw unsupported(n, "a constant divisor")
            }
        case (false, true), (true, false):
            if let (shape, values) = try fullConstant(lc ? lhs : rhs) {
                try mapConstant(n, shape, values, constantFirst: lc, target)
                return
            }
            let c = try channelConstant(lc ? lhs : rhs, n)
            let x = blob(lc ? rhs : lhs)
            switch (n.op, lc) {
            case (.add, _): add(n.name, [x], [target], .bias(c))
            case (.mul, _): add(n.name, [x], [target], .scale(scale: c, bias: nil))
            case (.sub, false): add(n.name, [x], [target], .bias(c.map { -$0 }))
            case (.sub, true): add(n.name, [x], [target], .scale(scale: [-1], bias: c))
            case (.div, false): add(n.name, [x], [target], .scale(scale: c.map { 1 / $0 }, bias: nil))
            default: throw unsupported(n, "a computed divisor")
            }
        case (true, true):
            throw unsupported(n, "at least one computed input")
        }
    }

    private mutating func activation(_ a: Activation, _ input: String, _ output: String, _ name: String) throws {
        switch a.op {
        case .relu: add(name, [input], [output], .activation(.relu))
        case .sigmoid: add(name, [input], [output], .activation(.sigmoid))
        case .tanh: add(name, [input], [output], .activation(.tanh))
        case .identity: add(name, [input], [output], .activation(.linear(alpha: 1, beta: 0)))
        case .leakyRelu: add(name, [input], [output], .activation(.leakyRelu(alpha: a.alpha ?? 0.01)))
        case .hardSigmoid: add(name, [input], [output], .activation(.sigmoidHard(alpha: a.alpha ?? 0.2, beta: a.beta ?? 0.5)))
        case .clip:
            add(name, [input], [output], .clip(min: a.min ?? -Float.greatestFiniteMagnitude, max: a.max ?? Float.greatestFiniteMagnitude))
        case .hardSwish, .swish:
            let gate = fresh(output)
            add(name + ".gate", [input], [gate], .activation(a.op == .swish ? .sigmoid : .sigmoidHard(alpha: 1.0 / 6, beta: 0.5)))
            add(name, [input, gate], [output], .multiply)
        default:
            throw ExportError.unsupported(model: modelName, format: "Core ML", place: "node '\(name)'", reason: "'\(a.op.rawValue)' is not an activation")
        }
    }

    /// A constant that broadcasts per channel: shape [], [1], [C] or (1, …, 1, C).
    private func channelConstant(_ name: String, _ n: Node) throws -> [Float] {
        guard let t = tensors[name], t.shape.dropLast().allSatisfy({ $0 == 1 }) else {
            throw unsupported(n, "a per-channel constant (shape [C] or [1])")
        }
        return try t.floats()
    }

    /// x ∘ k for a constant k holding a whole map (a grid of cell offsets): a loadConstant blob and an add or multiply.
    private mutating func mapConstant(_ n: Node, _ shape: [Int], _ values: [Float], constantFirst lc: Bool, _ target: String) throws {
        let computed = n.inputs[lc ? 1 : 0]
        guard try rankOf(computed, n) == 4 else { throw unsupported(n, "a feature-map input for a constant of shape (1, H, W, C)") }
        let x = blob(computed), k = fresh(n.name + ".constant")
        switch (n.op, lc) {
        case (.add, _), (.mul, _), (.sub, true): add(k, [], [k], .loadConstant(shape: shape, values: values))
        case (.sub, false): add(k, [], [k], .loadConstant(shape: shape, values: values.map { -$0 }))
        case (.div, false): add(k, [], [k], .loadConstant(shape: shape, values: values.map { 1 / $0 }))
        default: throw unsupported(n, "a constant divisor")
        }
        var source = x
        if n.op == .sub && lc {
            source = fresh(computed)
            add(n.name + ".negate", [x], [source], .scale(scale: [-1], bias: nil))
        }
        add(n.name, [source, k], [target], n.op == .add || n.op == .sub ? .add : .multiply)
    }

    /// A constant of shape (1, H, W, C) (or (H, W, C)) with H·W > 1, as a (C, H, W) blob's shape and values; nil for
    /// others.
    private func fullConstant(_ name: String) throws -> (shape: [Int], values: [Float])? {
        guard let t = tensors[name], t.shape.count == 4 && t.shape[0] == 1 || t.shape.count == 3 else { return nil }
        let (h, w, c) = (t.shape[t.shape.count - 3], t.shape[t.shape.count - 2], t.shape[t.shape.count - 1])
        guard h * w > 1 else { return nil }
        let hwc = try t.floats()
        guard hwc.count == h * w * c else { return nil }
        var chw = [Float](repeating: 0, count: hwc.count)
        for y in 0..<h { for x in 0..<w { for k in 0..<c { chw[(k * h + y) * w + x] = hwc[(y * w + x) * c + k] } } }
        return ([c, h, w], chw)
    }

    private func floats(_ name: String, _ n: Node) throws -> [Float] {
        guard let t = tensors[name] else { throw unsupported(n, "constant parameters") }
        return try t.floats()
    }

    private func optionalFloats(_ name: String?) throws -> [Float]? {
        guard let name, !name.isEmpty, let t = tensors[name] else { return nil }
        return try t.floats()
    }

    private func rankOf(_ name: String, _ n: Node) throws -> Int {
        if let r = rank[name] { return r }
        if let t = tensors[name] { return t.shape.count }
        throw ExportError.invalid(model: modelName, place: "node '\(n.name)' input", expected: "a computed tensor or a weight", actual: "'\(name)'")
    }

    func blob(_ name: String) -> String { blobs[name] ?? name }

    mutating func fresh(_ base: String) -> String {
        counter += 1
        return "\(base)__\(counter)"
    }

    mutating func add(_ name: String, _ inputs: [String], _ outputs: [String], _ kind: CoreMLProgram.Kind) {
        program.layers.append(.init(name: name, inputs: inputs, outputs: outputs, kind: kind))
    }

    private func unsupported(_ n: Node, _ needs: String) -> ExportError {
        .unsupported(model: modelName, format: "Core ML", place: "node '\(n.name)' (\(n.op.rawValue))", reason: "needs \(needs)")
    }
}
