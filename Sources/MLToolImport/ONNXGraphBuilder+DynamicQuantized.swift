import MLToolCore

/// onnxruntime's dynamic quantization (`quantize_dynamic`, QOperator form) read back as the layers it quantized.
///
/// A weight becomes the chain
///
///     DynamicQuantizeLinear(x) → (xq, xs, xz)
///     MatMulInteger(xq, Wq, xz, Wz) → Cast(to: float) → Mul(·, Mul(xs, Ws))
///
/// which is x · Ws·(Wq − Wz) with x rounded to uint8 on the way: a dense layer with a quantized weight and a
/// dynamically quantized activation — what the engine's int8 kernels run (`QuantizedWeights`, each input row
/// quantized on the fly). The chain is rewritten, before conversion, into MatMul(x, DequantizeLinear(Wq, Ws, Wz)):
/// the DequantizeLinear folds at import and its weight is stored as int8 with its scales and zero points (uint8
/// codes shifted by 128, exactly: `dequantize`), so the layer runs on the int8 kernels where the engine takes them,
/// and on the same weights dequantized elsewhere. A quantized embedding table, Gather(Tq, ids) → DequantizeLinear(·,
/// s, z) with one scale, becomes Gather(DequantizeLinear(Tq, s, z), ids) in the same way (the table stays int8).
///
/// Nodes of a chain that does not match exactly (a quantized value read by anything else, a graph output, scales
/// that are not constants) are left as they are, and the importer names them as unsupported.
extension ONNXGraphBuilder {
    /// `nodes` with every matching dynamic-quantization chain rewritten (see above); `constants` are the initializers,
    /// `outputs` the graph's output names.
    static func fusingDynamicQuantization(_ nodes: [ONNXFile.Node], constants: [String: ONNXConstant],
                                          outputs: Set<String>) -> [ONNXFile.Node] {
        guard nodes.contains(where: { $0.opType == "MatMulInteger" || $0.opType == "DequantizeLinear" }) else { return nodes }
        var producer: [String: Int] = [:], readers: [String: [Int]] = [:]
        for (i, n) in nodes.enumerated() {
            for o in n.outputs where !o.isEmpty { producer[o] = i }
            for x in Set(n.inputs) where !x.isEmpty { readers[x, default: []].append(i) }
        }
        // Reads of names inside If branches and loop bodies: such a value has readers this list cannot see.
        let hidden = Set(nodes.flatMap { n in n.attributes.values.compactMap(\.g).flatMap { $0.nodes.flatMap(\.inputs) } })
        func onlyReader(_ name: String) -> Int? {
            guard !outputs.contains(name), !hidden.contains(name), let r = readers[name], r.count == 1 else { return nil }
            return r[0]
        }
        func node(_ i: Int?, _ op: String) -> ONNXFile.Node? {
            guard let i, nodes[i].opType == op, nodes[i].domain.isEmpty || nodes[i].domain == "ai.onnx" else { return nil }
            return nodes[i]
        }
        func quantizedCodes(_ name: String) -> Bool {
            guard let c = constants[name] else { return false }
            return c.dataType == 2 || c.dataType == 3   // uint8, int8
        }
        var removed = Set<Int>(), replaced: [Int: [ONNXFile.Node]] = [:]
        // Per DynamicQuantizeLinear: the chains that read it; it goes when every reader of its outputs is rewritten.
        var quantizerReaders: [Int: Set<Int>] = [:]
        for (i, m) in nodes.enumerated() where m.opType == "MatMulInteger" && m.domain.isEmpty && m.inputs.count >= 3 {
            let (xq, w) = (m.inputs[0], m.inputs[1])
            let wz = m.inputs.count > 3 && !m.inputs[3].isEmpty ? m.inputs[3] : nil
            guard let d = producer[xq], let dq = node(d, "DynamicQuantizeLinear"), dq.outputs.count == 3,
                  dq.outputs[0] == xq, dq.outputs[2] == m.inputs[2], quantizedCodes(w), constants[w]?.rank == 2,
                  wz.map(quantizedCodes) ?? true,
                  let c = onlyReader(m.outputs[0]), let cast = node(c, "Cast"), cast.attributes["to"]?.i == 1,
                  let u = onlyReader(cast.outputs[0]), let mul = node(u, "Mul") else { continue }
            // The other factor of the final Mul: Mul(xs, Ws) (either order), read by this chain alone.
            guard let s = mul.inputs.first(where: { $0 != cast.outputs[0] }), let v = producer[s],
                  let scales = node(v, "Mul"), onlyReader(s) == u, scales.inputs.contains(dq.outputs[1]),
                  let ws = scales.inputs.first(where: { $0 != dq.outputs[1] }), let wsc = constants[ws],
                  let n = constants[w]?.shape[1], wsc.values.count == 1 || (wsc.rank == 1 && wsc.values.count == n),
                  wz.map({ constants[$0]?.values.count == wsc.values.count }) ?? true else { continue }
            let weight = "\(w).dequantized"
            var dequantize = ONNXFile.Node(name: "\(m.name).weight", opType: "DequantizeLinear", domain: "", inputs: [w, ws] + (wz.map { [$0] } ?? []),
                                           outputs: [weight], attributes: [:])
            if wsc.values.count > 1 || wsc.rank == 1 { dequantize.attributes["axis"] = ONNXFile.Attribute(name: "axis", type: 2, i: 1) }
            let matMul = ONNXFile.Node(name: m.name, opType: "MatMul", domain: "", inputs: [dq.inputs[0], weight],
                                       outputs: mul.outputs, attributes: [:], label: m.label)
            replaced[i] = [dequantize, matMul]
            removed.formUnion([c, u, v])
            quantizerReaders[d, default: []].formUnion([i, v])
        }
        for (d, chains) in quantizerReaders {
            let reads = Set(nodes[d].outputs.flatMap { readers[$0] ?? [] })
            if reads.isSubset(of: chains), !nodes[d].outputs.contains(where: { outputs.contains($0) || hidden.contains($0) }) {
                removed.insert(d)
            }
        }
        // Quantized embedding tables: Gather(Tq, ids) → DequantizeLinear(·, s, z), one scale.
        for (i, g) in nodes.enumerated() where g.opType == "Gather" && g.domain.isEmpty && g.inputs.count == 2 {
            guard quantizedCodes(g.inputs[0]), constants[g.inputs[1]] == nil, let r = onlyReader(g.outputs[0]),
                  let dq = node(r, "DequantizeLinear"), dq.inputs.first == g.outputs[0], dq.inputs.count >= 2,
                  constants[dq.inputs[1]]?.values.count == 1,
                  dq.inputs.count < 3 || dq.inputs[2].isEmpty || constants[dq.inputs[2]]?.values.count == 1 else { continue }
            let table = "\(g.inputs[0]).dequantized"
            var dequantize = dq
            dequantize.name = "\(dq.name).table"
            dequantize.inputs[0] = g.inputs[0]
            dequantize.outputs = [table]
            var gather = g
            gather.inputs[0] = table
            gather.outputs = dq.outputs
            replaced[i] = [dequantize, gather]
            removed.insert(r)
        }
        return nodes.indices.flatMap { i in removed.contains(i) ? [] : (replaced[i] ?? [nodes[i]]) }
    }
}
