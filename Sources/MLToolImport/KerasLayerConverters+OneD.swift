import Foundation
import MLToolCore

/// The 1-D layers of the Keras importer: Conv1D, SeparableConv1D, DepthwiseConv1D, the 1-D pools, Cropping1D,
/// ZeroPadding1D and UpSampling1D.
///
/// A sequence is (N, L, C) in Keras (channels_last) or (N, C, L) (channels_first: transposed to (N, L, C) first and
/// back at the end). Convolutions and pools run as their 2-D form on (N, L, 1, C) — an unsqueeze before, a squeeze
/// after — with kernels (K, C/groups, F) as (K, 1, C/groups, F): the same bytes. 'causal' padding is 'valid' after
/// (K − 1)·dilation zeros at the start. An activation that cannot be fused comes last, in the layer's output
/// layout (a softmax over the last axis of a channels_first output is over L, as in Keras).
extension KerasLayerConverters {
    static let oneD: [String: KerasLayerConverter] = [
        "Conv1D": .init(check: checkConv1D, convert: conv1D),
        "SeparableConv1D": .init(check: checkConv1D, convert: separable1D),
        "DepthwiseConv1D": .init(check: checkConv1D, convert: depthwise1D),
        "MaxPooling1D": .init(check: checkPool, convert: { try pool1D(&$0, $1, .maxPool) }),
        "AveragePooling1D": .init(check: checkPool, convert: { try pool1D(&$0, $1, .avgPool) }),
        "GlobalMaxPooling1D": .init(check: nil, convert: { try globalPool1D(&$0, $1, .max) }),
        "GlobalAveragePooling1D": .init(check: nil, convert: { try globalPool1D(&$0, $1, .mean) }),
        "Cropping1D": .init(check: nil, convert: cropping1D),
        "ZeroPadding1D": .init(check: nil, convert: zeroPadding1D),
        "UpSampling1D": .init(check: nil, convert: upSampling1D),
    ]

    /// Other names Keras accepts for the same 1-D classes.
    static let oneDAliases = [("Convolution1D", "Conv1D"), ("SeparableConvolution1D", "SeparableConv1D"),
                              ("MaxPool1D", "MaxPooling1D"), ("AvgPool1D", "AveragePooling1D"),
                              ("GlobalMaxPool1D", "GlobalMaxPooling1D"), ("GlobalAvgPool1D", "GlobalAveragePooling1D"),
                              ("SpatialDropout1D", "Dropout")]

    /// The largest kernel, stride, dilation, and dilated kernel extent accepted from a file: far above any real
    /// network, and low enough that a hostile value cannot make the engine pad or allocate without bound.
    static let maxWindow = 1 << 16

    private static func checkConv1D(_ c: [String: Any]) -> String? {
        let padding = c.string("padding") ?? "valid"
        if !["same", "valid", "causal"].contains(padding) { return "padding \(padding)" }
        if (c.int("depth_multiplier") ?? 1) < 1 { return "depth_multiplier < 1" }
        return nil
    }

    // MARK: - Layout

    /// The call's single input and its shape, which must be of rank 3.
    private static func rank3(_ b: KerasGraphBuilder, _ call: KerasCall) throws -> (String, [Int]) {
        let x = try single(call, b)
        let s = b.shape(x)
        guard s.count == 3 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' input",
                                      expected: "a rank-3 (N, steps, channels) tensor", actual: KerasGraphBuilder.format(s))
        }
        return (x, s)
    }

    /// The call's input as (N, L, C), transposing a channels_first (N, C, L) input, and whether it was.
    private static func sequence(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> (String, [Int], Bool) {
        let (x, s) = try rank3(b, call)
        guard call.config.string("data_format") == "channels_first" else { return (x, s, false) }
        let nlc = [s[0], s[2], s[1]]
        b.emit(call.node + ".nlc", .transpose, [x], output: call.output + ".nlc", shape: nlc, Attributes(perm: [0, 2, 1]))
        return (call.output + ".nlc", nlc, true)
    }

    /// (N, L, C) → (N, L, 1, C).
    private static func lift(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ x: String, _ s: [Int]) -> String {
        b.emit(call.node + ".to2d", .unsqueeze, [x], output: call.output + ".2d", shape: [s[0], s[1], 1, s[2]],
               Attributes(axes: [2]))
        return call.output + ".2d"
    }

    /// Ends a lifted layer: (N, L', 1, F) back to (N, L', F), to (N, F, L') for channels_first, then `activation`;
    /// the last node writes the call's output.
    private static func lower(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ y: String, channelsFirst: Bool,
                              activation: KerasActivation = .linear) -> String {
        let s = b.shape(y)
        var steps = [("to1d", Op.squeeze, Attributes(axes: [2]), [s[0], s[1], s[3]])]
        if channelsFirst { steps.append(("ncl", .transpose, Attributes(perm: [0, 2, 1]), [s[0], s[3], s[1]])) }
        return finish(&b, call, from: y, steps, activation: activation)
    }

    /// Emits `steps` one after the other from `input`, then `activation`; the last node is the call's.
    static func finish(_ b: inout KerasGraphBuilder, _ call: KerasCall, from input: String,
                       _ steps: [(String, Op, Attributes, [Int])], activation: KerasActivation) -> String {
        var current = input
        let linear = if case .linear = activation { true } else { false }
        for (i, (suffix, op, attributes, shape)) in steps.enumerated() {
            let last = linear && i == steps.count - 1
            let out = last ? call.output : call.output + "." + suffix
            b.emit(last ? call.node : call.node + "." + suffix, op, [current], output: out, shape: shape, attributes)
            current = out
        }
        if !linear { b.emitActivation(activation, node: call.node, input: current, output: call.output) }
        return call.output
    }

    /// The activation split into the part fused into a conv and the part that follows as its own node.
    private static func split(_ a: KerasActivation) -> (fused: Activation?, after: KerasActivation) {
        if case .fused(let f) = a { return (f, .linear) }
        return (nil, a)
    }

    // MARK: - Geometry

    /// A window size (kernel_size, strides, dilation_rate, pool_size, size) given as an int or a one-element list,
    /// from 1 to `maxWindow`; `fallback` when the key is absent or null.
    static func windowSize(_ b: KerasGraphBuilder, _ call: KerasCall, _ key: String, fallback: Int?) throws -> Int {
        if call.config.value(key) == nil, let fallback { return fallback }
        guard let v = call.config.ints(key, count: 1)?.first, v >= 1, v <= maxWindow else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' \(key)",
                                      expected: "a size from 1 to \(maxWindow)", actual: "\(call.config.value(key) ?? "nothing")")
        }
        return v
    }

    /// Where a 1-D window goes: output length, stride, dilation and (begin, end) padding, or for 'same' with a
    /// stride over a free length TensorFlow's split resolved by the engine per input (`autoPad` SAME_UPPER).
    struct Window1D {
        var size: Int, stride: Int, dilation: Int, begin: Int, end: Int
        var autoPad = false
        /// The IR attributes of the lifted (L, 1) window.
        var pads: [Int]? { autoPad ? nil : [begin, 0, end, 0] }
    }

    /// The window of a 1-D convolution or pool over `length` (-1 when free).
    private static func geometry1D(_ b: KerasGraphBuilder, _ call: KerasCall, length: Int, kernel: Int,
                                   strideKey: String = "strides", strideFallback: Int = 1) throws -> Window1D {
        let name = call.layer.name
        let stride = try windowSize(b, call, strideKey, fallback: strideFallback)
        let dilation = try windowSize(b, call, "dilation_rate", fallback: 1)
        let extent = try b.add(b.mul(kernel - 1, dilation, place: name), 1, place: name)
        guard extent <= maxWindow else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)' dilation_rate",
                                      expected: "a dilated kernel of at most \(maxWindow) steps",
                                      actual: "kernel \(kernel) × dilation \(dilation)")
        }
        let padding = call.config.string("padding") ?? "valid"
        if padding == "valid", length >= 0, extent > length {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)' kernel_size",
                                      expected: "a kernel of at most the input's \(length) steps with 'valid' padding",
                                      actual: dilation == 1 ? "\(kernel)" : "\(kernel) dilated by \(dilation) (\(extent) steps)")
        }
        if padding == "causal" {
            let padded = length < 0 ? -1 : try b.add(length, extent - 1, place: name)
            let w = try b.window(padded, kernel: kernel, stride: stride, dilation: dilation, padding: "valid", place: name)
            return Window1D(size: w.size, stride: stride, dilation: dilation, begin: extent - 1, end: 0)
        }
        if padding == "same", length < 0, stride > 1 {
            return Window1D(size: -1, stride: stride, dilation: dilation, begin: 0, end: 0, autoPad: true)
        }
        let w = try b.window(length, kernel: kernel, stride: stride, dilation: dilation, padding: padding, place: name)
        return Window1D(size: w.size, stride: stride, dilation: dilation, begin: w.begin, end: w.end)
    }

    private static func attributes(_ g: Window1D, groups: Int, activation: Activation?) -> Attributes {
        var a = Attributes(strides: [g.stride, 1], dilations: [g.dilation, 1], pads: g.pads, groups: groups,
                           activation: activation)
        if g.autoPad { a.autoPad = "SAME_UPPER" }
        return a
    }

    private static func bias(_ b: inout KerasGraphBuilder, _ call: KerasCall, count: Int) throws -> [String] {
        guard call.config.bool("use_bias") ?? true else { return [] }
        let w = try b.requiredWeight(call.layer.name, "bias", expected: [count])
        return [b.constant(call.layer.name + ".bias", shape: w.shape, data: w.data)]
    }

    // MARK: - Convolutions

    private static func conv1D(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, s, cf) = try sequence(&b, call)
        let name = call.layer.name, c = call.config
        let k = try windowSize(b, call, "kernel_size", fallback: nil)
        let groups = c.int("groups") ?? 1
        guard let filters = c.int("filters"), filters > 0, groups >= 1, s[2] > 0, s[2] % groups == 0,
              filters % groups == 0 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)'", expected: "filters and input channels divisible by groups",
                                      actual: "filters \(c.int("filters") ?? 0), channels \(s[2]), groups \(groups)")
        }
        let g = try geometry1D(b, call, length: s[1], kernel: k)
        let kernel = try b.requiredWeight(name, "kernel", expected: [k, s[2] / groups, filters])
        let inputs = [lift(&b, call, x, s), b.constant(name + ".kernel", shape: [k, 1, s[2] / groups, filters], data: kernel.data)]
            + (try bias(&b, call, count: filters))
        let act = split(try activation(of: b, call))
        b.emit(call.node + ".conv", .conv, inputs, output: call.output + ".conv", shape: [s[0], g.size, 1, filters],
               attributes(g, groups: groups, activation: act.fused))
        return lower(&b, call, call.output + ".conv", channelsFirst: cf, activation: act.after)
    }

    /// A depthwise kernel (K, C, M) as the grouped conv kernel (K, 1, 1, C·M): output channel c·M + m, the same bytes.
    private static func depthwiseKernel1D(_ b: inout KerasGraphBuilder, _ call: KerasCall, key: String, k: Int,
                                          channels: Int, multiplier: Int) throws -> String {
        let name = call.layer.name
        let w = try b.requiredWeight(name, key, expected: [k, channels, multiplier])
        return b.constant(name + "." + key, shape: [k, 1, 1, try b.mul(channels, multiplier, place: name)], data: w.data)
    }

    private static func depthwiseParts(_ b: inout KerasGraphBuilder, _ call: KerasCall)
        throws -> (x: String, s: [Int], cf: Bool, k: Int, m: Int, cm: Int) {
        let (x, s, cf) = try sequence(&b, call)
        let k = try windowSize(b, call, "kernel_size", fallback: nil)
        let m = call.config.int("depth_multiplier") ?? 1
        guard s[2] > 0, m >= 1 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)'", expected: "known channels and depth_multiplier ≥ 1",
                                      actual: "channels \(s[2]), depth_multiplier \(m)")
        }
        return (x, s, cf, k, m, try b.mul(s[2], m, place: call.layer.name))
    }

    private static func depthwise1D(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let p = try depthwiseParts(&b, call)
        let g = try geometry1D(b, call, length: p.s[1], kernel: p.k)
        // Keras 2 names the weight depthwise_kernel, Keras 3 kernel.
        let key = b.weights[call.layer.name]?.entries.contains { $0.key == "depthwise_kernel" } == true ? "depthwise_kernel" : "kernel"
        let inputs = [lift(&b, call, p.x, p.s),
                      try depthwiseKernel1D(&b, call, key: key, k: p.k, channels: p.s[2], multiplier: p.m)]
            + (try bias(&b, call, count: p.cm))
        let act = split(try activation(of: b, call))
        b.emit(call.node + ".conv", .conv, inputs, output: call.output + ".conv", shape: [p.s[0], g.size, 1, p.cm],
               attributes(g, groups: p.s[2], activation: act.fused))
        return lower(&b, call, call.output + ".conv", channelsFirst: p.cf, activation: act.after)
    }

    private static func separable1D(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let p = try depthwiseParts(&b, call)
        let name = call.layer.name
        guard let filters = call.config.int("filters"), filters > 0 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)' filters", expected: "> 0",
                                      actual: "\(call.config.int("filters") ?? 0)")
        }
        let g = try geometry1D(b, call, length: p.s[1], kernel: p.k)
        let dw = try depthwiseKernel1D(&b, call, key: "depthwise_kernel", k: p.k, channels: p.s[2], multiplier: p.m)
        b.emit(call.node + ".depthwise", .conv, [lift(&b, call, p.x, p.s), dw], output: call.output + ".depthwise",
               shape: [p.s[0], g.size, 1, p.cm], attributes(g, groups: p.s[2], activation: nil))
        let pw = try b.requiredWeight(name, "pointwise_kernel", expected: [1, p.cm, filters])
        let inputs = [call.output + ".depthwise", b.constant(name + ".pointwise_kernel", shape: [1, 1, p.cm, filters], data: pw.data)]
            + (try bias(&b, call, count: filters))
        let act = split(try activation(of: b, call))
        b.emit(call.node + ".conv", .conv, inputs, output: call.output + ".conv", shape: [p.s[0], g.size, 1, filters],
               Attributes(strides: [1, 1], dilations: [1, 1], pads: [0, 0, 0, 0], groups: 1, activation: act.fused))
        return lower(&b, call, call.output + ".conv", channelsFirst: p.cf, activation: act.after)
    }

    // MARK: - Pools

    private static func pool1D(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ op: Op) throws -> String {
        let (x, s, cf) = try sequence(&b, call)
        let k = try windowSize(b, call, "pool_size", fallback: 2)
        let g = try geometry1D(b, call, length: s[1], kernel: k, strideFallback: k)
        // TensorFlow's 'same' average pooling divides by the number of real (unpadded) inputs.
        var a = Attributes(kernel: [k, 1], strides: [g.stride, 1], pads: g.pads, ceilMode: false,
                           countIncludePad: op == .avgPool ? false : nil)
        if g.autoPad { a.autoPad = "SAME_UPPER" }
        b.emit(call.node + ".pool", op, [lift(&b, call, x, s)], output: call.output + ".pool", shape: [s[0], g.size, 1, s[2]], a)
        return lower(&b, call, call.output + ".pool", channelsFirst: cf)
    }

    /// The mean or maximum over the steps axis (2 for channels_first), kept as size 1 with keepdims.
    private static func globalPool1D(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ f: ReduceFunction) throws -> String {
        let (x, s) = try rank3(b, call)
        let axis = call.config.string("data_format") == "channels_first" ? 2 : 1
        var kept = s
        kept[axis] = 1
        var steps = [("reduce", Op.reduce, Attributes(axes: [axis], mode: f.rawValue), kept)]
        if call.config.bool("keepdims") != true {
            steps.append(("flat", .flatten, Attributes(axis: 1), [s[0], s[3 - axis]]))
        }
        return finish(&b, call, from: x, steps, activation: .linear)
    }

    // MARK: - Cropping, padding, upsampling

    /// (begin, end) from an int or a pair, each ≥ 0, or an error naming the layer and `key`.
    static func pair(_ b: KerasGraphBuilder, _ call: KerasCall, _ value: Any?, key: String) throws -> (Int, Int) {
        if let i = jsonInt(value), i >= 0 { return (i, i) }
        if let list = value as? [Any], list.count == 2, let a = jsonInt(list[0]), let e = jsonInt(list[1]), a >= 0, e >= 0 {
            return (a, e)
        }
        throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' \(key)",
                                  expected: "an int or (begin, end), each ≥ 0", actual: "\(value ?? "nothing")")
    }

    /// Slices `crop.0` steps off the start and `crop.1` off the end of each of `axes`.
    static func crop(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ x: String, axes: [Int], _ crops: [(Int, Int)]) throws -> String {
        var out = b.shape(x)
        var counts: [Int] = []
        for (axis, (begin, end)) in zip(axes, crops) {
            let size = out[axis]
            let cut = try b.add(begin, end, place: call.layer.name)
            guard size >= 0, cut < size else {
                throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' cropping",
                                          expected: "fewer than the \(size < 0 ? "(free)" : "\(size)") steps of axis \(axis)",
                                          actual: "\(begin) + \(end)")
            }
            out[axis] = size - cut
            counts.append(size - cut)
        }
        b.emit(call.node, .slice, [x], output: call.output, shape: out,
               Attributes(axes: axes, starts: crops.map(\.0), steps: axes.map { _ in 1 }, counts: counts))
        return call.output
    }

    private static func cropping1D(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, _) = try rank3(b, call)
        let c = try pair(b, call, call.config.value("cropping") ?? 1, key: "cropping")
        return try crop(&b, call, x, axes: [1], [c])
    }

    private static func zeroPadding1D(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, s) = try rank3(b, call)
        let (begin, end) = try pair(b, call, call.config.value("padding") ?? 1, key: "padding")
        let length = s[1] < 0 ? -1 : try b.add(b.add(s[1], begin, place: call.layer.name), end, place: call.layer.name)
        b.emit(call.node, .pad, [x], output: call.output, shape: [s[0], length, s[2]],
               Attributes(pads: [0, begin, 0, 0, end, 0], value: 0, mode: "constant"))
        return call.output
    }

    /// Each step repeated `size` times: a nearest-neighbour resize of (N, L, 1, C) by (size, 1).
    private static func upSampling1D(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, s) = try rank3(b, call)
        let size = try windowSize(b, call, "size", fallback: 2)
        let length = s[1] < 0 ? -1 : try b.mul(s[1], size, place: call.layer.name)
        b.emit(call.node + ".resize", .resize, [lift(&b, call, x, s)], output: call.output + ".resize",
               shape: [s[0], length, 1, s[2]], resizeAttributes([size, 1], out: [length, 1], bilinear: false))
        return lower(&b, call, call.output + ".resize", channelsFirst: false)
    }

    /// Keras's upsampling as an IR resize: nearest repeats each pixel (ONNX asymmetric / floor), bilinear samples at
    /// half-pixel centres with the edge value beyond the border (jax.image.resize and tf.image.resize alike).
    static func resizeAttributes(_ factors: [Int], out: [Int], bilinear: Bool) -> Attributes {
        var a = Attributes(mode: bilinear ? "linear" : "nearest", scales: factors.map { Float($0) },
                           coordinateMode: bilinear ? "half_pixel" : "asymmetric", nearestMode: bilinear ? nil : "floor")
        if out.allSatisfy({ $0 >= 0 }) { a.shape = out }
        return a
    }
}
