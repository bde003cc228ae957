import MLToolCore

/// 3-D spatial ops (input (N, C, D, H, W)) rewritten as the IR's 2-D ones:
/// - max / average pooling is separable: a 2-D pool over (H, W) on (N, C·D, H, W), then a (kd × 1) pool over D on
///   (N, C, D, OH·OW). Maxima compose; averages do too, because every window's count (with or without padding) is
///   the product of its per-axis counts.
/// - a convolution stacks its kd depth taps as channels: the input is padded along D, the taps
///   x[od·sd + i·dd] are gathered into (N, C, kd, OD, H, W), moved to (N·OD, C·kd, H, W), and convolved in 2-D with
///   the weights (OC, C/groups, kd, kh, kw) read as (OC, C/groups·kd, kh, kw): channel c·kd + i is tap i of
///   channel c, which keeps each group's channels contiguous.
/// - BatchNormalization and global pooling run on (N, C, D·H·W, 1).
extension ONNXGraphBuilder {
    static let spatial3D: Set<String> = ["Conv", "MaxPool", "AveragePool", "BatchNormalization", "GlobalAveragePool", "GlobalMaxPool"]

    mutating func convert3D(_ node: ONNXFile.Node, _ convert: ONNXOps.Converter) throws {
        if try isDepthOne(node) { return try depthOne(node, convert) }
        switch node.opType {
        case "Conv": try conv3D(node)
        case "MaxPool", "AveragePool": try pool3D(node)
        default: try flattenedSpatial(node, convert)
        }
    }

    private static func ints(_ key: String, _ v: [Int]) -> ONNXFile.Attribute { .init(name: key, type: 7, ints: v) }

    private func output(of node: ONNXFile.Node) throws -> String {
        guard let o = node.outputs.first, !o.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        return o
    }

    /// The window attributes of a 3-D node: kernel, strides, dilations, and pads (begin d,h,w, end d,h,w) unless
    /// auto_pad sets them.
    private func window3D(_ node: ONNXFile.Node, kernel fallback: [Int]?) throws -> (k: [Int], s: [Int], d: [Int], pads: [Int]) {
        let k = try fallback ?? boundedInts(node, "kernel_shape", count: 3, range: 1...Self.maxWindow, [])
        guard k.count == 3 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) kernel_shape", expected: "3 values", actual: "none")
        }
        let s = try boundedInts(node, "strides", count: 3, range: 1...Self.maxWindow, [1, 1, 1])
        let d = try boundedInts(node, "dilations", count: 3, range: 1...Self.maxWindow, [1, 1, 1])
        let pads = try boundedInts(node, "pads", count: 6, range: 0...Self.maxWindow, [0, 0, 0, 0, 0, 0])
        return (k, s, d, pads)
    }

    /// Depth pads (begin, end) from `pads` or `auto_pad`, for input depth `depth`.
    private func depthPads(_ node: ONNXFile.Node, depth: Int, k: Int, s: Int, d: Int, pads: [Int]) throws -> (Int, Int) {
        let autoPad = string(node, "auto_pad", "NOTSET")
        switch autoPad {
        case "NOTSET": return (pads[0], pads[3])
        case "VALID": return (0, 0)
        case "SAME_UPPER", "SAME_LOWER":
            let total = max(((depth + s - 1) / s - 1) * s + (k - 1) * d + 1 - depth, 0)
            return autoPad == "SAME_UPPER" ? (total / 2, total - total / 2) : (total - total / 2, total / 2)
        default:
            throw ImportError.invalid(file: file, place: "\(place(node)) auto_pad", expected: "NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                                      actual: autoPad)
        }
    }

    private func known(_ node: ONNXFile.Node, _ s: [Int]) throws {
        guard s.dropFirst().allSatisfy({ $0 >= 0 }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a 3-D input of known size after the batch", actual: "\(s)")
        }
    }

    private mutating func pool3D(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        try known(node, x.shape)
        let out = try output(of: node)
        let (k, s, d, pads) = try window3D(node, kernel: nil)
        let (n, c, depth, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3], x.shape[4])
        // (N, C·D, H, W): pool over H, W.
        let a = fresh("\(x.name).hw"), b = fresh("\(out).hw")
        try emitReshape("\(node.name).to_hw", input: x.name, from: x.shape, to: [n, c * depth, h, w], output: a)
        var hw = node
        hw.name = "\(node.name).hw"; hw.inputs = [a]; hw.outputs = [b]
        hw.attributes["kernel_shape"] = Self.ints("kernel_shape", [k[1], k[2]])
        hw.attributes["strides"] = Self.ints("strides", [s[1], s[2]])
        hw.attributes["dilations"] = Self.ints("dilations", [d[1], d[2]])
        if node.attributes["pads"] != nil { hw.attributes["pads"] = Self.ints("pads", [pads[1], pads[2], pads[4], pads[5]]) }
        try pool(hw, node.opType == "MaxPool" ? .maxPool : .avgPool)
        guard let sb = shapes[b] else { return }
        // (N, C, D, OH·OW): pool over D.
        let e = fresh("\(out).d_in"), f = fresh("\(out).d")
        try emitReshape("\(node.name).to_d", input: b, from: sb, to: [n, c, depth, sb[2] * sb[3]], output: e)
        var dn = node
        dn.name = "\(node.name).d"; dn.inputs = [e]; dn.outputs = [f]
        dn.attributes["kernel_shape"] = Self.ints("kernel_shape", [k[0], 1])
        dn.attributes["strides"] = Self.ints("strides", [s[0], 1])
        dn.attributes["dilations"] = Self.ints("dilations", [d[0], 1])
        if node.attributes["pads"] != nil { dn.attributes["pads"] = Self.ints("pads", [pads[0], 0, pads[3], 0]) }
        try pool(dn, node.opType == "MaxPool" ? .maxPool : .avgPool)
        guard let sf = shapes[f] else { return }
        try emitReshape("\(node.name).to_3d", input: f, from: sf, to: [n, c, sf[2], sb[2], sb[3]], output: out)
    }

    private mutating func conv3D(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        try known(node, x.shape)
        let out = try output(of: node)
        let wc = try constant(node, 1, what: "weights")
        guard wc.rank == 5 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) weights", expected: "rank 5 (OC, C/groups, KD, KH, KW)", actual: "\(wc.shape)")
        }
        let (k, s, d, pads) = try window3D(node, kernel: Array(wc.shape[2...]))
        let (n, c, depth, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3], x.shape[4])
        let (pd0, pd1) = try depthPads(node, depth: depth, k: k[0], s: s[0], d: d[0], pads: pads)
        let paddedDepth = depth + pd0 + pd1
        let span = (k[0] - 1) * d[0] + 1
        guard paddedDepth >= span else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a padded depth of at least \(span)", actual: "\(x.shape)")
        }
        let od = (paddedDepth - span) / s[0] + 1
        var src = x.name
        if pd0 + pd1 > 0 {
            src = fresh("\(x.name).dpad")
            emit("\(node.name).dpad", .pad, [x.name], src, Attributes(pads: [0, 0, pd0, 0, 0, 0, 0, pd1, 0, 0], value: 0, mode: "constant"))
            shapes[src] = [n, c, paddedDepth, h, w]
        }
        // Taps, tap-major: (N, C, kd·OD, H, W).
        let indices = (0..<k[0]).flatMap { i in (0..<od).map { $0 * s[0] + i * d[0] } }
        let taps = fresh("\(out).taps")
        try emitTake("\(node.name).taps", input: src, shape: [n, c, paddedDepth, h, w], axis: 2, indices: indices, output: taps)
        let t6 = fresh("\(out).taps6"), moved = fresh("\(out).taps_moved"), x4 = fresh("\(out).taps2d")
        try emitReshape("\(node.name).split_taps", input: taps, from: [n, c, k[0] * od, h, w], to: [n, c, k[0], od, h, w], output: t6)
        emit("\(node.name).move_depth", .transpose, [t6], moved, Attributes(perm: [0, 3, 1, 2, 4, 5]))
        shapes[moved] = [n, od, c, k[0], h, w]
        let rows = n < 0 ? -1 : n * od
        try emitReshape("\(node.name).to2d", input: moved, from: [n, od, c, k[0], h, w], to: [rows, c * k[0], h, w], output: x4)
        // The 2-D convolution over (H, W) with taps as channels.
        let w4 = fresh("\(node.inputs[1]).2d")
        var w2 = ONNXConstant(shape: [wc.shape[0], wc.shape[1] * k[0], k[1], k[2]], values: wc.values)
        if wc.quant?.axis ?? 0 == 0 { w2.quant = wc.quant }     // per output channel or per tensor: still valid
        constants[w4] = w2
        var conv2 = node
        conv2.inputs = [x4, w4] + node.inputs.dropFirst(2)
        let y4 = fresh("\(out).2d")
        conv2.outputs = [y4]
        conv2.attributes["kernel_shape"] = Self.ints("kernel_shape", [k[1], k[2]])
        conv2.attributes["strides"] = Self.ints("strides", [s[1], s[2]])
        conv2.attributes["dilations"] = Self.ints("dilations", [d[1], d[2]])
        if node.attributes["pads"] != nil { conv2.attributes["pads"] = Self.ints("pads", [pads[1], pads[2], pads[4], pads[5]]) }
        try conv(conv2)
        guard let sy = shapes[y4] else { return }
        let y5 = fresh("\(out).odfirst")
        try emitReshape("\(node.name).split_rows", input: y4, from: sy, to: [n, od, sy[1], sy[2], sy[3]], output: y5)
        emit("\(node.name).to_ncdhw", .transpose, [y5], out, Attributes(perm: [0, 2, 1, 3, 4]))
        shapes[out] = [n, sy[1], od, sy[2], sy[3]]
    }

    /// Whether `node` reads a depth of 1 and leaves it 1 with a 1-deep window and no depth padding (RivaGAN's
    /// (1, 11, 11) kernels on single frames): then it is its 2-D form on (N, C, H, W), whatever H and W are.
    private func isDepthOne(_ node: ONNXFile.Node) throws -> Bool {
        guard let s = shapes[node.inputs.first ?? ""], s.count == 5, s[2] == 1 else { return false }
        guard node.opType == "Conv" || node.opType == "MaxPool" || node.opType == "AveragePool" else { return true }
        let kernel = node.opType == "Conv" ? constants[node.inputs.count > 1 ? node.inputs[1] : ""]?.shape.dropFirst(2).first : ints(node, "kernel_shape")?.first
        let pads = ints(node, "pads") ?? [0, 0, 0, 0, 0, 0]
        return kernel == 1 && pads.count == 6 && pads[0] == 0 && pads[3] == 0 && (ints(node, "dilations")?.first ?? 1) >= 1
    }

    /// `node` (see `isDepthOne`) as its 2-D form: the depth axis squeezed out (and the channels moved last, the IR's
    /// 2-D layout), windows, pads and conv weights without their depth entry, and the depth put back.
    private mutating func depthOne(_ node: ONNXFile.Node, _ convert: ONNXOps.Converter) throws {
        let x = try activation(node)
        let out = try output(of: node)
        let (squeezed, x4) = (fresh("\(x.name).no_depth"), fresh("\(x.name).2d"))
        emit("\(node.name).no_depth", .squeeze, [x.name], squeezed, Attributes(axes: [2]))
        emit("\(node.name).to_nhwc", .transpose, [squeezed], x4, Attributes(perm: Layout.toNHWC))
        shapes[x4] = [x.shape[0], x.shape[1], x.shape[3], x.shape[4]]
        var n = node
        n.inputs[0] = x4
        if node.opType == "Conv" {
            let w = try constant(node, 1, what: "weights")
            let w4 = fresh("\(node.inputs[1]).2d")
            var w2 = w
            w2.shape = [w.shape[0], w.shape[1], w.shape[3], w.shape[4]]   // the depth axis has size 1: same values
            constants[w4] = w2
            n.inputs[1] = w4
        }
        for key in ["kernel_shape", "strides", "dilations"] {
            if var a = n.attributes[key], a.ints.count == 3 { a.ints.removeFirst(); n.attributes[key] = a }
        }
        if var a = n.attributes["pads"], a.ints.count == 6 { a.ints = [a.ints[1], a.ints[2], a.ints[4], a.ints[5]]; n.attributes["pads"] = a }
        let y4 = fresh("\(out).2d")
        n.outputs = [y4] + node.outputs.dropFirst()
        try convert(&self, n)
        guard let sy = shapes[y4] else { return }
        let nchw = fresh("\(out).nchw")
        emit("\(node.name).to_nchw", .transpose, [y4], nchw, Attributes(perm: Layout.toNCHW))
        emit("\(node.name).depth", .unsqueeze, [nchw], out, Attributes(axes: [2]))
        shapes[out] = [sy[0], sy[1], 1, sy[2], sy[3]]
    }

    /// Runs a per-channel op (BatchNormalization, global pooling) on (N, C, D·H·W, 1).
    private mutating func flattenedSpatial(_ node: ONNXFile.Node, _ convert: ONNXOps.Converter) throws {
        let x = try activation(node)
        try known(node, x.shape)
        let out = try output(of: node)
        let flat = [x.shape[0], x.shape[1], Self.product(x.shape[2...]), 1]
        let a = fresh("\(x.name).flat"), b = fresh("\(out).flat")
        try emitReshape("\(node.name).flatten", input: x.name, from: x.shape, to: flat, output: a)
        var n = node
        n.inputs[0] = a
        n.outputs = [b] + node.outputs.dropFirst()
        try convert(&self, n)
        guard let sb = shapes[b] else { return }
        let back = sb[2] == 1 ? [x.shape[0], x.shape[1]] + [Int](repeating: 1, count: x.shape.count - 2) : x.shape
        try emitReshape("\(node.name).unflatten", input: b, from: sb, to: back, output: out)
    }
}
