import MLToolCore

/// Dynamically quantized convolutions and LSTMs, read back as their float layers with quantized weights.
///
/// A convolution: DynamicQuantizeLinear(x) → ConvInteger(xq, Wq, xz, Wz) → Cast(to: float) → Mul(·, Mul(xs, Ws)),
/// what `quantize_dynamic` writes (its bias is an Add of the float bias after the Mul, left as it is). Older
/// onnxruntime quantizers add the bias in int32 before the Cast, quantizing it at run time with the activation's
/// scale: Add(·, [Reshape] Cast(to: int32, Floor|Round(Div(b, Mul(xs, Ws'))))). The chain becomes
/// Conv(DynamicQuantizeValues(x), DequantizeLinear(Wq, Ws, Wz), b): the weight stays int8 (per tensor or per output
/// channel), x goes through its dynamic quantization (`ONNXGraphBuilder+DynamicQuantized.swift`), and the bias
/// is the float `b` the run-time rounding approximated to within one step of xs·Ws'.
///
/// com.microsoft.DynamicQuantizeLSTM(X, Wq, Rq, B, lengths, h0, c0, P, Ws, Wz, Rs, Rz) is an ONNX LSTM whose weights
/// are int8 codes laid out [directions, inputs, 4·hidden] (gates i, o, f, c along the last axis), one scale and zero
/// point per direction (or per direction and column), X and H quantized to uint8 at each product. It becomes an LSTM
/// with the weights dequantized and transposed to ONNX's [directions, 4·hidden, inputs]: the engine's recurrent
/// kernels are float, so its products are exact where onnxruntime's are rounded.
extension DynamicQuantizedChains {
    mutating func rewriteConvolutions() {
        for (i, c) in nodes.enumerated() where c.opType == "ConvInteger" && c.domain.isEmpty && c.inputs.count >= 3
                                          && c.outputs.count == 1 {
            let w = c.inputs[1]
            let wz = c.inputs.count > 3 && !c.inputs[3].isEmpty ? c.inputs[3] : nil
            guard let (d, dq) = quantizer(of: c), quantizedCodes(w), let shape = constants[w]?.shape, shape.count >= 3,
                  wz.map(quantizedCodes) ?? true, var next = onlyReader(c.outputs[0]) else { continue }
            var chain: [Int] = [], bias: String?, biasScale: Int?
            if let add = node(next, "Add") {
                guard let term = add.inputs.first(where: { $0 != c.outputs[0] }),
                      let b = runTimeBias(term, quantizer: dq, channels: shape[0]),
                      let after = onlyReader(add.outputs[0]) else { continue }
                chain += [next] + b.nodes
                (bias, biasScale, next) = (b.bias, b.nodes.last, after)
            }
            guard let cast = node(next, "Cast"), cast.attributes["to"]?.i == 1, let u = onlyReader(cast.outputs[0]),
                  let mul = node(u, "Mul"),
                  let (v, ws) = weightScale(mul, besides: cast.outputs[0], quantizer: dq, channels: shape[0]),
                  wz.map({ constants[$0]?.values.count == constants[ws]?.values.count }) ?? true else { continue }
            let dequantize = dequantize(w, scale: ws, zeroPoint: wz, axis: 0, name: "\(c.name).weight")
            let conv = ONNXFile.Node(name: c.name, opType: "Conv", domain: "",
                                     inputs: [Self.values(dq), dequantize.outputs[0]] + (bias.map { [$0] } ?? []),
                                     outputs: mul.outputs, attributes: c.attributes, label: c.label)
            replaced[i] = [dequantize, conv]
            removed.formUnion(chain + [next, u, v])
            quantizerReaders[d, default: []].formUnion([i, v] + (biasScale.map { [$0] } ?? []))
        }
    }

    /// A bias quantized at run time, [Reshape] Cast(to: int32, Floor|Round(Div(b, Mul(xs, s)))), each node read by
    /// the chain alone: the float bias `b` (one value per output channel) and the chain's nodes, the Mul last.
    func runTimeBias(_ name: String, quantizer dq: ONNXFile.Node, channels: Int) -> (bias: String, nodes: [Int])? {
        var chain: [Int] = [], value = name
        if let r = producing(value, "Reshape") { chain.append(r); value = nodes[r].inputs[0] }
        guard let c = producing(value, "Cast"), nodes[c].attributes["to"]?.i == 6,
              let f = producing(nodes[c].inputs[0], "Floor") ?? producing(nodes[c].inputs[0], "Round"),
              let q = producing(nodes[f].inputs[0], "Div"), nodes[q].inputs.count == 2,
              let b = constants[nodes[q].inputs[0]], !b.isInteger, b.values.count == channels,
              let s = producing(nodes[q].inputs[1], "Mul"), nodes[s].inputs.contains(dq.outputs[1]),
              nodes[s].inputs.allSatisfy({ $0 == dq.outputs[1] || constants[$0] != nil }) else { return nil }
        return (nodes[q].inputs[0], chain + [c, f, q, s])
    }

    mutating func rewriteRecurrent() {
        for (i, l) in nodes.enumerated() where l.opType == "DynamicQuantizeLSTM" && l.domain == "com.microsoft" && l.inputs.count >= 12 {
            guard let w = dequantizedGates(l.inputs[1], scale: l.inputs[8], zeroPoint: l.inputs[9]),
                  let r = dequantizedGates(l.inputs[2], scale: l.inputs[10], zeroPoint: l.inputs[11]) else { continue }
            func constant(_ t: ONNXConstant, _ name: String) -> ONNXFile.Node {
                ONNXFile.Node(name: "\(l.name).\(name)", opType: "Constant", domain: "", inputs: [], outputs: ["\(l.name).\(name)"],
                              attributes: ["value": ONNXFile.Attribute(name: "value", type: 4, t: t)])
            }
            let weights = [constant(w, "W"), constant(r, "R")]
            var lstm = l
            (lstm.opType, lstm.domain) = ("LSTM", "")
            lstm.inputs = [l.inputs[0]] + weights.map { $0.outputs[0] } + l.inputs[3..<8]
            replaced[i] = weights + [lstm]
        }
    }

    /// Int8 gate weights [directions, inputs, 4·hidden] with one scale and zero point per direction (or per direction
    /// and column), dequantized and transposed to [directions, 4·hidden, inputs]; nil when they do not fit that layout.
    func dequantizedGates(_ codes: String, scale: String, zeroPoint: String) -> ONNXConstant? {
        guard quantizedCodes(codes), let q = constants[codes], q.rank == 3, let s = constants[scale], !s.isInteger,
              let z = zeroPoint.isEmpty ? ONNXConstant(shape: s.shape, values: Array(repeating: 0, count: s.values.count))
                                        : constants[zeroPoint], z.shape == s.shape else { return nil }
        let (d, k, g) = (q.shape[0], q.shape[1], q.shape[2])
        guard s.values.count == d || s.values.count == d * g else { return nil }
        let perColumn = s.values.count == d * g
        var values = [Double](repeating: 0, count: q.values.count)
        for dir in 0..<d {
            for col in 0..<g {
                let p = perColumn ? dir * g + col : dir
                for row in 0..<k {
                    values[(dir * g + col) * k + row] = (q.values[(dir * k + row) * g + col] - z.values[p]) * s.values[p]
                }
            }
        }
        return ONNXConstant(shape: [d, g, k], values: values)
    }
}
