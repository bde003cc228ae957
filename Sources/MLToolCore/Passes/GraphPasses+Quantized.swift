extension GraphPasses {
    /// A `quantize` (codes) whose output only a `dequantize` with the same parameters reads becomes one `quantize` in
    /// mode "values": the QuantizeLinear → DequantizeLinear pair that quantized ONNX puts on activations, computed in
    /// one pass and with no codes tensor in between (the same values: (q − zero point) · scale either way).
    public static func fuseQuantizeDequantize(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var nodes = graph.nodes
        var removed = Set<Int>()
        let consumers = consumerCounts(graph)
        let producer = producers(nodes)
        for (i, d) in nodes.enumerated() where d.op == .dequantize && d.inputs.count == 1 && d.outputs.count == 1 {
            guard let pi = producer[d.inputs[0]], !removed.contains(pi) else { continue }
            var q = nodes[pi]
            let (a, b) = (q.attributes, d.attributes)
            guard q.op == .quantize, q.outputs.count == 1, a.mode == nil || a.mode == "codes",
                  consumers[d.inputs[0], default: 0] == 1, !graph.outputs.contains(d.inputs[0]),
                  a.axis == b.axis, a.quantScales == b.quantScales,
                  (a.quantZeroPoints ?? []).allSatisfy({ $0 == 0 }) && (b.quantZeroPoints ?? []).allSatisfy({ $0 == 0 })
                    || a.quantZeroPoints == b.quantZeroPoints else { continue }
            q.attributes.mode = "values"
            q.outputs = d.outputs
            nodes[pi] = q
            removed.insert(i)
        }
        graph.nodes = nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        var m = model
        m.metadata.graph = graph
        return m
    }
}
