import MLToolCore

extension ONNXGraphBuilder {
    /// Folds each batchNorm whose input is a conv output used by nothing else into that conv:
    /// w'[…, oc] = w[…, oc] · s[oc], b'[oc] = (b[oc] − mean[oc]) · s[oc] + beta[oc], s = gamma / sqrt(var + eps).
    /// Tensors named in `keeping` (graph outputs, the feature tensor) are never folded away.
    mutating func foldBatchNorms(keeping: Set<String>) {
        var consumers: [String: Int] = [:]
        for n in nodes { for i in n.inputs { consumers[i, default: 0] += 1 } }
        var producer: [String: Int] = [:]
        for (k, n) in nodes.enumerated() { for o in n.outputs { producer[o] = k } }
        var removed = Set<Int>()
        for (k, bn) in nodes.enumerated() where bn.op == .batchNorm && bn.inputs.count == 5 {
            let x = bn.inputs[0]
            guard let c = producer[x], nodes[c].op == .conv, consumers[x] == 1, !keeping.contains(x),
                  let w = weights[nodes[c].inputs[1]],
                  let gamma = weights[bn.inputs[1]]?.values, let beta = weights[bn.inputs[2]]?.values,
                  let mean = weights[bn.inputs[3]]?.values, let variance = weights[bn.inputs[4]]?.values,
                  let oc = w.shape.last, gamma.count == oc, beta.count == oc, mean.count == oc, variance.count == oc
            else { continue }
            let eps = bn.attributes.epsilon ?? 1e-5
            var scale = [Float](repeating: 0, count: oc)
            for i in 0..<oc { scale[i] = gamma[i] / (variance[i] + eps).squareRoot() }
            var wv = w.values
            for i in wv.indices { wv[i] *= scale[i % oc] }
            let oldBias = nodes[c].inputs.count > 2 ? weights[nodes[c].inputs[2]]?.values : nil
            var bias = [Float](repeating: 0, count: oc)
            for i in 0..<oc {
                let b0: Float = oldBias?[i] ?? 0
                bias[i] = (b0 - mean[i]) * scale[i] + beta[i]
            }
            // Fresh names: the original weights may be shared with another op.
            let wName = addWeight("\(nodes[c].inputs[1]).bnfolded", shape: w.shape, values: wv)
            let bName = addWeight("\(bn.name).folded_bias", shape: [oc], values: bias)
            nodes[c].inputs = [nodes[c].inputs[0], wName, bName]
            nodes[c].outputs = bn.outputs
            removed.insert(k)
        }
        nodes = nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
    }
}
