import CCoreMLProto
import CProtobufC
import MLToolCore

/// The NeuralNetwork layer registry: one converter per supported layer type (the name of its `layer` oneof
/// member). "Unsupported" errors come from this table and `CoreMLLayers.names` alone.
///
/// Blobs are tracked with ONNX-layout shapes. Classic layers see (N, C, H, W): with the rank-5 mappings of spec
/// versions 1–3 every blob is (C, H, W) per image (arrays of shape [C] are (N, C, 1, 1)); with the exact / rank-4
/// mappings (spec 4+, coremltools' default) blobs have their real rank and the rank-N layers apply.
enum CoreMLLayers {
    typealias Layer = CoreML__Specification__NeuralNetworkLayer
    typealias Converter = @Sendable (inout CoreMLNeuralNetwork, Layer, [String], String) throws -> Void

    /// Every converter: the ones below and those of `CoreMLLayers+ND` (whose reduceMean reduces along any axes) and
    /// `CoreMLLayers+Recurrent`.
    static let converters: [String: Converter] = baseConverters.merging(ndConverters) { _, new in new }
        .merging(recurrentConverters) { _, new in new }

    /// The layers with several outputs (their converters read them from the layer).
    static let multipleOutputs: Set<String> = ["splitND", "uniDirectionalLSTM", "biDirectionalLSTM", "gru", "simpleRecurrent"]

    private static let baseConverters: [String: Converter] = [
        "convolution": { try $0.convolution($0.param($1.convolution), $2, $3) },
        "pooling": { try $0.pooling($0.param($1.pooling), $2, $3) },
        "activation": { try $0.activation($0.param($1.activation), $2, $3) },
        "innerProduct": { try $0.innerProduct($0.param($1.innerproduct), $2, $3) },
        "batchnorm": { try $0.batchnorm($0.param($1.batchnorm), $2, $3) },
        "softmax": { c, _, x, y in try c.g.op("Softmax", [x[0]], y, ["axis": CoreMLGraph.int(try c.channelAxis(x[0]))]) },
        "padding": { try $0.padding($0.param($1.padding), $2, $3) },
        "upsample": { try $0.upsample($0.param($1.upsample), $2, $3) },
        "unary": { try $0.unaryFunction($0.param($1.unary), $2, $3) },
        "add": { c, l, x, y in try c.sum("Add", x, y, alpha: c.param(l.add).alpha) },
        "multiply": { c, l, x, y in try c.sum("Mul", x, y, alpha: c.param(l.multiply).alpha) },
        "average": { try $0.average($2, $3) },
        "scale": { try $0.scale($0.param($1.scale), $2, $3) },
        "bias": { try $0.bias($0.param($1.bias), $2, $3) },
        "loadConstant": { try $0.loadConstant($0.param($1.loadconstant).data, $0.param($1.loadconstant).shape, $0.param($1.loadconstant).n_shape, $3, classic: true) },
        "reshape": { try $0.reshape($0.param($1.reshape), $2, $3) },
        "flatten": { try $0.flatten($0.param($1.flatten), $2, $3) },
        "permute": { try $0.permute($0.param($1.permute), $2, $3) },
        "concat": { c, l, x, y in
            guard try c.param(l.concat).sequenceconcat == 0 else { throw c.g.refused("sequence concat is not supported") }
            try c.g.op("Concat", x, y, ["axis": CoreMLGraph.int(try c.channelAxis(x[0]))])
        },
        "clip": { c, l, x, y in
            let p = try c.param(l.clip)
            try c.g.op("Clip", [x[0], c.g.scalar(y + ".min", p.minval), c.g.scalar(y + ".max", p.maxval)], y)
        },
        "addBroadcastable": { try $0.g.op("Add", $2, $3) },
        "subtractBroadcastable": { try $0.g.op("Sub", $2, $3) },
        "multiplyBroadcastable": { try $0.g.op("Mul", $2, $3) },
        "divideBroadcastable": { try $0.g.op("Div", $2, $3) },
        "softmaxND": { c, l, x, y in try c.g.op("Softmax", [x[0]], y, ["axis": CoreMLGraph.int(Int(c.param(l.softmaxnd).axis))]) },
        "concatND": { c, l, x, y in
            guard try c.param(l.concatnd).interleave == 0 else { throw c.g.refused("interleaved concatenation is not supported") }
            try c.g.op("Concat", x, y, ["axis": CoreMLGraph.int(Int(c.param(l.concatnd).axis))])
        },
        "transpose": { c, l, x, y in
            let p = try c.param(l.transpose)
            try c.g.op("Transpose", [x[0]], y, ["perm": CoreMLGraph.ints((0..<p.n_axes).map { Int(clamping: p.axes[$0]) })])
        },
        "loadConstantND": { try $0.loadConstant($0.param($1.loadconstantnd).data, $0.param($1.loadconstantnd).shape, $0.param($1.loadconstantnd).n_shape, $3, classic: false) },
        "squeeze": { c, l, x, y in
            let p = try c.param(l.squeeze)
            let s = try c.g.need(x[0])
            let axes = p.squeezeall != 0 ? s.indices.filter { s[$0] == 1 } : (0..<p.n_axes).map { Int(p.axes[$0]) }
            try c.g.op("Squeeze", [x[0], c.g.ints(y + ".axes", axes)], y)
        },
        "expandDims": { c, l, x, y in
            let p = try c.param(l.expanddims)
            try c.g.op("Unsqueeze", [x[0], c.g.ints(y + ".axes", (0..<p.n_axes).map { Int(p.axes[$0]) })], y)
        },
        "flattenTo2D": { c, l, x, y in try c.g.op("Flatten", [x[0]], y, ["axis": CoreMLGraph.int(Int(c.param(l.flattento2d).axis))]) },
        "reshapeStatic": { c, l, x, y in
            let p = try c.param(l.reshapestatic)
            try c.g.op("Reshape", [x[0], c.g.ints(y + ".shape", (0..<p.n_targetshape).map { Int(p.targetshape[$0]) })], y)
        },
        "batchedMatmul": { try $0.batchedMatmul($0.param($1.batchedmatmul), $2, $3) },
        "clampedReLU": { c, l, x, y in
            // min(β, x) for x ≥ 0, min(β, α·x) otherwise: a leaky ReLU clipped above.
            let p = try c.param(l.clampedrelu), t = c.g.fresh(y + ".leaky")
            try c.g.op("LeakyRelu", [x[0]], t, ["alpha": CoreMLGraph.float(p.alpha)])
            try c.g.op("Clip", [t, c.g.scalar(y + ".min", -.greatestFiniteMagnitude), c.g.scalar(y + ".max", p.beta)], y)
        },
    ]

    /// The `layer` oneof members by field number (NeuralNetwork.proto), so unsupported layers are named.
    static let names: [UInt32: String] = [
        100: "convolution", 120: "pooling", 130: "activation", 140: "innerProduct", 150: "embedding", 160: "batchnorm",
        165: "mvn", 170: "l2normalize", 175: "softmax", 180: "lrn", 190: "crop", 200: "padding", 210: "upsample",
        211: "resizeBilinear", 212: "cropResize", 220: "unary", 230: "add", 231: "multiply", 240: "average", 245: "scale",
        250: "bias", 260: "max", 261: "min", 270: "dot", 280: "reduce", 290: "loadConstant", 300: "reshape", 301: "flatten",
        310: "permute", 320: "concat", 330: "split", 340: "sequenceRepeat", 345: "reorganizeData", 350: "slice",
        400: "simpleRecurrent", 410: "gru", 420: "uniDirectionalLSTM", 430: "biDirectionalLSTM", 500: "custom",
        600: "copy", 605: "branch", 615: "loop", 620: "loopBreak", 625: "loopContinue", 635: "rangeStatic",
        640: "rangeDynamic", 660: "clip", 665: "ceil", 670: "floor", 680: "sign", 685: "round", 700: "exp2", 710: "sin",
        715: "cos", 720: "tan", 730: "asin", 735: "acos", 740: "atan", 750: "sinh", 755: "cosh", 760: "tanh",
        770: "asinh", 775: "acosh", 780: "atanh", 790: "erf", 795: "gelu", 815: "equal", 820: "notEqual",
        825: "lessThan", 827: "lessEqual", 830: "greaterThan", 832: "greaterEqual", 840: "logicalOr", 845: "logicalXor",
        850: "logicalNot", 855: "logicalAnd", 865: "modBroadcastable", 870: "minBroadcastable", 875: "maxBroadcastable",
        880: "addBroadcastable", 885: "powBroadcastable", 890: "divideBroadcastable", 895: "floorDivBroadcastable",
        900: "multiplyBroadcastable", 905: "subtractBroadcastable", 920: "tile", 925: "stack", 930: "gather",
        935: "scatter", 940: "gatherND", 945: "scatterND", 950: "softmaxND", 952: "gatherAlongAxis",
        954: "scatterAlongAxis", 960: "reverse", 965: "reverseSeq", 975: "splitND", 980: "concatND", 985: "transpose",
        995: "sliceStatic", 1000: "sliceDynamic", 1005: "slidingWindows", 1015: "topK", 1020: "argMin", 1025: "argMax",
        1040: "embeddingND", 1045: "batchedMatmul", 1065: "getShape", 1070: "loadConstantND", 1080: "fillLike",
        1085: "fillStatic", 1090: "fillDynamic", 1100: "broadcastToLike", 1105: "broadcastToStatic",
        1110: "broadcastToDynamic", 1120: "squeeze", 1125: "expandDims", 1130: "flattenTo2D", 1135: "reshapeLike",
        1140: "reshapeStatic", 1145: "reshapeDynamic", 1150: "rankPreservingReshape", 1155: "constantPad",
        1170: "randomNormalLike", 1175: "randomNormalStatic", 1180: "randomNormalDynamic", 1190: "randomUniformLike",
        1195: "randomUniformStatic", 1200: "randomUniformDynamic", 1210: "randomBernoulliLike",
        1215: "randomBernoulliStatic", 1220: "randomBernoulliDynamic", 1230: "categoricalDistribution",
        1250: "reduceL1", 1255: "reduceL2", 1260: "reduceMax", 1265: "reduceMin", 1270: "reduceSum", 1275: "reduceProd",
        1280: "reduceMean", 1285: "reduceLogSum", 1290: "reduceSumSquare", 1295: "reduceLogSumExp",
        1313: "whereNonZero", 1315: "matrixBandPart", 1320: "lowerTriangular", 1325: "upperTriangular",
        1330: "whereBroadcastable", 1350: "layerNormalization", 1400: "NonMaximumSuppression", 1450: "oneHot",
        1455: "cumSum", 1460: "clampedReLU", 1461: "argSort", 1465: "pooling3d", 1466: "globalPooling3d",
        1470: "sliceBySize", 1471: "convolution3d",
    ]

    /// The layer's type: the set `layer` member (a parsed one, or the first unknown field numbered like one).
    static func kind(_ l: Layer) -> String {
        let parsed: [(String, Bool)] = [
            ("convolution", l.convolution != nil), ("pooling", l.pooling != nil), ("activation", l.activation != nil),
            ("innerProduct", l.innerproduct != nil), ("batchnorm", l.batchnorm != nil), ("softmax", l.softmax != nil),
            ("padding", l.padding != nil), ("upsample", l.upsample != nil), ("unary", l.unary != nil), ("add", l.add != nil),
            ("multiply", l.multiply != nil), ("average", l.average != nil), ("scale", l.scale != nil), ("bias", l.bias != nil),
            ("max", l.max != nil), ("min", l.min != nil), ("loadConstant", l.loadconstant != nil), ("reshape", l.reshape != nil),
            ("flatten", l.flatten != nil), ("permute", l.permute != nil), ("concat", l.concat != nil), ("clip", l.clip != nil),
            ("addBroadcastable", l.addbroadcastable != nil), ("divideBroadcastable", l.dividebroadcastable != nil),
            ("multiplyBroadcastable", l.multiplybroadcastable != nil), ("subtractBroadcastable", l.subtractbroadcastable != nil),
            ("softmaxND", l.softmaxnd != nil), ("concatND", l.concatnd != nil), ("transpose", l.transpose != nil),
            ("loadConstantND", l.loadconstantnd != nil), ("squeeze", l.squeeze != nil), ("expandDims", l.expanddims != nil),
            ("flattenTo2D", l.flattento2d != nil), ("reshapeStatic", l.reshapestatic != nil), ("reduceMean", l.reducemean != nil),
            ("clampedReLU", l.clampedrelu != nil), ("batchedMatmul", l.batchedmatmul != nil),
        ]
        if let k = parsed.first(where: { $0.1 })?.0 ?? ndKind(l) ?? recurrentKind(l) { return k }
        for i in 0..<Int(l.base.n_unknown_fields) {
            let tag = l.base.unknown_fields[i].tag
            if let name = names[tag] { return name }
        }
        return "(no layer type)"
    }
}

/// Converts the layers of one NeuralNetwork (plain, classifier or regressor) into `CoreMLGraph`.
struct CoreMLNeuralNetwork {
    var g: CoreMLGraph
    let reader: CoreMLWeightReader
    /// Rank-5 semantics (spec 1–3 mappings): every blob is (N, C, H, W).
    let classic: Bool

    /// Every unsupported layer type of `layers`, all at once.
    static func checkSupported(_ layers: [CoreMLLayers.Layer], file: String) throws {
        var counts: [String: (count: Int, names: [String], order: Int)] = [:]
        for l in layers {
            let k = CoreMLLayers.kind(l)
            guard CoreMLLayers.converters[k] == nil else { continue }
            var e = counts[k] ?? (0, [], counts.count)
            e.count += 1
            if e.names.count < 3 { e.names.append(cString(l.name)) }
            counts[k] = e
        }
        guard counts.isEmpty else {
            throw ImportError.unsupported(file: file, ops: counts.sorted { $0.value.order < $1.value.order }
                .map { ImportError.Unsupported(op: $0.key, count: $0.value.count, firstNodes: $0.value.names) })
        }
    }

    mutating func convert(_ l: CoreMLLayers.Layer) throws {
        let name = cString(l.name), kind = CoreMLLayers.kind(l)
        g.label = "layer '\(name)' (\(kind))"
        let inputs = (0..<l.n_input).map { cString(l.input[$0]) }
        let outputs = (0..<l.n_output).map { cString(l.output[$0]) }
        guard outputs.count == 1 || (CoreMLLayers.multipleOutputs.contains(kind) && outputs.count > 1), let out = outputs.first, !out.isEmpty,
              kind == "loadConstant" || kind == "loadConstantND" || !inputs.isEmpty else {
            throw g.invalid("", expected: "inputs and one output (splitND and the recurrent layers: several)", actual: "\(inputs.count) inputs, \(outputs.count) outputs")
        }
        for i in inputs { _ = try g.need(i) }
        guard let converter = CoreMLLayers.converters[kind] else {
            throw ImportError.unsupported(file: g.file, ops: [.init(op: kind, count: 1, firstNodes: [name])])
        }
        try converter(&self, l, inputs, out)
    }

    // MARK: helpers

    /// The layer's parameters (set: `CoreMLLayers.kind` chose the converter by them).
    func param<T>(_ p: UnsafeMutablePointer<T>?) throws -> T {
        guard let p else { throw g.invalid("", expected: "the layer's parameters", actual: "none") }
        return p.pointee
    }

    /// The channel axis of a blob: 1 for (N, C, …) blobs; the last axis of rank-1 and rank-3 (C, H, W) blobs of
    /// the exact mapping is handled as Core ML does (axis −3 of rank ≥ 3, else the last).
    func channelAxis(_ x: String) throws -> Int {
        let r = try g.need(x).count
        return r >= 3 ? r - 3 : r - 1
    }

    /// A per-channel / (C, H, W) constant shaped to broadcast against a (N, C, H, W) blob.
    func broadcastable(_ c: ONNXConstant, against x: [Int]) -> ONNXConstant {
        var c = c
        if c.values.count == 1 { c.shape = [] } else if c.rank == 1, x.count >= 3 { c.shape = [c.shape[0], 1, 1] }
        return c
    }

    /// Border amounts (height, width) → (top, left, bottom, right).
    func borders(_ b: UnsafeMutablePointer<CoreML__Specification__BorderAmounts>?) -> [Int] {
        guard let b = b?.pointee, b.n_borderamounts == 2, let h = b.borderamounts[0]?.pointee, let w = b.borderamounts[1]?.pointee else {
            return [0, 0, 0, 0]
        }
        return [h.startedgesize, w.startedgesize, h.endedgesize, w.endedgesize].map { Int(clamping: $0) }
    }

    func pair(_ p: UnsafeMutablePointer<UInt64>?, _ n: Int, _ d: Int, _ what: String) throws -> [Int] {
        if n == 0 { return [d, d] }
        guard n == 2, let p else { throw g.invalid(what, expected: "2 values", actual: "\(n)") }
        return [Int(clamping: p[0]), Int(clamping: p[1])]
    }

    /// The ONNX window attributes for Core ML's padding choice.
    func window(valid: UnsafeMutablePointer<CoreML__Specification__ValidPadding>?,
                same: UnsafeMutablePointer<CoreML__Specification__SamePadding>?) -> [String: ONNXFile.Attribute] {
        if let s = same?.pointee {
            return ["auto_pad": CoreMLGraph.string(s.asymmetrymode == 1 ? "SAME_LOWER" : "SAME_UPPER")]
        }
        let p = borders(valid?.pointee.paddingamounts)
        return ["pads": CoreMLGraph.ints([p[0], p[1], p[2], p[3]])]
    }

    // MARK: layers

    mutating func convolution(_ c: CoreML__Specification__ConvolutionLayerParams, _ x: [String], _ y: String) throws {
        guard c.n_kernelsize == 2 || c.n_kernelsize == 0 else { throw g.invalid("kernelSize", expected: "2 values", actual: "\(c.n_kernelsize)") }
        guard x.count == 1 else { throw g.refused("weights given as a second input are not supported") }
        let oc = Int(clamping: c.outputchannels), kc = Int(clamping: c.kernelchannels), groups = max(Int(clamping: c.ngroups), 1)
        let k = try pair(c.kernelsize, c.n_kernelsize, 3, "kernelSize")
        // Deconvolution weights are (C, OC/groups, KH, KW), as ONNX ConvTranspose's.
        let deconvolution = c.isdeconvolution != 0
        let w = try reader.constant(c.weights, shape: deconvolution ? [kc, oc / groups, k[0], k[1]] : [oc, kc, k[0], k[1]], place: g.label + " weights")
        var ins = [x[0], g.constant(y + ".weights", w)]
        if c.hasbias != 0 { ins.append(g.constant(y + ".bias", try reader.constant(c.bias, shape: [oc], place: g.label + " bias"))) }
        var attrs = window(valid: c.valid, same: c.same)
        attrs["strides"] = CoreMLGraph.ints(try pair(c.stride, c.n_stride, 1, "stride"))
        attrs["dilations"] = CoreMLGraph.ints(try pair(c.dilationfactor, c.n_dilationfactor, 1, "dilationFactor"))
        attrs["group"] = CoreMLGraph.int(groups)
        if deconvolution, c.n_outputshape == 2, let o = c.outputshape {
            attrs["output_shape"] = CoreMLGraph.ints([Int(clamping: o[0]), Int(clamping: o[1])])
        }
        try g.op(deconvolution ? "ConvTranspose" : "Conv", ins, y, attrs)
    }

    mutating func pooling(_ p: CoreML__Specification__PoolingLayerParams, _ x: [String], _ y: String) throws {
        guard p.type == 0 || p.type == 1 else { throw g.refused("L2 pooling is not supported") }
        if p.globalpooling != 0 {
            return try g.op(p.type == 0 ? "GlobalMaxPool" : "GlobalAveragePool", [x[0]], y)
        }
        var attrs: [String: ONNXFile.Attribute] = [
            "kernel_shape": CoreMLGraph.ints(try pair(p.kernelsize, p.n_kernelsize, 3, "kernelSize")),
            "strides": CoreMLGraph.ints(try pair(p.stride, p.n_stride, 1, "stride")),
        ]
        if let last = p.includelastpixel?.pointee {
            // Symmetric padding, and a last window that may run past the end (ceil rounding).
            let a = last.n_paddingamounts == 2 ? [Int(clamping: last.paddingamounts[0]), Int(clamping: last.paddingamounts[1])] : [0, 0]
            attrs["pads"] = CoreMLGraph.ints([a[0], a[1], a[0], a[1]])
            attrs["ceil_mode"] = CoreMLGraph.int(1)
        } else {
            attrs.merge(window(valid: p.valid, same: p.same)) { a, _ in a }
        }
        if p.type == 1 { attrs["count_include_pad"] = CoreMLGraph.int(p.avgpoolexcludepadding == 0 ? 1 : 0) }
        try g.op(p.type == 0 ? "MaxPool" : "AveragePool", [x[0]], y, attrs)
    }

    mutating func activation(_ a: CoreML__Specification__ActivationParams, _ x: [String], _ y: String) throws {
        let v = x[0]
        if a.relu != nil { return try g.op("Relu", [v], y) }
        if a.sigmoid != nil { return try g.op("Sigmoid", [v], y) }
        if a.tanh != nil { return try g.op("Tanh", [v], y) }
        if let p = a.leakyrelu?.pointee { return try g.op("LeakyRelu", [v], y, ["alpha": CoreMLGraph.float(p.alpha)]) }
        if let p = a.sigmoidhard?.pointee {
            return try g.op("HardSigmoid", [v], y, ["alpha": CoreMLGraph.float(p.alpha), "beta": CoreMLGraph.float(p.beta)])
        }
        if let p = a.thresholdedrelu?.pointee { return try g.unary(.thresholdedRelu, v, y, alpha: p.alpha) }
        if let p = a.elu?.pointee { return try g.unary(.elu, v, y, alpha: p.alpha) }
        if a.softplus != nil { return try g.unary(.softplus, v, y) }
        if a.softsign != nil { return try g.unary(.softsign, v, y) }
        if let p = a.prelu?.pointee {
            let s = try g.need(v)
            let c = s.count >= 3 ? s[s.count - 3] : (s.last ?? 1)
            var slope = try reader.constant(p.alpha, shape: [c < 0 ? 1 : c], place: g.label + " alpha")
            if slope.values.count == 1 { slope.shape = [] } else { slope = broadcastable(slope, against: s) }
            slope.quant = nil
            return try g.prelu(v, slope: slope, y)
        }
        if let p = a.linear?.pointee { return try affine(v, y, scale: p.alpha, shift: p.beta) }
        if let p = a.scaledtanh?.pointee {
            let inner = g.fresh(y + ".inner"), t = g.fresh(y + ".tanh")
            try g.op("Mul", [v, g.scalar(y + ".beta", p.beta)], inner)
            try g.op("Tanh", [inner], t)
            return try g.op("Mul", [t, g.scalar(y + ".alpha", p.alpha)], y)
        }
        throw ImportError.unsupported(file: g.file, ops: [.init(op: "activation " + unknownActivation(a), count: 1, firstNodes: [g.label])])
    }

    private func unknownActivation(_ a: CoreML__Specification__ActivationParams) -> String {
        if a.parametricsoftplus != nil { return "parametricSoftplus" }
        let tags = (0..<Int(a.base.n_unknown_fields)).map { String(a.base.unknown_fields[$0].tag) }
        return tags.isEmpty ? "(none set)" : "field " + tags.joined(separator: ", ")
    }

    /// y = scale·x + shift (identity when 1 and 0).
    mutating func affine(_ x: String, _ y: String, scale: Float, shift: Float) throws {
        if scale == 1 && shift == 0 { return try g.op("Identity", [x], y) }
        let t = shift == 0 ? y : g.fresh(y + ".scaled")
        if scale != 1 || shift == 0 { try g.op("Mul", [x, g.scalar(y + ".alpha", scale)], t) }
        if shift != 0 { try g.op("Add", [scale == 1 ? x : t, g.scalar(y + ".beta", shift)], y) }
    }

    mutating func innerProduct(_ p: CoreML__Specification__InnerProductLayerParams, _ x: [String], _ y: String) throws {
        let inC = Int(clamping: p.inputchannels), outC = Int(clamping: p.outputchannels)
        let s = try g.need(x[0])
        let w = try reader.constant(p.weights, shape: [outC, inC], place: g.label + " weights")
        var ins = [x[0], g.constant(y + ".weights", w)]
        if p.hasbias != 0 { ins.append(g.constant(y + ".bias", try reader.constant(p.bias, shape: [outC], place: g.label + " bias"))) }
        switch s.count {
        case 1:
            // (C) → (1, C) → (1, OUT) → (OUT): a vector input of a network with exact shape mapping.
            let row = g.fresh(y + ".row"), dense = g.fresh(y + ".dense")
            try g.op("Unsqueeze", [x[0], g.ints(y + ".axes", [0])], row)
            ins[0] = row
            try g.op("Gemm", ins, dense, ["transB": CoreMLGraph.int(1)])
            try g.op("Squeeze", [dense, g.ints(y + ".squeezed", [0])], y)
        case 2:
            try g.op("Gemm", ins, y, ["transB": CoreMLGraph.int(1)])
        case 4:
            // (N, C, H, W) → (N, C·H·W) in CHW order → (N, OUT) → (N, OUT, 1, 1).
            let flat = g.fresh(y + ".flat"), dense = g.fresh(y + ".dense")
            try g.op("Flatten", [x[0]], flat, ["axis": CoreMLGraph.int(1)])
            ins[0] = flat
            try g.op("Gemm", ins, dense, ["transB": CoreMLGraph.int(1)])
            try g.op("Reshape", [dense, g.ints(y + ".shape", [0, outC, 1, 1])], y)
        case 3 where s[2] == inC:
            // (N, L, C) of the exact mapping (coremltools' linear on a sequence): a product along the last axis.
            let product = p.hasbias != 0 ? g.fresh(y + ".product") : y
            try g.op("MatMul", [x[0], g.constant(y + ".weightsT", w.transposed([1, 0]))], product)
            if p.hasbias != 0 { try g.op("Add", [product, ins[2]], y) }
        default:
            throw g.invalid("input", expected: "rank 1 (C), rank 2 (N, C), rank 3 (N, L, C) or rank 4 (N, C, H, W)", actual: "\(s)")
        }
    }

    mutating func batchnorm(_ b: CoreML__Specification__BatchnormLayerParams, _ x: [String], _ y: String) throws {
        let c = Int(clamping: b.channels)
        if b.computemeanvar != 0 && b.instancenormalization != 0 {
            // Instance normalization: statistics per image and channel, then gamma and beta.
            let params = try [("gamma", b.gamma), ("beta", b.beta)].map { key, w in
                g.constant(y + "." + key, try reader.constant(w, shape: [c], place: g.label + " " + key))
            }
            return try g.op("InstanceNormalization", [x[0]] + params, y, ["epsilon": CoreMLGraph.float(b.epsilon)])
        }
        guard b.computemeanvar == 0 else { throw g.refused("batchnorm computing its statistics over the batch is not supported") }
        let params = try [("gamma", b.gamma), ("beta", b.beta), ("mean", b.mean), ("variance", b.variance)].map { key, w in
            g.constant(y + "." + key, try reader.constant(w, shape: [c], place: g.label + " " + key))
        }
        try g.op("BatchNormalization", [x[0]] + params, y, ["epsilon": CoreMLGraph.float(b.epsilon)])
    }

    mutating func padding(_ p: CoreML__Specification__PaddingLayerParams, _ x: [String], _ y: String) throws {
        let s = try g.need(x[0])
        guard s.count == 4 else { throw g.invalid("input", expected: "(N, C, H, W)", actual: "\(s)") }
        let t = borders(p.paddingamounts)
        let mode = p.reflection != nil ? "reflect" : p.replication != nil ? "edge" : "constant"
        try g.op("Pad", [x[0], g.ints(y + ".pads", [0, 0, t[0], t[1], 0, 0, t[2], t[3]]), g.scalar(y + ".value", p.constant?.pointee.value ?? 0)],
                 y, ["mode": CoreMLGraph.string(mode)])
    }

    mutating func upsample(_ p: CoreML__Specification__UpsampleLayerParams, _ x: [String], _ y: String) throws {
        guard p.n_fractionalscalingfactor == 0 else { throw g.refused("fractional upsampling factors are not supported") }
        if p.mode == 1 {
            // LinearUpsampleMode: DEFAULT samples at i / scale, ALIGN_CORNERS_TRUE / _FALSE as ONNX's modes.
            let f = try pair(p.scalingfactor, p.n_scalingfactor, 1, "scalingFactor")
            let mode = [0: "asymmetric", 1: "align_corners", 2: "half_pixel"][Int(p.linearupsamplemode)] ?? "unknown"
            guard mode != "unknown" else { throw g.invalid("linearUpsampleMode", expected: "0, 1 or 2", actual: "\(p.linearupsamplemode)") }
            let scales = g.constant(y + ".scales", ONNXConstant(shape: [4], values: [1, 1, Double(f[0]), Double(f[1])]))
            return try g.op("Resize", [x[0], "", scales], y, ["mode": CoreMLGraph.string("linear"),
                                                              "coordinate_transformation_mode": CoreMLGraph.string(mode)])
        }
        guard p.mode == 0 else { throw g.invalid("mode", expected: "0 (nearest) or 1 (bilinear)", actual: "\(p.mode)") }
        try g.upsampleNearest(x[0], factors: try pair(p.scalingfactor, p.n_scalingfactor, 1, "scalingFactor"), y)
    }

    mutating func unaryFunction(_ p: CoreML__Specification__UnaryFunctionLayerParams, _ x: [String], _ y: String) throws {
        // y = f(scale·x + shift)
        let inner = p.scale == 1 && p.shift == 0 ? x[0] : g.fresh(y + ".affine")
        if inner != x[0] { try affine(x[0], inner, scale: p.scale == 0 ? 0 : p.scale, shift: p.shift) }
        switch p.type {
        case 0: try g.unary(.sqrt, inner, y)
        case 1: try g.unary(.rsqrt, inner, y, alpha: p.epsilon)
        case 2: try g.unary(.reciprocal, inner, y, alpha: p.epsilon)
        case 3: try g.unary(.pow, inner, y, alpha: p.alpha)
        case 4: try g.unary(.exp, inner, y)
        case 5: try g.unary(.log, inner, y)
        case 6: try g.unary(.abs, inner, y)
        case 7: try g.unary(.threshold, inner, y, alpha: p.alpha)
        default: throw g.invalid("type", expected: "a unary function 0…7", actual: "\(p.type)")
        }
    }

    /// add / multiply: all inputs combined (broadcasting), or one input with the constant alpha.
    mutating func sum(_ op: String, _ x: [String], _ y: String, alpha: Float) throws {
        if x.count == 1 { return try g.op(op, [x[0], g.scalar(y + ".alpha", alpha)], y) }
        var acc = x[0]
        for (i, v) in x.dropFirst().enumerated() {
            let target = i == x.count - 2 ? y : g.fresh(y + ".partial")
            try g.op(op, [acc, v], target)
            acc = target
        }
    }

    mutating func average(_ x: [String], _ y: String) throws {
        let total = x.count == 1 ? x[0] : g.fresh(y + ".sum")
        if x.count > 1 { try sum("Add", x, total, alpha: 0) }
        try g.op("Mul", [total, g.scalar(y + ".inverse", 1 / Float(x.count))], y)
    }

    /// A constant of the layer's `shape` ([1], [C] or [C, H, W]) broadcastable against (N, C, H, W).
    private func shaped(_ w: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, _ shape: UnsafeMutablePointer<UInt64>?,
                        _ n: Int, _ what: String, against x: [Int]) throws -> ONNXConstant {
        guard (1...3).contains(n), let shape else { throw g.invalid(what + " shape", expected: "[1], [C] or [C, H, W]", actual: "\(n) values") }
        let dims = (0..<n).map { Int(clamping: shape[$0]) }
        var c = try reader.constant(w, shape: dims, place: g.label + " " + what)
        c.quant = nil
        return broadcastable(c, against: x)
    }

    mutating func scale(_ p: CoreML__Specification__ScaleLayerParams, _ x: [String], _ y: String) throws {
        let s = try g.need(x[0])
        let scale = try shaped(p.scale, p.shapescale, p.n_shapescale, "scale", against: s)
        let t = p.hasbias != 0 ? g.fresh(y + ".scaled") : y
        try g.op("Mul", [x[0], g.constant(y + ".scale", scale)], t)
        if p.hasbias != 0 {
            try g.op("Add", [t, g.constant(y + ".bias", try shaped(p.bias, p.shapebias, p.n_shapebias, "bias", against: s))], y)
        }
    }

    mutating func bias(_ p: CoreML__Specification__BiasLayerParams, _ x: [String], _ y: String) throws {
        let s = try g.need(x[0])
        try g.op("Add", [x[0], g.constant(y + ".bias", try shaped(p.bias, p.shape, p.n_shape, "bias", against: s))], y)
    }

    mutating func loadConstant(_ w: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, _ shape: UnsafeMutablePointer<UInt64>?,
                               _ n: Int, _ y: String, classic: Bool) throws {
        guard let shape, n >= 1 else { throw g.invalid("shape", expected: "dimensions", actual: "none") }
        let dims = (0..<n).map { Int(clamping: shape[$0]) }
        var c = try reader.constant(w, shape: dims, place: g.label + " data")
        c.quant = nil
        if classic { c.shape = [1] + dims }
        g.b.constants[y] = c
    }

    mutating func reshape(_ p: CoreML__Specification__ReshapeLayerParams, _ x: [String], _ y: String) throws {
        var target = (0..<p.n_targetshape).map { Int(p.targetshape[$0]) }
        if target.count == 4 {
            guard target[0] == 1 else { throw g.refused("a reshape of the sequence axis is not supported") }
            target.removeFirst()
        }
        guard target.count == 3 else { throw g.invalid("targetShape", expected: "(C, H, W) or (1, C, H, W)", actual: "\(target)") }
        if p.mode == 0 { return try g.op("Reshape", [x[0], g.ints(y + ".shape", [0] + target)], y) }
        // Channel-last order: the data is read and written as (H, W, C).
        let a = g.fresh(y + ".hwc"), b = g.fresh(y + ".reshaped")
        try g.op("Transpose", [x[0]], a, ["perm": CoreMLGraph.ints([0, 2, 3, 1])])
        try g.op("Reshape", [a, g.ints(y + ".shape", [0, target[1], target[2], target[0]])], b)
        try g.op("Transpose", [b], y, ["perm": CoreMLGraph.ints([0, 3, 1, 2])])
    }

    mutating func flatten(_ p: CoreML__Specification__FlattenLayerParams, _ x: [String], _ y: String) throws {
        let s = try g.need(x[0])
        var source = x[0]
        if p.mode == 1 && s.count == 4 {
            source = g.fresh(y + ".hwc")
            try g.op("Transpose", [x[0]], source, ["perm": CoreMLGraph.ints([0, 2, 3, 1])])
        }
        let flat = g.fresh(y + ".flat")
        try g.op("Flatten", [source], flat, ["axis": CoreMLGraph.int(1)])
        try g.op("Reshape", [flat, g.ints(y + ".shape", [0, -1, 1, 1])], y)
    }

    mutating func permute(_ p: CoreML__Specification__PermuteLayerParams, _ x: [String], _ y: String) throws {
        let axes = (0..<p.n_axis).map { Int(clamping: p.axis[$0]) }
        guard axes.count == 4, axes[0] == 0, Set(axes) == [0, 1, 2, 3] else {
            throw g.refused("a permutation that moves the sequence axis (\(axes)) is not supported")
        }
        try g.op("Transpose", [x[0]], y, ["perm": CoreMLGraph.ints(axes)])
    }

    /// A · B (+ bias): B is the layer's own (K, N) weight matrix when it has one input — what coremltools writes
    /// for a Keras `Dense`; its values are stored as Bᵀ, (N, K) row-major, like an inner product's (the Keras
    /// fixture keras_mobilenet.mlmodel pins this: its outputs match Keras's) — or its second input.
    mutating func batchedMatmul(_ p: CoreML__Specification__BatchedMatMulLayerParams, _ x: [String], _ y: String) throws {
        guard p.int8dynamicquantize == 0 else { throw g.refused("int8 dynamic quantization of a batched matmul is not supported") }
        guard x.count == 2 || (p.transposea == 0 && p.transposeb == 0) else {
            throw g.refused("a batched matmul of weights with a transposed input (transposeA \(p.transposea != 0), transposeB \(p.transposeb != 0)) is not supported")
        }
        switch x.count {
        case 1:
            let k = Int(clamping: p.weightmatrixfirstdimension), n = Int(clamping: p.weightmatrixseconddimension)
            guard (1...Int(Int32.max)).contains(k), (1...Int(Int32.max)).contains(n) else {
                throw g.invalid("weight matrix", expected: "positive dimensions", actual: "\(k) × \(n)")
            }
            let s = try g.need(x[0])
            guard s.count == 2 else {
                throw g.refused("a batched matmul with weights on a rank-\(s.count) input \(s) is not supported (rank 2 is)")
            }
            var ins = [x[0], g.constant(y + ".weights", try reader.constant(p.weights, shape: [n, k], place: g.label + " weights"))]
            if p.hasbias != 0 { ins.append(g.constant(y + ".bias", try reader.constant(p.bias, shape: [n], place: g.label + " bias"))) }
            try g.op("Gemm", ins, y, ["transB": CoreMLGraph.int(1)])
        case 2:
            guard p.hasbias == 0 else { throw g.refused("a bias on a batched matmul of two inputs is not supported") }
            let a = p.transposea != 0 ? try g.transposedLastTwo(x[0], y + ".aT") : x[0]
            let b = p.transposeb != 0 ? try g.transposedLastTwo(x[1], y + ".bT") : x[1]
            try g.op("MatMul", [a, b], y)
        default:
            throw g.invalid("inputs", expected: "one (with weights) or two", actual: "\(x.count)")
        }
    }
}
