import MLToolCore

/// Bias correction: quantizing a weight shifts the mean of its layer's output by (Wq − W) · E[x]; subtracting that
/// shift from the bias removes the systematic part of the error, which is what hurts BatchNorm-folded nets at few
/// bits (Nagel et al., "Data-Free Quantization", 2019). E[x], the per-channel mean of the layer's input, is measured
/// on the float model by the caller (it owns the engine); this type only does the arithmetic.
///
/// Measured on EfficientNet-Lite0 + a logistic head (Fashion-MNIST): 4-bit palettes 0.627 → 0.870 holdout accuracy
/// (float 0.873). A variant that also fed the quantized model's own input means back (to absorb upstream drift)
/// over-corrected through the clipped activations and diverged, so only the float means are used.
public enum BiasCorrection {
    /// A conv or dense layer whose bias can absorb a shift.
    public struct Layer: Equatable, Sendable {
        /// The graph value read by the layer (its per-channel mean is what the caller measures).
        public var input: String
        public var weight: String
        public var bias: String
        public var groups: Int
    }

    /// The conv / dense layers with a weight and a bias tensor, in graph order.
    public static func layers(of model: Model) -> [Layer] {
        let byName = model.tensorsByName
        var out = [Layer]()
        for node in model.metadata.graph?.nodes ?? [] where node.op == .conv || node.op == .dense {
            guard node.inputs.count > 2, byName[node.inputs[1]] != nil, byName[node.inputs[2]] != nil else { continue }
            out.append(Layer(input: node.inputs[0], weight: node.inputs[1], bias: node.inputs[2],
                             groups: node.op == .conv ? max(1, node.attributes.groups ?? 1) : 1))
        }
        return out
    }

    /// Per output channel, Σ (W − Wq) · μ for a weight laid out (…, cin / groups, cout) — conv (kh, kw, ci, co) or
    /// dense (in, out): what the bias must gain so the layer's mean output is the float one. Input channel of
    /// (ci, co) is group(co) · cin/groups + ci; zero padding at the borders is ignored.
    public static func shift(weight w: [Float], quantized wq: [Float], shape: [Int], groups: Int,
                             inputMean mu: [Float]) throws -> [Float] {
        guard shape.count >= 2, w.count == wq.count, w.count == shape.reduce(1, *) else {
            throw QuantError.invalidOptions("bias correction: weight shape \(shape) does not match its \(w.count) values")
        }
        let cout = shape[shape.count - 1], cinG = shape[shape.count - 2]
        let positions = w.count / max(1, cout * cinG)
        guard groups >= 1, cout % groups == 0, mu.count == cinG * groups else {
            throw QuantError.invalidOptions(
                "bias correction: \(mu.count) input means for a weight \(shape) with \(groups) groups (expected \(cinG * groups))")
        }
        let perGroup = cout / groups
        var shift = [Double](repeating: 0, count: cout)
        var i = 0
        for _ in 0..<positions {
            for ci in 0..<cinG {
                for co in 0..<cout {
                    shift[co] += (Double(w[i]) - Double(wq[i])) * Double(mu[(co / perGroup) * cinG + ci])
                    i += 1
                }
            }
        }
        return shift.map { Float($0) }
    }

    /// Adds each compressed layer's shift to its (float) bias. Layers whose weight is unchanged are left alone.
    /// Returns the number of biases changed.
    @discardableResult
    public static func apply(original: Model, quantized: inout Model, inputMeans: [String: [Float]]) throws -> Int {
        let floats = original.tensorsByName
        var index = [String: Int]()
        for (i, t) in quantized.tensors.enumerated() { index[t.name] = i }
        var changed = 0
        for layer in layers(of: original) {
            guard let mu = inputMeans[layer.input], let w = floats[layer.weight], let b = floats[layer.bias],
                  b.dtype == .f32, let wi = index[layer.weight], let bi = index[layer.bias],
                  quantized.tensors[wi].dtype != w.dtype else { continue }
            let s = try shift(weight: try w.floats(), quantized: try quantized.tensors[wi].floats(), shape: w.shape,
                              groups: layer.groups, inputMean: mu)
            var bias = try b.floats()
            guard bias.count == s.count else { continue }
            for c in bias.indices { bias[c] += s[c] }
            quantized.tensors[bi] = StoredTensor(name: b.name, tensor: Tensor(shape: b.shape, data: bias))
            changed += 1
        }
        return changed
    }
}
