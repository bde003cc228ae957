import Foundation
import MLToolCore

/// The 2-D cropping and upsampling layers of the Keras importer, and Embedding (token ids → vectors, the input of
/// text Conv1D networks).
extension KerasLayerConverters {
    static let resampling: [String: KerasLayerConverter] = [
        "Cropping2D": .init(check: nil, convert: cropping2D),
        "UpSampling2D": .init(check: checkUpSampling, convert: upSampling2D),
        "Embedding": .init(check: checkEmbedding, convert: embedding),
    ]

    /// The classes whose converters read data_format and handle channels_first themselves.
    static let channelsFirstClasses = Set<String>([
        "Conv1D", "Convolution1D", "SeparableConv1D", "SeparableConvolution1D", "DepthwiseConv1D", "MaxPooling1D",
        "MaxPool1D", "AveragePooling1D", "AvgPool1D", "GlobalMaxPooling1D", "GlobalMaxPool1D", "GlobalAveragePooling1D",
        "GlobalAvgPool1D", "Cropping2D", "UpSampling2D", "Flatten",
    ]).union(throughNHWC)

    private static func checkUpSampling(_ c: [String: Any]) -> String? {
        let i = c.string("interpolation") ?? "nearest"
        return i == "nearest" || i == "bilinear" ? nil : "interpolation \(i)"
    }

    /// A mask changes what later layers compute (pools skip masked steps): refused rather than ignored.
    private static func checkEmbedding(_ c: [String: Any]) -> String? {
        c.bool("mask_zero") == true ? "mask_zero" : nil
    }

    /// The spatial axes of a rank-4 input: (1, 2) for NHWC, (2, 3) for channels_first NCHW.
    private static func image(_ b: KerasGraphBuilder, _ call: KerasCall) throws -> (String, [Int], Bool) {
        let x = try single(call, b)
        let s = b.shape(x)
        guard s.count == 4 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' input",
                                      expected: "a rank-4 image tensor", actual: KerasGraphBuilder.format(s))
        }
        return (x, s, call.config.string("data_format") == "channels_first")
    }

    private static func cropping2D(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, _, cf) = try image(b, call)
        let value = call.config.value("cropping") ?? 0
        // An int, (h, w) or ((top, bottom), (left, right)).
        let axes = (value as? [Any]).flatMap { $0.count == 2 ? $0 : nil } ?? [value, value]
        let crops = try axes.map { try pair(b, call, $0, key: "cropping") }
        return try crop(&b, call, x, axes: cf ? [2, 3] : [1, 2], crops)
    }

    /// Nearest (each pixel repeated) or bilinear; channels_first goes through NHWC and back.
    private static func upSampling2D(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, s, cf) = try image(b, call)
        let name = call.layer.name
        let factors: [Int]
        if let list = call.config.ints("size", count: 2), list.allSatisfy({ (1...maxWindow).contains($0) }) {
            factors = list
        } else if call.config.value("size") == nil {
            factors = [2, 2]
        } else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)' size", expected: "two sizes from 1 to \(maxWindow)",
                                      actual: "\(call.config.value("size") ?? "nothing")")
        }
        let nhwc = cf ? [s[0], s[2], s[3], s[1]] : s
        let out = try zip(nhwc[1...2], factors).map { $0 < 0 ? -1 : try b.mul($0, $1, place: name) }
        let resized = [nhwc[0], out[0], out[1], nhwc[3]]
        let bilinear = call.config.string("interpolation") == "bilinear"
        var steps: [(String, Op, Attributes, [Int])] = []
        if cf { steps.append(("nhwc", .transpose, Attributes(perm: [0, 2, 3, 1]), nhwc)) }
        steps.append(("resize", .resize, resizeAttributes(factors, out: out, bilinear: bilinear), resized))
        if cf { steps.append(("nchw", .transpose, Attributes(perm: [0, 3, 1, 2]), [s[0], s[1], out[0], out[1]])) }
        return finish(&b, call, from: x, steps, activation: .linear)
    }

    /// Token ids (N, …) → (N, …, D): a gather of the (V, D) table's rows.
    private static func embedding(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let name = call.layer.name
        guard let v = call.config.int("input_dim"), v > 0, let d = call.config.int("output_dim"), d > 0 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)'", expected: "input_dim and output_dim > 0",
                                      actual: "\(call.config.value("input_dim") ?? "nothing"), \(call.config.value("output_dim") ?? "nothing")")
        }
        let table = try b.requiredWeight(name, "embeddings", expected: [v, d])
        let data = b.constant(name + ".embeddings", shape: table.shape, data: table.data)
        b.emit(call.node, .gather, [data, x], output: call.output, shape: b.shape(x) + [d], Attributes(axis: 0))
        return call.output
    }
}
