extension GraphPasses {
    /// Moves the add of a constant bias (N) after a matMul by a constant (K, N) into the matMul's third input, where
    /// the engine adds it in the GEMM's epilogue instead of a pass of its own (a transformer's every projection). The
    /// add's output keeps its name; only when the product has one consumer, is not a graph output and the add has
    /// no activation.
    public static func fuseMatMulBias(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var nodes = graph.nodes
        var removed = Set<Int>()
        let consumers = consumerCounts(graph), producer = producers(nodes), outputs = Set(graph.outputs)
        let tensors = model.tensorsByName
        for (i, add) in nodes.enumerated() where add.op == .add && add.inputs.count == 2 && add.outputs.count == 1
            && add.attributes.activation == nil {
            for k in 0..<2 {
                let product = add.inputs[1 - k], bias = add.inputs[k]
                guard let p = producer[product], !removed.contains(p), nodes[p].op == .matMul, nodes[p].inputs.count == 2,
                      nodes[p].outputs.count == 1, nodes[p].attributes.activation == nil,
                      consumers[product] == 1, !outputs.contains(product),
                      let b = tensors[nodes[p].inputs[1]], b.shape.count == 2, let c = tensors[bias], c.shape == [b.shape[1]]
                else { continue }
                nodes[p].inputs.append(bias)
                nodes[p].outputs = add.outputs
                removed.insert(i)
                break
            }
        }
        guard !removed.isEmpty else { return model }
        graph.nodes = nodes.indices.filter { !removed.contains($0) }.map { nodes[$0] }
        var m = model
        m.metadata.graph = graph
        return m
    }

    /// Rewrites the exact GELU as ONNX exports spell it, x·(1 + erf(x / √2))·½ (div by √2 or mul by 1/√2, add of 1,
    /// mul by x, mul by ½: five passes over a transformer's widest activation), as one unary `gelu` on x. The last
    /// mul's output keeps its name; every intermediate tensor must have one consumer and not be a graph output.
    public static func fuseGelu(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var nodes = graph.nodes
        var removed = Set<Int>()
        let consumers = consumerCounts(graph), producer = producers(nodes), outputs = Set(graph.outputs)
        let tensors = model.tensorsByName
        var reader: [String: Int] = [:]
        for (i, n) in nodes.enumerated() { for input in n.inputs { reader[input] = i } }
        // The one node reading `name` (nil when it has several readers or is a graph output).
        func soleReader(_ name: String) -> Int? {
            consumers[name] == 1 && !outputs.contains(name) ? reader[name] : nil
        }
        func isScalar(_ name: String, _ value: Float) -> Bool {
            guard let t = tensors[name], t.shape.count <= 4, let v = try? t.floats(), v.count == 1 else { return false }
            return abs(v[0] - value) <= 1e-6 * max(1, abs(value))
        }
        // The operand of a two-input node that is not `name`, and whether it is the constant `value`.
        func other(_ n: Node, _ name: String) -> String? {
            guard n.inputs.count == 2, n.attributes.activation == nil else { return nil }
            return n.inputs[0] == name ? n.inputs[1] : n.inputs[1] == name ? n.inputs[0] : nil
        }
        for (ui, u) in nodes.enumerated() where u.op == .unary && u.attributes.mode == UnaryFunction.erf.rawValue
            && u.inputs.count == 1 && u.outputs.count == 1 && u.attributes.activation == nil {
            guard let di = producer[u.inputs[0]], soleReader(u.inputs[0]) == ui else { continue }
            let d = nodes[di]
            guard d.inputs.count == 2, d.attributes.activation == nil,
                  (d.op == .div && isScalar(d.inputs[1], 1.4142135)) || (d.op == .mul && isScalar(d.inputs[1], 0.70710677))
            else { continue }
            let x = d.inputs[0]
            guard let ai = soleReader(u.outputs[0]), nodes[ai].op == .add,
                  let one = other(nodes[ai], u.outputs[0]), isScalar(one, 1),
                  let mi = soleReader(nodes[ai].outputs[0]), nodes[mi].op == .mul,
                  other(nodes[mi], nodes[ai].outputs[0]) == x,
                  let hi = soleReader(nodes[mi].outputs[0]), nodes[hi].op == .mul,
                  let half = other(nodes[hi], nodes[mi].outputs[0]), isScalar(half, 0.5),
                  Set([di, ui, ai, mi, hi]).isDisjoint(with: removed) else { continue }
            nodes[hi] = Node(name: nodes[hi].name, op: .unary, inputs: [x], outputs: nodes[hi].outputs,
                             attributes: Attributes(mode: UnaryFunction.gelu.rawValue))
            removed.formUnion([di, ui, ai, mi])
        }
        guard !removed.isEmpty else { return model }
        graph.nodes = nodes.indices.filter { !removed.contains($0) }.map { nodes[$0] }
        var m = model
        m.metadata.graph = graph
        m.tensors = pruned(model.tensors, graph: graph, original: model)
        return m
    }

    /// Runs attention's scores in the layout their product made them in. An importer that keeps rank-4 activations
    /// in NHWC moves a (N, heads, T, T) score tensor to (N, T, T, heads) before the scale, the mask add and the
    /// softmax over the keys, and back after: the softmax then walks lanes `heads` floats apart. The chain
    /// transpose(p) → add/sub/mul/div … → softmax → transpose(p⁻¹) becomes the same chain on the transpose's input,
    /// the softmax axis moved with it and each rank-4 operand read through a transpose by p⁻¹ (a scalar constant as
    /// is); the last transpose's output keeps its name. Only when every tensor of the chain has one consumer and is
    /// not a graph output, no node has an activation and every operand's rank is known (scalars, transposes,
    /// constants and element-wise ops on them).
    public static func unwrapTransposedSoftmax(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var u = SoftmaxUnwrap(graph, model.tensorsByName)
        for (si, s) in graph.nodes.enumerated() where s.op == .softmax && s.inputs.count == 1 && s.outputs.count == 1
            && s.attributes.activation == nil {
            u.unwrap(softmax: si)
        }
        guard !u.removed.isEmpty else { return model }
        graph.nodes = u.nodes.indices.filter { !u.removed.contains($0) }.flatMap { (u.inserted[$0] ?? []) + [u.nodes[$0]] }
        var m = model
        m.metadata.graph = graph
        return m
    }
}

/// `GraphPasses.unwrapTransposedSoftmax` on one graph: what it knows of the graph, the nodes as they are rewritten,
/// the transposes removed and those inserted before operands.
private struct SoftmaxUnwrap {
    var nodes: [Node]
    let consumers: [String: Int], producer: [String: Int], outputs: Set<String>
    let tensors: [String: StoredTensor]
    var reader: [String: Int] = [:]
    var removed = Set<Int>()
    var inserted: [Int: [Node]] = [:]   // transposes of operands, placed before the node at the key (the chain's first)
    var taken: Set<String>
    static let elementwise: Set<Op> = [.add, .sub, .mul, .div]

    init(_ graph: Graph, _ tensors: [String: StoredTensor]) {
        nodes = graph.nodes
        consumers = GraphPasses.consumerCounts(graph)
        producer = GraphPasses.producers(graph.nodes)
        outputs = Set(graph.outputs)
        self.tensors = tensors
        for (i, n) in nodes.enumerated() { for input in n.inputs { reader[input] = i } }
        taken = Set(nodes.flatMap { $0.outputs }).union(tensors.keys)
    }

    func soleReader(_ name: String) -> Int? {
        consumers[name] == 1 && !outputs.contains(name) ? reader[name] : nil
    }

    /// A tensor's rank where the graph says it without shapes (nil: unknown).
    func rank(_ name: String, depth: Int = 0) -> Int? {
        if let t = tensors[name] { return t.shape.count }
        guard depth < 8, let p = producer[name] else { return nil }
        let n = nodes[p]
        switch n.op {
        case .transpose: return n.attributes.perm?.count
        case .add, .sub, .mul, .div:
            guard n.inputs.count == 2, let a = rank(n.inputs[0], depth: depth + 1),
                  let b = rank(n.inputs[1], depth: depth + 1) else { return nil }
            return max(a, b)
        default: return nil
        }
    }

    /// The chain of element-wise nodes (nearest the softmax first, with the index of each one's operand) from
    /// `value`, read by node `reader` alone, up to a transpose by the inverse of `back`. Where both inputs of a
    /// node are computed and read only there, the longer chain is the scores' (a mask's is a transpose away).
    func walk(_ value: String, reader: Int, back: [Int], depth: Int = 0) -> (chain: [(node: Int, operand: Int)], start: Int)? {
        guard depth < 16, let p = producer[value], soleReader(value) == reader, !removed.contains(p) else { return nil }
        let n = nodes[p]
        if n.op == .transpose, n.inputs.count == 1, n.attributes.activation == nil, let perm = n.attributes.perm,
           perm.count == 4, back.map({ perm[$0] }) == Array(0..<4) {
            return ([], p)
        }
        guard Self.elementwise.contains(n.op), n.inputs.count == 2, n.attributes.activation == nil else { return nil }
        var best: (chain: [(node: Int, operand: Int)], start: Int)?
        for k in n.inputs.indices where tensors[n.inputs[k]] == nil {
            guard let found = walk(n.inputs[k], reader: p, back: back, depth: depth + 1),
                  found.chain.count + 1 > best?.chain.count ?? 0 else { continue }
            best = ([(p, 1 - k)] + found.chain, found.start)
        }
        return best
    }

    /// Rewrites the chain ending at softmax node `si`, when it fits.
    mutating func unwrap(softmax si: Int) {
        let s = nodes[si]
        guard let ti = soleReader(s.outputs[0]), nodes[ti].op == .transpose, nodes[ti].inputs.count == 1,
              nodes[ti].attributes.activation == nil, let back = nodes[ti].attributes.perm, back.count == 4,
              Set(back) == Set(0..<4) else { return }
        // Walk up the element-wise chain (softmax first) to the transpose that made the layout.
        guard let (chain, start) = walk(s.inputs[0], reader: si, back: back) else { return }
        let axis = s.attributes.axis ?? -1
        guard let newAxis = back.firstIndex(of: axis < 0 ? axis + 4 : axis) else { return }
        // Operands: a scalar constant broadcasts the same in either layout; a rank-4 one is read transposed.
        var operands: [(node: Int, input: Int)] = []
        for (p, k) in chain {
            let o = nodes[p].inputs[k]
            if let t = tensors[o], t.shape.reduce(1, *) == 1, t.shape.count <= 4 { continue }
            guard rank(o) == 4 else { return }
            operands.append((p, k))
        }
        // Each operand's transpose goes before the chain's first node when the operand is made before it, so the
        // chain's nodes stay side by side (the engine runs a scale, mask add and softmax as one: `ScaledSoftmax`).
        let first = chain.last?.node ?? si
        for (p, k) in operands {
            let o = nodes[p].inputs[k]
            let at = (producer[o] ?? -1) < first ? first : p
            var name = "\(o).\(nodes[p].name).untransposed", suffix = 1
            while taken.contains(name) { name = "\(o).\(nodes[p].name).untransposed.\(suffix)"; suffix += 1 }
            taken.insert(name)
            inserted[at, default: []].append(Node(name: "\(nodes[p].name).operand_transpose", op: .transpose, inputs: [o],
                                                 outputs: [name], attributes: Attributes(perm: back)))
            nodes[p].inputs[k] = name
        }
        nodes[first].inputs = nodes[first].inputs.map { $0 == nodes[start].outputs[0] ? nodes[start].inputs[0] : $0 }
        nodes[si].attributes.axis = newAxis
        nodes[si].outputs = nodes[ti].outputs
        removed.formUnion([start, ti])
    }
}
