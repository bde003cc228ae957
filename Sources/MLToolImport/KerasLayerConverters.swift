import Foundation
import MLToolCore

/// Converts one call of a Keras layer into IR nodes; returns the name of the tensor holding the call's output
/// (`call.output`, or an input's name for layers that are the identity at inference).
typealias KerasConvert = @Sendable (inout KerasGraphBuilder, KerasCall) throws -> String

/// One supported layer class: an optional check of its config (the reason it is unsupported, or nil) and its
/// converter.
struct KerasLayerConverter: Sendable {
    var check: (@Sendable ([String: Any]) -> String?)?
    var convert: KerasConvert
}

/// The layer registry of the Keras importer: class name → converter. Unsupported layers are found here, all at once.
enum KerasLayerConverters {
    static let table: [String: KerasLayerConverter] = {
        var t: [String: KerasLayerConverter] = [
            "Dense": .init(check: checkDense, convert: dense),
            "Lambda": .init(check: nil, convert: lambda),
            "Conv2D": .init(check: checkConv, convert: conv),
            "DepthwiseConv2D": .init(check: checkConv, convert: depthwise),
            "SeparableConv2D": .init(check: checkConv, convert: separable),
            "Conv2DTranspose": .init(check: checkConvTranspose, convert: convTranspose),
            "BatchNormalization": .init(check: nil, convert: batchNorm),
            "ReLU": .init(check: checkReLU, convert: relu),
            "Activation": .init(check: nil, convert: activation),
            "Flatten": .init(check: nil, convert: flatten),
            "Reshape": .init(check: nil, convert: reshape),
            "GlobalAveragePooling2D": .init(check: nil, convert: { try globalPool(&$0, $1, .globalAvgPool) }),
            "GlobalMaxPooling2D": .init(check: nil, convert: { try globalPool(&$0, $1, .globalMaxPool) }),
            "MaxPooling2D": .init(check: checkPool, convert: { try pool(&$0, $1, .maxPool) }),
            "AveragePooling2D": .init(check: checkPool, convert: { try pool(&$0, $1, .avgPool) }),
            "ZeroPadding2D": .init(check: nil, convert: zeroPadding),
            "Add": .init(check: nil, convert: { try elementwise(&$0, $1, .add) }),
            "Multiply": .init(check: nil, convert: { try elementwise(&$0, $1, .mul) }),
            "Subtract": .init(check: nil, convert: subtract),
            // Keras 3 writes `x / 2.0` on a Keras tensor as an op layer.
            "TrueDivide": .init(check: nil, convert: { try elementwise(&$0, $1, .div) }),
            "Divide": .init(check: nil, convert: { try elementwise(&$0, $1, .div) }),
            "Average": .init(check: nil, convert: average),
            "LeakyReLU": .init(check: nil, convert: leakyRelu),
            "Softmax": .init(check: nil, convert: softmax),
            "Concatenate": .init(check: nil, convert: concatenate),
            "Dropout": .init(check: nil, convert: identity),
            "Rescaling": .init(check: nil, convert: rescaling),
            "Normalization": .init(check: { $0.bool("invert") == true ? "invert" : nil }, convert: normalization),
            "TFOpLambda": .init(check: { c in tfOps[c.string("function") ?? ""] == nil ? "function '\(c.string("function") ?? "?")'" : nil },
                                convert: { try elementwise(&$0, $1, tfOps[$1.config.string("function") ?? ""] ?? .add) }),
        ]
        for (name, converter) in t where throughNHWC.contains(name) {
            t[name] = .init(check: converter.check, convert: channelsFirst(converter.convert))
        }
        // Aliases Keras accepts for the same classes.
        for (alias, name) in [("Convolution2D", "Conv2D"), ("Convolution2DTranspose", "Conv2DTranspose"), ("SeparableConvolution2D", "SeparableConv2D"),
                              ("GlobalAvgPool2D", "GlobalAveragePooling2D"), ("GlobalMaxPool2D", "GlobalMaxPooling2D"),
                              ("MaxPool2D", "MaxPooling2D"), ("AvgPool2D", "AveragePooling2D"),
                              ("SpatialDropout2D", "Dropout"), ("GaussianDropout", "Dropout"),
                              ("GaussianNoise", "Dropout"), ("AlphaDropout", "Dropout")] {
            t[alias] = t[name]
        }
        t.merge(oneD) { a, _ in a }
        t.merge(resampling) { a, _ in a }
        for (alias, name) in oneDAliases { t[alias] = t[name] }
        return t
    }()

    /// The TensorFlow functions a Keras 2 TFOpLambda may name (`x + 3.0`, `x * (1 / 6)` in MobileNetV3).
    static let tfOps: [String: Op] = [
        "__operators__.add": .add, "math.add": .add, "math.multiply": .mul, "math.subtract": .sub,
        "math.truediv": .div, "math.divide": .div,
    ]

    /// Why `layer` cannot be imported (the name under which it is listed as unsupported), or nil.
    static func problem(_ layer: KerasLayer, kerasMajor: Int) -> String? {
        if layer.className == "InputLayer" { return nil }
        guard let converter = table[layer.className] else { return layer.className }
        let config = layer.config
        if config.string("data_format") == "channels_first", !channelsFirstClasses.contains(layer.className) {
            return "\(layer.className) (data_format channels_first)"
        }
        if config.value("activation") != nil,
           KerasGraphBuilder.activation(config.value("activation"), kerasMajor: kerasMajor) == nil {
            return "activation '\(activationName(config.value("activation")))'"
        }
        return converter.check?(config).map { "\(layer.className) (\($0))" }
    }

    static func activationName(_ value: Any?) -> String {
        if let s = value as? String { return s }
        if let d = value as? [String: Any] { return d.string("config") ?? d.string("class_name") ?? "?" }
        return "\(value ?? "?")"
    }

    // MARK: - Checks

    private static func checkConv(_ c: [String: Any]) -> String? {
        let padding = c.string("padding") ?? "valid"
        if padding != "same" && padding != "valid" { return "padding \(padding)" }
        if (c.int("depth_multiplier") ?? 1) < 1 { return "depth_multiplier < 1" }
        return nil
    }

    static func checkPool(_ c: [String: Any]) -> String? {
        let padding = c.string("padding") ?? "valid"
        return padding == "same" || padding == "valid" ? nil : "padding \(padding)"
    }

    private static func checkDense(_ c: [String: Any]) -> String? {
        if c.value("quantization_config") != nil { return "quantized" }
        if let rank = c.int("lora_rank"), rank > 0 { return "LoRA" }
        return nil
    }

    private static func checkReLU(_ c: [String: Any]) -> String? {
        if let m = c.double("max_value"), m < 0 { return "max_value < 0" }
        return nil
    }

    // MARK: - Converters

    private static func identity(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        try single(call, b)
    }

    static func single(_ call: KerasCall, _ b: KerasGraphBuilder) throws -> String {
        guard call.inputs.count == 1 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)'", expected: "one input",
                                      actual: "\(call.inputs.count)")
        }
        return call.inputs[0]
    }

    private static func spatial(_ b: KerasGraphBuilder, _ call: KerasCall) throws -> (String, [Int]) {
        let x = try single(call, b)
        let s = b.shape(x)
        guard s.count == 4, s[3] > 0 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' input",
                                      expected: "a rank-4 (N,H,W,C) tensor with known channels",
                                      actual: KerasGraphBuilder.format(s))
        }
        return (x, s)
    }

    static func activation(of b: KerasGraphBuilder, _ call: KerasCall) throws -> KerasActivation {
        guard let a = b.activation(call.config.value("activation")) else {
            throw ImportError.unsupported(file: b.file, ops: [.init(op: "activation '\(activationName(call.config.value("activation")))'",
                                                                    count: 1, firstNodes: [call.layer.name])])
        }
        return a
    }

    private static func dense(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let s = b.shape(x)
        let name = call.layer.name
        guard let units = call.config.int("units"), units > 0, s.count >= 2 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)'", expected: "units > 0 and an input of rank ≥ 2",
                                      actual: "units \(call.config.int("units") ?? 0), input \(KerasGraphBuilder.format(s))")
        }
        let kernel = try b.requiredWeight(name, "kernel", expected: [s[s.count - 1], units])
        let bias = call.config.bool("use_bias") ?? true ? try b.requiredWeight(name, "bias", expected: [units]) : nil
        let w = b.constant(name + ".kernel", shape: kernel.shape, data: kernel.data)
        let bn = bias.map { b.constant(name + ".bias", shape: $0.shape, data: $0.data) }
        let act = try activation(of: b, call)
        let out = Array(s.dropLast()) + [units]
        if s.count == 2 {
            b.emitWithActivation(call.node, .dense, [x, w] + (bn.map { [$0] } ?? []), output: call.output, shape: out,
                                 Attributes(), activation: act)
        } else if let bn {
            // Keras applies Dense to the last axis of higher-rank inputs: a matmul plus a broadcast bias.
            b.emit(call.node + ".matmul", .matMul, [x, w], output: call.output + ".matmul", shape: out)
            b.emitWithActivation(call.node, .add, [call.output + ".matmul", bn], output: call.output, shape: out,
                                 Attributes(), activation: act)
        } else {
            b.emitWithActivation(call.node, .matMul, [x, w], output: call.output, shape: out, Attributes(), activation: act)
        }
        return call.output
    }

    /// Strides, dilations and padding of a convolution or pooling, with the output H and W and IR pads.
    private static func geometry(_ b: KerasGraphBuilder, _ call: KerasCall, input s: [Int], kernel: [Int],
                                 stridesKey: String = "strides") throws -> (out: [Int], strides: [Int], dilations: [Int], pads: [Int]) {
        let c = call.config
        let strides = c.ints(stridesKey, count: 2) ?? kernel
        let dilations = c.ints("dilation_rate", count: 2) ?? [1, 1]
        guard strides.allSatisfy({ $0 >= 1 }), dilations.allSatisfy({ $0 >= 1 }), kernel.allSatisfy({ $0 >= 1 }) else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)'",
                                      expected: "kernel, strides and dilations ≥ 1",
                                      actual: "kernel \(kernel), strides \(strides), dilations \(dilations)")
        }
        let padding = c.string("padding") ?? "valid"
        let h = try b.window(s[1], kernel: kernel[0], stride: strides[0], dilation: dilations[0], padding: padding,
                             place: call.layer.name)
        let w = try b.window(s[2], kernel: kernel[1], stride: strides[1], dilation: dilations[1], padding: padding,
                             place: call.layer.name)
        return ([h.size, w.size], strides, dilations, [h.begin, w.begin, h.end, w.end])
    }

    private static func kernelSize(_ b: KerasGraphBuilder, _ call: KerasCall, key: String = "kernel_size") throws -> [Int] {
        guard let k = call.config.ints(key, count: 2) else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' \(key)", expected: "two integers",
                                      actual: "\(call.config.value(key) ?? "nothing")")
        }
        return k
    }

    private static func conv(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, s) = try spatial(b, call)
        let name = call.layer.name, c = call.config
        let k = try kernelSize(b, call)
        let groups = c.int("groups") ?? 1
        guard let filters = c.int("filters"), filters > 0, groups >= 1, s[3] > 0, s[3] % groups == 0,
              filters % groups == 0 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)'", expected: "filters and input channels divisible by groups",
                                      actual: "filters \(c.int("filters") ?? 0), channels \(s[3]), groups \(groups)")
        }
        let g = try geometry(b, call, input: s, kernel: k)
        let kernel = try b.requiredWeight(name, "kernel", expected: [k[0], k[1], s[3] / groups, filters])
        let bias = c.bool("use_bias") ?? true ? try b.requiredWeight(name, "bias", expected: [filters]) : nil
        var inputs = [x, b.constant(name + ".kernel", shape: kernel.shape, data: kernel.data)]
        if let bias { inputs.append(b.constant(name + ".bias", shape: bias.shape, data: bias.data)) }
        b.emitWithActivation(call.node, .conv, inputs, output: call.output, shape: [s[0]] + g.out + [filters],
                             Attributes(strides: g.strides, dilations: g.dilations, pads: g.pads, groups: groups),
                             activation: try activation(of: b, call))
        return call.output
    }

    /// Depthwise kernels are (KH, KW, C, multiplier) in Keras; as a grouped conv with groups = C they are
    /// (KH, KW, 1, C·multiplier) with output channel c·multiplier + m — the same bytes, so only the shape changes.
    private static func depthwiseKernel(_ b: inout KerasGraphBuilder, layer: String, key: String, name: String,
                                        k: [Int], channels: Int, multiplier: Int) throws -> String {
        let w = try b.requiredWeight(layer, key, expected: [k[0], k[1], channels, multiplier])
        return b.constant(name, shape: [k[0], k[1], 1, channels * multiplier], data: w.data)
    }

    private static func depthwise(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, s) = try spatial(b, call)
        let name = call.layer.name, c = call.config
        let k = try kernelSize(b, call)
        let m = c.int("depth_multiplier") ?? 1
        let cm = try b.mul(s[3], m, place: name)
        let g = try geometry(b, call, input: s, kernel: k)
        // Keras 2 names the weight depthwise_kernel, Keras 3 kernel.
        let key = b.weights[name]?.entries.contains { $0.key == "depthwise_kernel" } == true ? "depthwise_kernel" : "kernel"
        var inputs = [x, try depthwiseKernel(&b, layer: name, key: key, name: name + ".kernel", k: k, channels: s[3],
                                             multiplier: m)]
        if c.bool("use_bias") ?? true {
            let bias = try b.requiredWeight(name, "bias", expected: [cm])
            inputs.append(b.constant(name + ".bias", shape: bias.shape, data: bias.data))
        }
        b.emitWithActivation(call.node, .conv, inputs, output: call.output, shape: [s[0]] + g.out + [cm],
                             Attributes(strides: g.strides, dilations: g.dilations, pads: g.pads, groups: s[3]),
                             activation: try activation(of: b, call))
        return call.output
    }

    private static func separable(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, s) = try spatial(b, call)
        let name = call.layer.name, c = call.config
        let k = try kernelSize(b, call)
        let m = c.int("depth_multiplier") ?? 1
        let cm = try b.mul(s[3], m, place: name)
        guard let filters = c.int("filters"), filters > 0 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)' filters", expected: "> 0",
                                      actual: "\(c.int("filters") ?? 0)")
        }
        let g = try geometry(b, call, input: s, kernel: k)
        let dw = try depthwiseKernel(&b, layer: name, key: "depthwise_kernel", name: name + ".depthwise_kernel", k: k,
                                     channels: s[3], multiplier: m)
        let mid = call.output + ".depthwise"
        b.emit(call.node + ".depthwise", .conv, [x, dw], output: mid, shape: [s[0]] + g.out + [cm],
               Attributes(strides: g.strides, dilations: g.dilations, pads: g.pads, groups: s[3]))
        let pw = try b.requiredWeight(name, "pointwise_kernel", expected: [1, 1, cm, filters])
        var inputs = [mid, b.constant(name + ".pointwise_kernel", shape: pw.shape, data: pw.data)]
        if c.bool("use_bias") ?? true {
            let bias = try b.requiredWeight(name, "bias", expected: [filters])
            inputs.append(b.constant(name + ".bias", shape: bias.shape, data: bias.data))
        }
        b.emitWithActivation(call.node, .conv, inputs, output: call.output, shape: [s[0]] + g.out + [filters],
                             Attributes(strides: [1, 1], dilations: [1, 1], pads: [0, 0, 0, 0], groups: 1),
                             activation: try activation(of: b, call))
        return call.output
    }

    private static func batchNorm(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let s = b.shape(x), name = call.layer.name
        let axes = (call.config.value("axis") as? [Any])?.compactMap(jsonInt) ?? [call.config.int("axis") ?? -1]
        if axes.count == 1, s.count >= 3, (1..<(s.count - 1)).contains(axes[0] < 0 ? axes[0] + s.count : axes[0]) {
            // channels_first (axis 1): normalised along the last axis of a transpose that moves the axis there.
            let a = axes[0] < 0 ? axes[0] + s.count : axes[0]
            var config = call.config
            config["axis"] = -1
            return try permuted(&b, call, perm: (0..<s.count).filter { $0 != a } + [a], config: config, batchNorm)
        }
        guard axes.count == 1, s.count >= 2, axes[0] == -1 || axes[0] == s.count - 1, s[s.count - 1] > 0 else {
            throw ImportError.unsupported(file: b.file, ops: [.init(
                op: "BatchNormalization (axis \(axes) of a rank-\(s.count) tensor; one non-batch axis)", count: 1,
                firstNodes: [name])])
        }
        let c = s[s.count - 1]
        func param(_ key: String, default value: Float) throws -> String {
            let data = try b.weight(name, key, expected: [c])?.data ?? [Float](repeating: value, count: c)
            return b.constant(name + "." + key, shape: [c], data: data)
        }
        // center=False / scale=False leave out beta / gamma; the moving statistics are always there.
        let gamma = try param("gamma", default: 1), beta = try param("beta", default: 0)
        let m = try b.requiredWeight(name, "moving_mean", expected: [c])
        let v = try b.requiredWeight(name, "moving_variance", expected: [c])
        let mean = b.constant(name + ".moving_mean", shape: [c], data: m.data)
        let variance = b.constant(name + ".moving_variance", shape: [c], data: v.data)
        let epsilon = Float(call.config.double("epsilon") ?? 1e-3)
        b.emit(call.node, .batchNorm, [x, gamma, beta, mean, variance], output: call.output, shape: s,
               Attributes(epsilon: epsilon))
        return call.output
    }

    private static func relu(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let c = call.config, s = b.shape(x)
        let slope = Float(c.double("negative_slope") ?? 0)
        let maxValue = c.double("max_value").map { Float($0) }
        if let t = c.double("threshold"), t != 0 {
            return thresholdRelu(&b, call, x, threshold: Float(t), slope: slope, maxValue: maxValue)
        }
        switch (slope, maxValue) {
        case (0, nil):
            b.emit(call.node, .relu, [x], output: call.output, shape: s)
        case (0, let m?):
            b.emit(call.node, .clip, [x], output: call.output, shape: s, Attributes(min: 0, max: m))
        case (_, nil):
            b.emit(call.node, .leakyRelu, [x], output: call.output, shape: s, Attributes(alpha: slope))
        case (_, let m?):
            b.emit(call.node + ".leaky", .leakyRelu, [x], output: call.output + ".leaky", shape: s, Attributes(alpha: slope))
            b.emit(call.node, .clip, [call.output + ".leaky"], output: call.output, shape: s,
                   Attributes(min: -Float.greatestFiniteMagnitude, max: m))
        }
        return call.output
    }

    private static func activation(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let act = try activation(of: b, call)
        if case .linear = act { return x }
        b.emitActivation(act, node: call.node, input: x, output: call.output)
        return call.output
    }

    private static func flatten(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        var x = try single(call, b)
        let s = b.shape(x)
        let n = try b.product(s.dropFirst(), place: call.layer.name)
        // The tensor is in Keras's own order, so the flattened order already matches; except that a channels_first
        // Flatten moves the channels last first (Keras's (N, H, W, C) order).
        if call.config.string("data_format") == "channels_first", s.count > 2 {
            let perm = [0] + Array(2..<s.count) + [1]
            b.emit(call.node + ".channels_last", .transpose, [x], output: call.output + ".channels_last",
                   shape: perm.map { s[$0] }, Attributes(perm: perm))
            x = call.output + ".channels_last"
        }
        b.emit(call.node, .flatten, [x], output: call.output, shape: [s.first ?? -1, n], Attributes(axis: 1))
        return call.output
    }

    private static func reshape(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let s = b.shape(x)
        guard let list = call.config.value("target_shape") as? [Any] else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' target_shape",
                                      expected: "a list of integers", actual: "\(call.config.value("target_shape") ?? "nothing")")
        }
        let target = list.compactMap(jsonInt)
        guard target.count == list.count, target.allSatisfy({ $0 > 0 || $0 == -1 }),
              target.filter({ $0 == -1 }).count <= 1 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' target_shape",
                                      expected: "positive sizes and at most one -1", actual: "\(list)")
        }
        var out = [s.first ?? -1] + target
        let known = s.dropFirst().allSatisfy { $0 >= 0 }
        if known, let i = target.firstIndex(of: -1) {
            let total = try b.product(s.dropFirst(), place: call.layer.name)
            let other = try b.product(target.filter { $0 > 0 }[...], place: call.layer.name)
            guard other > 0, total % other == 0 else {
                throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' target_shape",
                                          expected: "a shape of \(total) elements", actual: "\(target)")
            }
            out[i + 1] = total / other
        }
        b.emit(call.node, .reshape, [x], output: call.output, shape: out, Attributes(shape: [0] + target))
        return call.output
    }

    private static func globalPool(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ op: Op) throws -> String {
        let (x, s) = try spatial(b, call)
        if call.config.bool("keepdims") ?? false {
            b.emit(call.node, op, [x], output: call.output, shape: [s[0], 1, 1, s[3]])
        } else {
            b.emit(call.node + ".pool", op, [x], output: call.output + ".pool", shape: [s[0], 1, 1, s[3]])
            b.emit(call.node, .flatten, [call.output + ".pool"], output: call.output, shape: [s[0], s[3]],
                   Attributes(axis: 1))
        }
        return call.output
    }

    private static func pool(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ op: Op) throws -> String {
        let (x, s) = try spatial(b, call)
        let k = try kernelSize(b, call, key: "pool_size")
        let g = try geometry(b, call, input: s, kernel: k)
        // TensorFlow's 'same' average pooling divides by the number of real (unpadded) inputs.
        b.emit(call.node, op, [x], output: call.output, shape: [s[0]] + g.out + [s[3]],
               Attributes(kernel: k, strides: g.strides, pads: g.pads, ceilMode: false,
                          countIncludePad: op == .avgPool ? false : nil))
        return call.output
    }

    private static func zeroPadding(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let (x, s) = try spatial(b, call)
        let c = call.config
        var p: [Int]?  // top, bottom, left, right
        if let i = c.int("padding") {
            p = [i, i, i, i]
        } else if let list = c.value("padding") as? [Any], list.count == 2 {
            let pair = list.compactMap(jsonInt)
            let h = (list[0] as? [Any])?.compactMap(jsonInt) ?? [], w = (list[1] as? [Any])?.compactMap(jsonInt) ?? []
            if pair.count == 2 {
                p = [pair[0], pair[0], pair[1], pair[1]]
            } else if h.count == 2, w.count == 2 {
                p = h + w
            }
        }
        guard let p, p.allSatisfy({ $0 >= 0 }) else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' padding",
                                      expected: "an int, (h, w) or ((top, bottom), (left, right))",
                                      actual: "\(c.value("padding") ?? "nothing")")
        }
        let place = call.layer.name
        let h = s[1] < 0 ? -1 : try b.add(b.add(s[1], p[0], place: place), p[1], place: place)
        let w = s[2] < 0 ? -1 : try b.add(b.add(s[2], p[2], place: place), p[3], place: place)
        b.emit(call.node, .pad, [x], output: call.output, shape: [s[0], h, w, s[3]],
               Attributes(pads: [0, p[0], p[2], 0, 0, p[1], p[3], 0], value: 0, mode: "constant"))
        return call.output
    }

    /// A binary op folded over the call's operands: its tensors, and numbers (Keras 3 `x + 3.0`, TFOpLambda `y`)
    /// as one-element constants in their argument positions.
    private static func elementwise(_ b: inout KerasGraphBuilder, _ call: KerasCall, _ op: Op) throws -> String {
        var operands: [String] = []
        var tensors = call.inputs.makeIterator()
        for position in 0..<(call.inputs.count + call.scalars.count) {
            if let value = call.scalars[position] {
                operands.append(b.constant("\(call.node).c\(position)", shape: [1], data: [value]))
            } else if let t = tensors.next() {
                operands.append(t)
            }
        }
        guard operands.count >= 2 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)'", expected: "at least two inputs",
                                      actual: "\(operands.count)")
        }
        var acc = operands[0]
        for (i, next) in operands.dropFirst().enumerated() {
            let last = i == operands.count - 2
            let out = last ? call.output : call.output + ".\(i)"
            let shape = try b.broadcast(b.shape(acc), b.shape(next), place: call.layer.name)
            b.emit(last ? call.node : call.node + ".\(i)", op, [acc, next], output: out, shape: shape)
            acc = out
        }
        return call.output
    }

    private static func subtract(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        guard call.inputs.count + call.scalars.count == 2 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)'", expected: "two inputs",
                                      actual: "\(call.inputs.count + call.scalars.count)")
        }
        return try elementwise(&b, call, .sub)
    }

    /// The mean of n inputs: their sum times 1/n.
    private static func average(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        var sum = call
        sum.output = call.output + ".sum"
        sum.node = call.node + ".sum"
        let total = try elementwise(&b, sum, .add)
        let scale = b.constant(call.layer.name + ".scale", shape: [1], data: [1 / Float(call.inputs.count)])
        b.emit(call.node, .mul, [total, scale], output: call.output, shape: b.shape(total))
        return call.output
    }

    /// Keras 2 calls the slope alpha, Keras 3 negative_slope; both default to 0.3.
    private static func leakyRelu(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let slope = Float(call.config.double("negative_slope") ?? call.config.double("alpha") ?? 0.3)
        b.emit(call.node, .leakyRelu, [x], output: call.output, shape: b.shape(x), Attributes(alpha: slope))
        return call.output
    }

    private static func softmax(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let rank = b.shape(x).count
        let axis = call.config.int("axis") ?? -1
        let a = axis < 0 ? axis + rank : axis
        guard a >= 1, a < rank else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' axis",
                                      expected: "a non-batch axis of a rank-\(rank) tensor", actual: "\(axis)")
        }
        b.emit(call.node, .softmax, [x], output: call.output, shape: b.shape(x), Attributes(axis: a))
        return call.output
    }

    private static func concatenate(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        guard call.inputs.count >= 1 else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)'", expected: "inputs", actual: "none")
        }
        let shapes = call.inputs.map { b.shape($0) }
        let rank = shapes[0].count
        let axis = call.config.int("axis") ?? -1
        let a = axis < 0 ? axis + rank : axis
        guard a >= 1, a < rank, shapes.allSatisfy({ $0.count == rank }) else {
            throw ImportError.invalid(file: b.file, place: "layer '\(call.layer.name)' axis",
                                      expected: "a non-batch axis of inputs of equal rank",
                                      actual: "axis \(axis), shapes \(shapes.map(KerasGraphBuilder.format))")
        }
        var out = shapes[0]
        out[a] = shapes.contains { $0[a] < 0 } ? -1 : try shapes.reduce(0) { try b.add($0, $1[a], place: call.layer.name) }
        b.emit(call.node, .concat, call.inputs, output: call.output, shape: out, Attributes(axis: a))
        return call.output
    }

    /// Keras's Normalization: y = (x − mean) / max(√variance, 1e-7) along the last axis, as a multiply and an add.
    private static func normalization(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let s = b.shape(x), name = call.layer.name
        let c = s.last ?? -1
        let axes = (call.config.value("axis") as? [Any])?.compactMap(jsonInt) ?? [call.config.int("axis") ?? -1]
        guard c > 0, axes.count == 1, axes[0] == -1 || axes[0] == s.count - 1 else {
            throw ImportError.unsupported(file: b.file, ops: [.init(
                op: "Normalization (axis \(axes) of a rank-\(s.count) tensor; only the last axis)", count: 1,
                firstNodes: [name])])
        }
        func stat(_ key: String) throws -> [Float] {
            if let v = call.config.double(key) { return [Float](repeating: Float(v), count: c) }
            if let list = call.config.value(key) as? [Any] {
                let values = list.compactMap { ($0 as? NSNumber)?.floatValue }
                if values.count == c { return values }
                if values.count == 1 { return [Float](repeating: values[0], count: c) }
            }
            let w = try b.requiredWeight(name, key, expected: [-1])
            guard w.data.count == c || w.data.count == 1 else {
                throw ImportError.invalid(file: b.file, place: "layer '\(name)' \(key)", expected: "\(c) values",
                                          actual: KerasGraphBuilder.format(w.shape))
            }
            return w.data.count == c ? w.data : [Float](repeating: w.data[0], count: c)
        }
        let mean = try stat("mean"), variance = try stat("variance")
        let scale = variance.map { 1 / max($0.squareRoot(), 1e-7) }
        let offset = zip(mean, scale).map { -$0 * $1 }
        let sc = b.constant(name + ".scale", shape: [c], data: scale)
        let of = b.constant(name + ".offset", shape: [c], data: offset)
        b.emit(call.node + ".scale", .mul, [x, sc], output: call.output + ".scaled", shape: s)
        b.emit(call.node, .add, [call.output + ".scaled", of], output: call.output, shape: s)
        return call.output
    }

    /// y = x · scale + offset, with scalar or per-channel constants.
    private static func rescaling(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let s = b.shape(x), name = call.layer.name
        func values(_ key: String, default value: Double) throws -> [Float] {
            guard let v = call.config.value(key) else { return [Float(value)] }
            if let d = call.config.double(key) { return [Float(d)] }
            if let list = v as? [Any] {
                let ds = list.compactMap { ($0 as? NSNumber)?.doubleValue }
                if ds.count == list.count, !ds.isEmpty { return ds.map { Float($0) } }
            }
            throw ImportError.invalid(file: b.file, place: "layer '\(name)' \(key)", expected: "a number or list",
                                      actual: "\(v)")
        }
        let scale = try values("scale", default: 1), offset = try values("offset", default: 0)
        var current = x
        if scale != [1] {
            let c = b.constant(name + ".scale", shape: [scale.count], data: scale)
            let out = offset == [0] ? call.output : call.output + ".scaled"
            b.emit(offset == [0] ? call.node : call.node + ".scale", .mul, [current, c], output: out,
                   shape: try b.broadcast(s, [scale.count], place: name))
            current = out
        }
        if offset != [0] {
            let c = b.constant(name + ".offset", shape: [offset.count], data: offset)
            b.emit(call.node, .add, [current, c], output: call.output,
                   shape: try b.broadcast(b.shape(current), [offset.count], place: name))
            current = call.output
        }
        return current
    }
}
