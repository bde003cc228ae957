extension GraphPasses {
    /// A `quantize` (codes) whose output only `dequantize` nodes with the same parameters read becomes one `quantize`
    /// in mode "values": the QuantizeLinear → DequantizeLinear pair that quantized ONNX puts on activations, computed
    /// in one pass and with no codes tensor in between (the same values: (q − zero point) · scale either way). Codes
    /// read by several dequantize nodes (a residual block's input: its first conv and its add, each expanded from a
    /// QLinear op with its own DequantizeLinear) become one tensor, which every reader of those nodes then reads.
    public static func fuseQuantizeDequantize(_ model: Model) throws -> Model {
        guard var graph = model.metadata.graph else { return model }
        var nodes = graph.nodes
        var removed = Set<Int>()
        var renamed: [String: String] = [:]
        var readers: [String: [Int]] = [:]
        for (i, n) in nodes.enumerated() { for v in Set(n.inputs) { readers[v, default: []].append(i) } }
        for (pi, q) in nodes.enumerated() where q.op == .quantize && q.outputs.count == 1 {
            guard let dequantizers = readers[q.outputs[0]], !graph.outputs.contains(q.outputs[0]),
                  dequantizers.allSatisfy({ dequantizes(nodes[$0], q) }),
                  let kept = keptOutput(dequantizers.map { nodes[$0].outputs[0] }, graphOutputs: graph.outputs) else { continue }
            for d in dequantizers where nodes[d].outputs[0] != kept { renamed[nodes[d].outputs[0]] = kept }
            nodes[pi].attributes.mode = "values"
            nodes[pi].outputs = [kept]
            removed.formUnion(dequantizers)
        }
        if !renamed.isEmpty {
            for i in nodes.indices { nodes[i].inputs = nodes[i].inputs.map { renamed[$0] ?? $0 } }
        }
        graph.nodes = nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        var m = model
        m.metadata.graph = graph
        return m
    }

    /// Whether `d` is a one-input dequantize of `q`'s codes with `q`'s parameters.
    private static func dequantizes(_ d: Node, _ q: Node) -> Bool {
        let (a, b) = (q.attributes, d.attributes)
        return d.op == .dequantize && d.inputs == q.outputs && d.outputs.count == 1
            && (a.mode == nil || a.mode == "codes") && a.axis == b.axis && a.quantScales == b.quantScales
            && ((a.quantZeroPoints ?? []).allSatisfy({ $0 == 0 }) && (b.quantZeroPoints ?? []).allSatisfy({ $0 == 0 })
                || a.quantZeroPoints == b.quantZeroPoints)
    }

    /// The name the fused values take: the one graph output among the dequantized tensors, else the first; nil when
    /// two of them are graph outputs (each keeps its name: not fused).
    private static func keptOutput(_ names: [String], graphOutputs: [String]) -> String? {
        let outputs = names.filter { graphOutputs.contains($0) }
        guard outputs.count <= 1 else { return nil }
        return outputs.first ?? names.first
    }
}
