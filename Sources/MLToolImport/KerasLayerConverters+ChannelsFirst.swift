import Foundation
import MLToolCore

/// The channels_first 2-D layers of the Keras importer.
///
/// Inside the graph a channels_first tensor keeps Keras's own (N, C, H, W) order, so the layers that do not look at a
/// layout need nothing: Add, Concatenate on axis 1, Reshape, and a channels_last Flatten (C, H, W order, which the
/// Dense after it was trained on). A layer that does look (convolutions, pools, ZeroPadding2D, BatchNormalization on
/// axis 1) runs as its NHWC form between a transpose to (N, H, W, C) and one back. `GraphPasses.composeTransposes`
/// removes each back-and-forth pair between two such layers, so a chain of them runs in the engine's NHWC with
/// transposes left only where Keras's order matters (merges, Flatten). An image input that only channels_first layers
/// read is taken as (N, H, W, C), as images are, and transposed to (N, C, H, W) at the edge.
extension KerasLayerConverters {
    /// The 2-D classes (and their aliases) whose channels_first calls run through NHWC.
    static let throughNHWC: Set<String> = [
        "Conv2D", "Convolution2D", "DepthwiseConv2D", "SeparableConv2D", "SeparableConvolution2D", "MaxPooling2D",
        "MaxPool2D", "AveragePooling2D", "AvgPool2D", "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPooling2D",
        "GlobalMaxPool2D", "ZeroPadding2D", "Conv2DTranspose", "Convolution2DTranspose",
    ]

    /// `convert`, with channels_first calls on (N, C, H, W) run through NHWC.
    static func channelsFirst(_ convert: @escaping KerasConvert) -> KerasConvert {
        { b, call in
            guard call.config.string("data_format") == "channels_first" else { return try convert(&b, call) }
            let s = b.shape(try single(call, b))
            guard s.count == 4 else {
                throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' input",
                                          expected: "a rank-4 (N, C, H, W) tensor", actual: KerasGraphBuilder.format(s))
            }
            return try permuted(&b, call, perm: [0, 2, 3, 1], convert)
        }
    }

    /// Runs `convert` (with `config` in place of the layer's) on the call's input transposed by `perm`, and transposes
    /// a result of the same rank back. A softmax activation, over the last axis of Keras's output, comes after that.
    static func permuted(_ b: inout KerasGraphBuilder, _ call: KerasCall, perm: [Int], config: [String: Any]? = nil,
                         _ convert: KerasConvert) throws -> String {
        let x = try single(call, b)
        let s = b.shape(x)
        var inner = call
        inner.layer.config = config ?? call.config
        var after = KerasActivation.linear
        if call.config.value("activation") != nil {
            let a = try activation(of: b, call)
            switch a {
            case .softmax, .logSoftmax:
                after = a
                inner.layer.config["activation"] = "linear"
            default: break
            }
        }
        b.emit(call.node + ".perm", .transpose, [x], output: call.output + ".perm", shape: perm.map { s[$0] },
               Attributes(perm: perm))
        inner.inputs = [call.output + ".perm"]
        inner.output = call.output + ".inner"
        inner.node = call.node + ".inner"
        let y = try convert(&b, inner)
        let ys = b.shape(y)
        guard ys.count == perm.count else {
            // A global pool without keepdims: (N, C) in either layout.
            if case .linear = after { return y }
            b.emitActivation(after, node: call.node, input: y, output: call.output)
            return call.output
        }
        var inverse = perm
        for (i, p) in perm.enumerated() { inverse[p] = i }
        return finish(&b, call, from: y, [("back", .transpose, Attributes(perm: inverse), inverse.map { ys[$0] })],
                      activation: after)
    }

    /// Whether the input `layer` is a (N, C, H, W) image: of rank 4 and read only by channels_first 2-D layers.
    static func isChannelsFirstImage(_ layer: KerasLayer, in layers: [KerasLayer]) -> Bool {
        let readers = layers.filter { $0.calls.contains { $0.contains { $0.layer == layer.name } } }
        let image = throughNHWC.union(["Cropping2D", "UpSampling2D"])
        return !readers.isEmpty && readers.allSatisfy {
            image.contains($0.className) && $0.config.string("data_format") == "channels_first"
        }
    }
}
