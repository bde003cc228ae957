/// Graph rewrites that keep a model's outputs (up to float rounding) and make it cheaper to run. Importers and the
/// engine both use them, so they live in Core.
///
/// - `composeTransposes`: a transpose of a transpose becomes one (or an identity; GraphPasses+Transpose.swift).
/// - `removeIdentities`: drops identity nodes (ONNX Identity/Dropout map to `identity`) by rewiring their consumers.
/// - `foldBatchNorm`: folds a batchNorm into the conv/dense that feeds it: w' = w·γ/√(σ²+ε) along the output
///   channel, b' = (b−μ)·γ/√(σ²+ε)+β.
/// - `fuseSwish`: x · σ(x) (a sigmoid feeding only a mul with the sigmoid's own input: SiLU as ONNX exports spell
///   it) becomes one `swish` node, which `fuseActivations` can then move into the conv that makes x.
/// - `unwrapTransposedSoftmax`: attention scores moved to NHWC for a scale, a mask and a softmax and back run in their
///   own layout (GraphPasses+Transformer.swift).
/// - `fuseMatMulBias`: add(bias (N), matMul(a, b (K, N))) becomes matMul(a, b, bias), the bias in the GEMM's epilogue
///   (GraphPasses+Transformer.swift).
/// - `fuseGelu`: x·(1 + erf(x/√2))·½ becomes one unary `gelu` (GraphPasses+Transformer.swift).
/// - `fuseActivations`: moves a standalone activation into its producer (conv/dense/add/sub/mul/div).
/// - `fuseQuantizeDequantize`: a quantize → dequantize pair with the same parameters becomes one quantize giving
///   values (GraphPasses+Quantized.swift).
///
/// And the one home of graph pruning: `nodes(_:feeding:)`, the nodes some outputs read (the extractor cut at its
/// features, a detector's backbone, a fine-tuned top, an ONNX import's forks, a TFLite export's decoder inputs).
///
/// A rewrite only happens when the intermediate tensor has one consumer and is not a graph output, so every graph
/// output and every surviving tensor keeps its name and value.
public enum GraphPasses {
    /// All passes, in an order where each one exposes work for the next.
    public static func optimize(_ model: Model) throws -> Model {
        var m = try unwrapTransposedSoftmax(model)
        m = try composeTransposes(m)
        m = try fuseMatMulBias(m)
        m = try removeIdentities(m)
        m = try foldBatchNorm(m)
        m = try fuseSwish(m)
        m = try fuseGelu(m)
        m = try fuseActivations(m)
        m = try fuseQuantizeDequantize(m)
        return m
    }

    /// Removes identity nodes whose output is not a graph output.
    public static func removeIdentities(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var rename: [String: String] = [:]
        var kept: [Node] = []
        for var node in graph.nodes {
            node.inputs = node.inputs.map { rename[$0] ?? $0 }
            if node.op == .identity, node.inputs.count == 1, node.outputs.count == 1,
               !graph.outputs.contains(node.outputs[0]) {
                rename[node.outputs[0]] = node.inputs[0]
                continue
            }
            kept.append(node)
        }
        graph.nodes = kept
        var m = model
        m.metadata.graph = graph
        return m
    }

    /// Folds batchNorm nodes into a preceding conv or dense without a fused activation.
    public static func foldBatchNorm(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var tensors = model.tensorsByName
        var added: [StoredTensor] = []
        var nodes = graph.nodes
        var removed = Set<Int>()
        let consumers = consumerCounts(graph)
        let producer = producers(nodes)
        for (i, bn) in nodes.enumerated() where bn.op == .batchNorm && bn.inputs.count == 5 && bn.outputs.count == 1 {
            guard let pi = producer[bn.inputs[0]], !removed.contains(pi) else { continue }
            var p = nodes[pi]
            guard p.op == .conv || p.op == .dense, p.attributes.activation == nil, p.inputs.count >= 2,
                  consumers[bn.inputs[0], default: 0] == 1, !graph.outputs.contains(bn.inputs[0]),
                  let w = tensors[p.inputs[1]], let params = try? bn.inputs[1...].map({ name -> [Float] in
                      guard let t = tensors[name] else { throw CoreError.invalidValue(file: "", offset: nil, what: name, expected: "constant", actual: "tensor") }
                      return try t.floats()
                  }) else { continue }
            let (gamma, beta, mean, variance) = (params[0], params[1], params[2], params[3])
            guard let oc = w.shape.last, oc > 0, gamma.count == oc, beta.count == oc, mean.count == oc,
                  variance.count == oc else { continue }
            let eps = bn.attributes.epsilon ?? 1e-5
            var wv = try w.floats()
            var bv = [Float](repeating: 0, count: oc)
            if p.inputs.count >= 3, let b = tensors[p.inputs[2]] {
                let f = try b.floats()
                guard f.count == oc else { continue }
                bv = f
            }
            for o in 0..<oc {
                let s = gamma[o] / (variance[o] + eps).squareRoot()
                var j = o
                while j < wv.count { wv[j] *= s; j += oc }
                bv[o] = (bv[o] - mean[o]) * s + beta[o]
            }
            let wName = unique("\(p.name).bnfold.weight", tensors)
            let bName = unique("\(p.name).bnfold.bias", tensors)
            let wt = StoredTensor(name: wName, tensor: Tensor(shape: w.shape, data: wv))
            let bt = StoredTensor(name: bName, tensor: Tensor(shape: [oc], data: bv))
            tensors[wName] = wt; tensors[bName] = bt
            added += [wt, bt]
            p.inputs = [p.inputs[0], wName, bName]
            p.outputs = [bn.outputs[0]]
            nodes[pi] = p
            removed.insert(i)
        }
        graph.nodes = nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        var m = model
        m.metadata.graph = graph
        m.tensors = pruned(model.tensors + added, graph: graph, original: model)
        return m
    }

    /// Rewrites mul(x, sigmoid(x)) (either operand order) as swish(x) when the sigmoid's output is read only by that
    /// mul and is not a graph output; the mul's output keeps its name.
    public static func fuseSwish(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var nodes = graph.nodes
        var removed = Set<Int>()
        let consumers = consumerCounts(graph)
        let producer = producers(nodes)
        for (i, mul) in nodes.enumerated() where mul.op == .mul && mul.inputs.count == 2 && mul.outputs.count == 1
            && mul.attributes.activation == nil {
            for k in 0..<2 {
                let gate = mul.inputs[k], x = mul.inputs[1 - k]
                guard let si = producer[gate], !removed.contains(si) else { continue }
                let sig = nodes[si]
                guard sig.op == .sigmoid, sig.inputs == [x], sig.outputs.count == 1, sig.attributes.activation == nil,
                      consumers[gate, default: 0] == 1, !graph.outputs.contains(gate) else { continue }
                nodes[i] = Node(name: mul.name, op: .swish, inputs: [x], outputs: mul.outputs)
                removed.insert(si)
                break
            }
        }
        guard !removed.isEmpty else { return model }
        graph.nodes = nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        var m = model
        m.metadata.graph = graph
        return m
    }

    /// Ops that can carry a fused `Activation`.
    static let activationProducers: Set<Op> = [.conv, .dense, .add, .sub, .mul, .div]
    /// Standalone ops that can become a fused `Activation`.
    static let fusableActivations: Set<Op> = [.relu, .clip, .leakyRelu, .sigmoid, .hardSigmoid, .hardSwish, .swish, .tanh]

    /// Fuses standalone activations into their producer.
    public static func fuseActivations(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var nodes = graph.nodes
        var removed = Set<Int>()
        let consumers = consumerCounts(graph)
        let producer = producers(nodes)
        for (i, a) in nodes.enumerated() where fusableActivations.contains(a.op) && a.inputs.count == 1 && a.outputs.count == 1 {
            guard let pi = producer[a.inputs[0]], !removed.contains(pi) else { continue }
            var p = nodes[pi]
            guard activationProducers.contains(p.op), p.attributes.activation == nil,
                  consumers[a.inputs[0], default: 0] == 1, !graph.outputs.contains(a.inputs[0]) else { continue }
            let at = a.attributes
            p.attributes.activation = Activation(op: a.op, min: at.min, max: at.max, alpha: at.alpha, beta: at.beta)
            p.outputs = [a.outputs[0]]
            nodes[pi] = p
            removed.insert(i)
        }
        graph.nodes = nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        var m = model
        m.metadata.graph = graph
        return m
    }

    /// How many node inputs read each tensor name.
    static func consumerCounts(_ graph: Graph) -> [String: Int] {
        var c: [String: Int] = [:]
        for n in graph.nodes { for i in n.inputs { c[i, default: 0] += 1 } }
        return c
    }

    /// The index of the node producing each tensor name.
    static func producers(_ nodes: [Node]) -> [String: Int] {
        var p: [String: Int] = [:]
        for (i, n) in nodes.enumerated() { for o in n.outputs { p[o] = i } }
        return p
    }

    static func unique(_ base: String, _ taken: [String: StoredTensor]) -> String {
        var name = base, k = 1
        while taken[name] != nil { name = "\(base).\(k)"; k += 1 }
        return name
    }

    /// The nodes of `nodes` (in graph order) that `outputs` read, directly or not, and every tensor name those
    /// nodes read with the outputs themselves: the graph cut to what `outputs` need.
    public static func nodes(_ nodes: [Node], feeding outputs: some Sequence<String>) -> (nodes: [Node], read: Set<String>) {
        var needed = Set(outputs), kept: [Node] = []
        for node in nodes.reversed() where node.outputs.contains(where: needed.contains) {
            kept.append(node)
            needed.formUnion(node.inputs)
        }
        return (kept.reversed(), needed)
    }

    /// Drops tensors that the original graph used but the rewritten graph no longer does; tensors the graph never
    /// referenced (e.g. text-model weights) stay.
    static func pruned(_ tensors: [StoredTensor], graph: Graph, original: Model) -> [StoredTensor] {
        let usedNow = Set(graph.nodes.flatMap(\.inputs))
        let usedBefore = Set(original.metadata.graph?.nodes.flatMap(\.inputs) ?? [])
        return tensors.filter { usedNow.contains($0.name) || !usedBefore.contains($0.name) }
    }
}
