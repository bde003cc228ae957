import Foundation
import MLToolCore

/// Activations beyond the fusable ones: a Lambda that is only a known activation (`KerasLambda`), and ReLU with a
/// threshold.
extension KerasLayerConverters {
    /// A Lambda recognised by `KerasLambda` (the source refused any other before conversion started).
    static func lambda(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        guard let act = KerasLambda.activation(call.config, kerasMajor: b.kerasMajor) else {
            throw ImportError.refused(file: b.file, place: "layer '\(call.layer.name)' (Lambda)", reason: KerasLambda.refusal)
        }
        if case .linear = act { return x }
        b.emitActivation(act, node: call.node, input: x, output: call.output)
        return call.output
    }

    /// Keras's ReLU with threshold t ≠ 0: y = x if x > t else 0, clipped to [0, max_value] when given, minus
    /// negative_slope · relu(t − x) (keras.activations.relu, and tf.keras's backend.relu alike).
    static func thresholdRelu(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ x: String, threshold t: Float,
                              slope: Float, maxValue: Float?) -> String {
        let s = b.shape(x), node = call.node, out = call.output
        let lastIsGate = maxValue == nil && slope == 0
        b.emit(lastIsGate ? node : node + ".gate", .unary, [x], output: lastIsGate ? out : out + ".gate", shape: s,
               Attributes(alpha: t, mode: UnaryFunction.thresholdedRelu.rawValue))
        var current = out + ".gate"
        if let m = maxValue {
            let last = slope == 0
            b.emit(last ? node : node + ".clip", .clip, [current], output: last ? out : out + ".clip", shape: s,
                   Attributes(min: 0, max: m))
            current = out + ".clip"
        }
        guard slope != 0 else { return out }
        let tc = b.constant(call.layer.name + ".threshold", shape: [1], data: [t])
        let sc = b.constant(call.layer.name + ".slope", shape: [1], data: [slope])
        b.emit(node + ".below", .sub, [tc, x], output: out + ".below", shape: s, Attributes(activation: .relu))
        b.emit(node + ".leak", .mul, [out + ".below", sc], output: out + ".leak", shape: s)
        b.emit(node, .sub, [current, out + ".leak"], output: out, shape: s)
        return out
    }
}
