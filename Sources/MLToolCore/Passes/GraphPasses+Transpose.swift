extension GraphPasses {
    /// Composes a transpose that reads another transpose into one: y = transpose(transpose(x, p1), p2) is
    /// transpose(x, q) with q[i] = p1[p2[i]], and an identity when q keeps every axis in place (then removed by
    /// `removeIdentities`). A transformer imported from ONNX moves its (N, heads, T, d) tensors between NCHW and the
    /// IR's NHWC around each head split and product: chains of two or three transposes that are one, or none.
    /// Only when the inner transpose's output is read by no other node but `shape` ones, is not a graph output and has
    /// no activation. A `shape` of the inner output (an export's head-split sizes, read from the merged heads) reads
    /// the inner transpose's input instead, its axes through the inner perm: shape(transpose(x, p1), p) is
    /// shape(x, q) with q[i] = p1[p[i]].
    public static func composeTransposes(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var nodes = graph.nodes
        var removed = Set<Int>()
        let producer = producers(nodes), outputs = Set(graph.outputs)
        var readers: [String: [Int]] = [:]
        for (k, n) in nodes.enumerated() { for input in Set(n.inputs) { readers[input, default: []].append(k) } }
        for i in nodes.indices where nodes[i].op == .transpose && nodes[i].inputs.count == 1 {
            guard let p2 = nodes[i].attributes.perm, let j = producer[nodes[i].inputs[0]], !removed.contains(j),
                  nodes[j].op == .transpose, nodes[j].inputs.count == 1, nodes[j].attributes.activation == nil,
                  let p1 = nodes[j].attributes.perm, p1.count == p2.count, Set(p2) == Set(p1.indices),
                  !outputs.contains(nodes[j].outputs[0]) else { continue }
            let inner = nodes[j].outputs[0]
            let shapes = (readers[inner] ?? []).filter { $0 != i }
            guard shapes.allSatisfy({ shapeReads(nodes[$0], inner, rank: p1.count) }) else { continue }
            for k in shapes {
                nodes[k].attributes.perm = (nodes[k].attributes.perm ?? Array(p1.indices)).map { p1[$0] }
                nodes[k].inputs = nodes[j].inputs
            }
            let q = p2.map { p1[$0] }
            nodes[i].inputs = nodes[j].inputs
            if q == Array(q.indices) && nodes[i].attributes.activation == nil {
                nodes[i] = Node(name: nodes[i].name, op: .identity, inputs: nodes[i].inputs, outputs: nodes[i].outputs)
            } else {
                nodes[i].attributes.perm = q
            }
            removed.insert(j)
        }
        graph.nodes = nodes.indices.filter { !removed.contains($0) }.map { nodes[$0] }
        var m = model
        m.metadata.graph = graph
        return m
    }

    /// A `shape` node reading `name` (of rank `rank`) whose axes, if listed, are axes of it.
    private static func shapeReads(_ n: Node, _ name: String, rank: Int) -> Bool {
        n.op == .shape && n.inputs == [name] && (n.attributes.perm ?? []).allSatisfy { $0 >= 0 && $0 < rank }
    }
}
