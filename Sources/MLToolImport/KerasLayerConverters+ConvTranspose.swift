import Foundation
import MLToolCore

/// Conv2DTranspose: the IR's convTranspose (the adjoint of conv, TensorFlow's conv2d_transpose), with Keras's output
/// sizes and padding split.
extension KerasLayerConverters {
    static func checkConvTranspose(_ c: [String: Any]) -> String? {
        let padding = c.string("padding") ?? "valid"
        if padding != "same" && padding != "valid" { return "padding \(padding)" }
        if (c.int("groups") ?? 1) != 1 { return "groups" }
        return nil
    }

    /// Keras's kernel is (KH, KW, OC, C); the IR's (C, KH, KW, OC). Along each axis the full output
    /// (H − 1)·s + (K − 1)·d + 1 is cropped by K − 1 − left at the start and K − 1 − right at the end (a negative
    /// crop at the end is output padding), left and right being the padding Keras gives the stride-dilated input.
    static func convTranspose(_ b: inout KerasGraphBuilder, _ call: KerasCall) throws -> String {
        let x = try single(call, b)
        let s = b.shape(x), name = call.layer.name, c = call.config
        guard s.count == 4, s[3] > 0, let filters = c.int("filters"), filters > 0,
              let k = c.ints("kernel_size", count: 2) else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)'",
                                      expected: "filters > 0, two kernel sizes and a rank-4 input with known channels",
                                      actual: "filters \(c.int("filters") ?? 0), input \(KerasGraphBuilder.format(s))")
        }
        let strides = c.ints("strides", count: 2) ?? [1, 1], dilations = c.ints("dilation_rate", count: 2) ?? [1, 1]
        let extra = c.value("output_padding").flatMap { _ in c.ints("output_padding", count: 2) }
        let window = 1...maxWindow
        guard (k + strides + dilations).allSatisfy(window.contains), (extra ?? [0, 0]).allSatisfy({ (0...maxWindow).contains($0) }),
              (0..<2).allSatisfy({ (k[$0] - 1) * dilations[$0] < maxWindow }) else {
            throw ImportError.invalid(file: b.file, place: "layer '\(name)'", expected: "sizes from 1 to \(maxWindow)",
                                      actual: "kernel \(k), strides \(strides), dilations \(dilations), output_padding \(extra ?? [])")
        }
        let same = c.string("padding") == "same"
        var pads = [0, 0, 0, 0], outPad = [0, 0], out = [-1, -1]
        for i in 0..<2 {
            let extent = (k[i] - 1) * dilations[i] + 1
            let left: Int, right: Int
            if !same {
                left = extent - 1
                right = extent - 1 + (extra?[i] ?? (max(extent, strides[i]) - extent))
            } else {
                let total = extra.map { extent + extent % 2 - 2 + $0[i] } ?? (strides[i] + extent - 2)
                left = min(total / 2 + total % 2, extent - 1)
                right = total - left
            }
            pads[i] = extent - 1 - left
            pads[i + 2] = max(extent - 1 - right, 0)
            outPad[i] = max(right - (extent - 1), 0)
            if s[i + 1] >= 0 {
                let full = try b.add(b.mul(s[i + 1] - 1, strides[i], place: name), extent, place: name)
                out[i] = full - pads[i] - pads[i + 2] + outPad[i]
            }
        }
        let w = try b.requiredWeight(name, "kernel", expected: [k[0], k[1], filters, s[3]])
        var data = [Float](repeating: 0, count: w.data.count)
        for ky in 0..<k[0] { for kx in 0..<k[1] { for o in 0..<filters { for i in 0..<s[3] {
            data[((i * k[0] + ky) * k[1] + kx) * filters + o] = w.data[((ky * k[1] + kx) * filters + o) * s[3] + i]
        } } } }
        var inputs = [x, b.constant(name + ".kernel", shape: [s[3], k[0], k[1], filters], data: data)]
        if c.bool("use_bias") ?? true {
            let bias = try b.requiredWeight(name, "bias", expected: [filters])
            inputs.append(b.constant(name + ".bias", shape: bias.shape, data: bias.data))
        }
        var attributes = Attributes(kernel: k, strides: strides, dilations: dilations, pads: pads, groups: 1)
        if outPad != [0, 0] { attributes.outputPadding = outPad }
        b.emitWithActivation(call.node, .convTranspose, inputs, output: call.output, shape: [s[0], out[0], out[1], filters],
                             attributes, activation: try activation(of: b, call))
        return call.output
    }
}
