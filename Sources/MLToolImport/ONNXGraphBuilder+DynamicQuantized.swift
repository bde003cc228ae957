import MLToolCore

/// onnxruntime's dynamic quantization (`quantize_dynamic`, QOperator form) read back as the layers it quantized.
///
/// A weight becomes the chain
///
///     DynamicQuantizeLinear(x) → (xq, xs, xz)
///     MatMulInteger(xq, Wq, xz, Wz) → Cast(to: float) → Mul(·, Mul(xs, Ws))
///
/// which is x · Ws·(Wq − Wz) with x rounded to uint8 on the way: a dense layer with a quantized weight and a
/// dynamically quantized activation — what the engine's int8 kernels run (`QuantizedWeights`, reading the codes of
/// the input's dynamic quantization). The chain is rewritten, before conversion, into
/// MatMul(DynamicQuantizeValues(x), DequantizeLinear(Wq, Ws, Wz)), DynamicQuantizeValues being the importer's own
/// node for DynamicQuantizeLinear → DequantizeLinear (the IR's `quantize` in mode "dynamic", one per quantizer):
/// the DequantizeLinear folds at import and its weight is stored as int8 with its scales and zero points (uint8
/// codes shifted by 128, exactly: `dequantize`), so the layer runs on the int8 kernels where the engine takes them,
/// and on the same weights dequantized elsewhere. A quantized embedding table, Gather(Tq, ids) → DequantizeLinear(·,
/// s, z) with one scale, becomes Gather(DequantizeLinear(Tq, s, z), ids) in the same way (the table stays int8).
/// Convolutions (ConvInteger) and com.microsoft.DynamicQuantizeLSTM: `DynamicQuantizedChains+Layers.swift`.
///
/// Nodes of a chain that does not match exactly (a quantized value read by anything else, a graph output, scales
/// that are not constants) are left as they are, and the importer names them as unsupported.
extension ONNXGraphBuilder {
    /// `nodes` with every matching dynamic-quantization chain rewritten (see above); `constants` are the initializers,
    /// `outputs` the graph's output names.
    static func fusingDynamicQuantization(_ nodes: [ONNXFile.Node], constants: [String: ONNXConstant],
                                          outputs: Set<String>) -> [ONNXFile.Node] {
        let kinds: Set<String> = ["MatMulInteger", "ConvInteger", "DequantizeLinear", "DynamicQuantizeLSTM"]
        guard nodes.contains(where: { kinds.contains($0.opType) }) else { return nodes }
        var chains = DynamicQuantizedChains(nodes, constants: constants, outputs: outputs)
        chains.rewriteMatMuls()
        chains.rewriteConvolutions()
        chains.rewriteEmbeddings()
        chains.rewriteRecurrent()
        return chains.result()
    }
}

/// The rewrites of `fusingDynamicQuantization`: which nodes go, which are replaced, and the DynamicQuantizeLinear
/// nodes whose readers were rewritten (each goes when every reader of its outputs is).
struct DynamicQuantizedChains {
    let nodes: [ONNXFile.Node]
    let constants: [String: ONNXConstant]
    let outputs: Set<String>
    var producer: [String: Int] = [:], readers: [String: [Int]] = [:]
    /// Reads of names inside If branches and loop bodies: such a value has readers the lists above cannot see.
    let hidden: Set<String>
    var removed = Set<Int>(), replaced: [Int: [ONNXFile.Node]] = [:]
    var quantizerReaders: [Int: Set<Int>] = [:]

    init(_ nodes: [ONNXFile.Node], constants: [String: ONNXConstant], outputs: Set<String>) {
        self.nodes = nodes
        self.constants = constants
        self.outputs = outputs
        for (i, n) in nodes.enumerated() {
            for o in n.outputs where !o.isEmpty { producer[o] = i }
            for x in Set(n.inputs) where !x.isEmpty { readers[x, default: []].append(i) }
        }
        hidden = Set(nodes.flatMap { n in n.attributes.values.compactMap(\.g).flatMap { $0.nodes.flatMap(\.inputs) } })
    }

    /// The one node reading `name`, when nothing else (a graph output, a subgraph) reads it.
    func onlyReader(_ name: String) -> Int? {
        guard !outputs.contains(name), !hidden.contains(name), let r = readers[name], r.count == 1 else { return nil }
        return r[0]
    }

    /// Node `i` when it is an `op` of the default domain with an input and an output (the importer names a node
    /// without them later; a chain never matches one).
    func node(_ i: Int?, _ op: String) -> ONNXFile.Node? {
        guard let i, nodes[i].opType == op, nodes[i].domain.isEmpty || nodes[i].domain == "ai.onnx",
              !nodes[i].inputs.isEmpty, !nodes[i].outputs.isEmpty else { return nil }
        return nodes[i]
    }

    /// The `op` node making `name`, when the chain is the only reader of `name`.
    func producing(_ name: String, _ op: String) -> Int? {
        guard let p = producer[name], node(p, op) != nil, onlyReader(name) != nil else { return nil }
        return p
    }

    func quantizedCodes(_ name: String) -> Bool {
        guard let c = constants[name] else { return false }
        return c.dataType == 2 || c.dataType == 3   // uint8, int8
    }

    /// The DynamicQuantizeLinear making an integer op's quantized input and zero point (`inputs[0]`, `inputs[2]`).
    func quantizer(of op: ONNXFile.Node) -> (index: Int, node: ONNXFile.Node)? {
        guard let d = producer[op.inputs[0]], let dq = node(d, "DynamicQuantizeLinear"), dq.outputs.count == 3,
              dq.outputs[0] == op.inputs[0], dq.outputs[2] == op.inputs[2] else { return nil }
        return (d, dq)
    }

    /// Of the final Mul(·, Mul(xs, Ws)) of a chain, the inner Mul (read by this chain alone) and Ws, a constant with
    /// one value or `channels` values.
    func weightScale(_ mul: ONNXFile.Node, besides value: String, quantizer dq: ONNXFile.Node,
                     channels: Int) -> (index: Int, scale: String)? {
        guard let s = mul.inputs.first(where: { $0 != value }), let v = producer[s], let scales = node(v, "Mul"),
              onlyReader(s) != nil, scales.inputs.contains(dq.outputs[1]),
              let ws = scales.inputs.first(where: { $0 != dq.outputs[1] }), let wsc = constants[ws],
              wsc.values.count == 1 || (wsc.rank == 1 && wsc.values.count == channels) else { return nil }
        return (v, ws)
    }

    /// DequantizeLinear(Wq, Ws, Wz) as a node making "`w`.dequantized", per channel along `axis` when Ws has more
    /// than one value.
    func dequantize(_ w: String, scale: String, zeroPoint: String?, axis: Int, name: String) -> ONNXFile.Node {
        var node = ONNXFile.Node(name: name, opType: "DequantizeLinear", domain: "",
                                 inputs: [w, scale] + (zeroPoint.map { [$0] } ?? []), outputs: ["\(w).dequantized"],
                                 attributes: [:])
        if let s = constants[scale], s.values.count > 1 || s.rank == 1 {
            node.attributes["axis"] = ONNXFile.Attribute(name: "axis", type: 2, i: axis)
        }
        return node
    }

    mutating func rewriteMatMuls() {
        for (i, m) in nodes.enumerated() where m.opType == "MatMulInteger" && m.domain.isEmpty && m.inputs.count >= 3
                                          && m.outputs.count == 1 {
            let w = m.inputs[1]
            let wz = m.inputs.count > 3 && !m.inputs[3].isEmpty ? m.inputs[3] : nil
            guard let (d, dq) = quantizer(of: m), quantizedCodes(w), constants[w]?.rank == 2,
                  wz.map(quantizedCodes) ?? true, let n = constants[w]?.shape[1],
                  let c = onlyReader(m.outputs[0]), let cast = node(c, "Cast"), cast.attributes["to"]?.i == 1,
                  let u = onlyReader(cast.outputs[0]), let mul = node(u, "Mul"),
                  let (v, ws) = weightScale(mul, besides: cast.outputs[0], quantizer: dq, channels: n),
                  wz.map({ constants[$0]?.values.count == constants[ws]?.values.count }) ?? true else { continue }
            let dequantize = dequantize(w, scale: ws, zeroPoint: wz, axis: 1, name: "\(m.name).weight")
            let matMul = ONNXFile.Node(name: m.name, opType: "MatMul", domain: "", inputs: [Self.values(dq), dequantize.outputs[0]],
                                       outputs: mul.outputs, attributes: [:], label: m.label)
            replaced[i] = [dequantize, matMul]
            removed.formUnion([c, u, v])
            quantizerReaders[d, default: []].formUnion([i, v])
        }
    }

    /// Quantized embedding tables: Gather(Tq, ids) → DequantizeLinear(·, s, z), one scale.
    mutating func rewriteEmbeddings() {
        for (i, g) in nodes.enumerated() where g.opType == "Gather" && g.domain.isEmpty && g.inputs.count == 2 && g.outputs.count == 1 {
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
    }

    /// The name of what a rewritten layer reads: DynamicQuantizeLinear `dq`'s input quantized and dequantized again.
    static func values(_ dq: ONNXFile.Node) -> String { "\(dq.outputs[0]).values" }

    /// The nodes after the rewrites: before each DynamicQuantizeLinear whose readers were rewritten, the
    /// DynamicQuantizeValues node they read; the DynamicQuantizeLinear nodes nothing reads any more left out.
    func result() -> [ONNXFile.Node] {
        var removed = removed, replaced = replaced
        for (d, chains) in quantizerReaders {
            let dq = nodes[d]
            let values = ONNXFile.Node(name: "\(dq.name).values", opType: "DynamicQuantizeValues",
                                       domain: ONNXGraphBuilder.expansionDomain, inputs: [dq.inputs[0]],
                                       outputs: [Self.values(dq)], attributes: [:], label: dq.label)
            let reads = Set(dq.outputs.flatMap { readers[$0] ?? [] })
            let kept = !reads.isSubset(of: chains) || dq.outputs.contains(where: { outputs.contains($0) || hidden.contains($0) })
            replaced[d] = kept ? [values, dq] : [values]
        }
        return nodes.indices.flatMap { i in removed.contains(i) ? [] : (replaced[i] ?? [nodes[i]]) }
    }
}
