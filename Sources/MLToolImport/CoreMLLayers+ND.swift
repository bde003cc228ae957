import CCoreMLProto
import MLToolCore

/// The rank-N NeuralNetwork layers coremltools writes for transformer and decoder networks (spec 4+): the reduce
/// family, arg-max/min, gelu, erf, comparisons and where, stack, gather(AlongAxis), splitND, tile, the static slices, layer
/// normalization, and the classic crop and slice.
extension CoreMLLayers {
    static let ndConverters: [String: Converter] = [
        "reduceSum": { c, l, x, y in try c.reduceND("ReduceSum", c.param(l.reducesum), x, y) },
        "reduceMean": { c, l, x, y in try c.reduceND("ReduceMean", c.param(l.reducemean), x, y) },
        "reduceMax": { c, l, x, y in try c.reduceND("ReduceMax", c.param(l.reducemax), x, y) },
        "reduceMin": { c, l, x, y in try c.reduceND("ReduceMin", c.param(l.reducemin), x, y) },
        "reduceProd": { c, l, x, y in try c.reduceND("ReduceProd", c.param(l.reduceprod), x, y) },
        "reduceL1": { c, l, x, y in try c.reduceND("ReduceL1", c.param(l.reducel1), x, y) },
        "reduceL2": { c, l, x, y in try c.reduceND("ReduceL2", c.param(l.reducel2), x, y) },
        "reduceLogSum": { c, l, x, y in try c.reduceND("ReduceLogSum", c.param(l.reducelogsum), x, y) },
        "reduceSumSquare": { c, l, x, y in try c.reduceND("ReduceSumSquare", c.param(l.reducesumsquare), x, y) },
        "reduceLogSumExp": { c, l, x, y in try c.reduceND("ReduceLogSumExp", c.param(l.reducelogsumexp), x, y) },
        "argMax": { c, l, x, y in try c.arg("ArgMax", c.param(l.argmax), x, y) },
        "argMin": { c, l, x, y in try c.arg("ArgMin", c.param(l.argmin), x, y) },
        "gelu": { c, l, x, y in
            let modes = [0: "EXACT", 1: "TANH_APPROXIMATION", 2: "SIGMOID_APPROXIMATION"]
            let mode = try c.param(l.gelu).mode
            try c.g.gelu(x[0], mode: modes[Int(mode)] ?? "mode \(mode)", y)
        },
        "erf": { c, _, x, y in try c.g.op("Erf", [x[0]], y) },
        "whereBroadcastable": { c, _, x, y in try c.g.op("Where", x, y) },
        "powBroadcastable": { c, _, x, y in try c.g.op("Pow", x, y) },
        "maxBroadcastable": { c, _, x, y in try c.g.op("Max", x, y) },
        "minBroadcastable": { c, _, x, y in try c.g.op("Min", x, y) },
        "greaterThan": { c, l, x, y in try c.compare("Greater", x, alpha: c.param(l.greaterthan).alpha, y) },
        "greaterEqual": { c, l, x, y in try c.compare("GreaterOrEqual", x, alpha: c.param(l.greaterequal).alpha, y) },
        "lessThan": { c, l, x, y in try c.compare("Less", x, alpha: c.param(l.lessthan).alpha, y) },
        "lessEqual": { c, l, x, y in try c.compare("LessOrEqual", x, alpha: c.param(l.lessequal).alpha, y) },
        "equal": { c, l, x, y in try c.compare("Equal", x, alpha: c.param(l.equal).alpha, y) },
        "notEqual": { c, l, x, y in
            let same = c.g.fresh(y + ".equal")
            try c.compare("Equal", x, alpha: c.param(l.notequal).alpha, same)
            try c.g.op("Not", [same], y)
        },
        "stack": { c, l, x, y in try c.g.stack(x, axis: Int(try c.param(l.stack).axis), y) },
        "gather": { c, l, x, y in try c.g.op("Gather", x, y, ["axis": CoreMLGraph.int(Int(try c.param(l.gather).axis))]) },
        "tile": { c, l, x, y in
            let p = try c.param(l.tile)
            try c.g.op("Tile", [x[0], c.g.ints(y + ".reps", (0..<p.n_reps).map { Int(clamping: p.reps[$0]) })], y)
        },
        "gatherAlongAxis": { c, l, x, y in
            try c.g.op("GatherElements", x, y, ["axis": CoreMLGraph.int(Int(try c.param(l.gatheralongaxis).axis))])
        },
        "splitND": { c, l, x, _ in
            let p = try c.param(l.splitnd)
            let outputs = (0..<l.n_output).map { cString(l.output[$0]) }
            guard p.numsplits == 0 || p.numsplits == UInt64(outputs.count) else {
                throw c.g.invalid("numSplits", expected: "\(outputs.count) (one per output)", actual: "\(p.numsplits)")
            }
            try c.g.split(x[0], axis: Int(p.axis), sizes: (0..<p.n_splitsizes).map { Int(clamping: p.splitsizes[$0]) }, outputs)
        },
        "slice": { try $0.classicSlice($0.param($1.slice), $2, $3) },
        "sliceStatic": { try $0.sliceStatic($0.param($1.slicestatic), $2, $3) },
        "crop": { try $0.crop($0.param($1.crop), $2, $3) },
        "layerNormalization": { try $0.layerNormalization($0.param($1.layernormalization), $2, $3) },
    ]

    /// The `layer` members parsed beyond `kind`'s list (this file's layers).
    static func ndKind(_ l: Layer) -> String? {
        let parsed: [(String, Bool)] = [
            ("reduceSum", l.reducesum != nil), ("reduceMax", l.reducemax != nil), ("reduceMin", l.reducemin != nil),
            ("reduceProd", l.reduceprod != nil), ("reduceL1", l.reducel1 != nil), ("reduceL2", l.reducel2 != nil),
            ("reduceLogSum", l.reducelogsum != nil), ("reduceSumSquare", l.reducesumsquare != nil),
            ("reduceLogSumExp", l.reducelogsumexp != nil), ("argMax", l.argmax != nil), ("argMin", l.argmin != nil),
            ("gelu", l.gelu != nil), ("erf", l.erf != nil), ("whereBroadcastable", l.wherebroadcastable != nil),
            ("powBroadcastable", l.powbroadcastable != nil), ("maxBroadcastable", l.maxbroadcastable != nil),
            ("minBroadcastable", l.minbroadcastable != nil), ("greaterThan", l.greaterthan != nil),
            ("greaterEqual", l.greaterequal != nil), ("lessThan", l.lessthan != nil), ("lessEqual", l.lessequal != nil),
            ("equal", l.equal != nil), ("notEqual", l.notequal != nil), ("stack", l.stack != nil), ("gather", l.gather != nil),
            ("tile", l.tile != nil), ("gatherAlongAxis", l.gatheralongaxis != nil), ("splitND", l.splitnd != nil), ("slice", l.slice != nil), ("sliceStatic", l.slicestatic != nil), ("crop", l.crop != nil),
            ("layerNormalization", l.layernormalization != nil),
        ]
        return parsed.first { $0.1 }?.0
    }
}

extension CoreMLNeuralNetwork {
    mutating func reduceND(_ onnx: String, _ p: CoreML__Specification__ReduceMeanLayerParams, _ x: [String], _ y: String) throws {
        let axes = p.reduceall != 0 ? nil : (0..<p.n_axes).map { Int(p.axes[$0]) }
        try g.reduce(onnx, x[0], axes: axes, keepDims: p.keepdims != 0, y)
    }

    mutating func arg(_ onnx: String, _ p: CoreML__Specification__ArgLayerParams, _ x: [String], _ y: String) throws {
        try g.op(onnx, [x[0]], y, ["axis": CoreMLGraph.int(Int(p.axis)), "keepdims": CoreMLGraph.int(p.removedim != 0 ? 0 : 1)])
    }

    /// A comparison of two inputs, or of one with the layer's `alpha`.
    mutating func compare(_ onnx: String, _ x: [String], alpha: Float, _ y: String) throws {
        try g.op(onnx, x.count == 1 ? [x[0], g.scalar(y + ".alpha", alpha)] : x, y)
    }

    /// The classic slice: one of the channel, height and width axes (−3, −2, −1), [start, end) by a stride; an end
    /// of −1 runs to the end.
    mutating func classicSlice(_ p: CoreML__Specification__SliceLayerParams, _ x: [String], _ y: String) throws {
        guard (0...2).contains(p.axis) else { throw g.invalid("axis", expected: "CHANNEL, HEIGHT or WIDTH", actual: "\(p.axis)") }
        let (start, end) = (Int(p.startindex), Int(p.endindex))
        guard end > 0 || end == -1, p.stride >= 1, p.stride <= UInt64(Int32.max) else {
            throw g.invalid("", expected: "an end index > 0 or −1 and a stride ≥ 1", actual: "end \(end), stride \(p.stride)")
        }
        let axis = Int(p.axis) - 3
        try g.op("Slice", [x[0], g.ints(y + ".starts", [start]), g.ints(y + ".ends", [end == -1 ? CoreMLProgramReader.past : end]),
                           g.ints(y + ".axes", [axis]), g.ints(y + ".steps", [Int(p.stride)])], y)
    }

    /// sliceStatic: per axis begin / end / stride with masks and squeeze masks, as MIL's slice_by_index.
    mutating func sliceStatic(_ p: CoreML__Specification__SliceStaticLayerParams, _ x: [String], _ y: String) throws {
        let r = try g.need(x[0]).count
        func list<T>(_ v: UnsafeMutablePointer<T>?, _ n: Int) -> [T] { v.map { v in (0..<n).map { v[$0] } } ?? [] }
        func flags(_ v: UnsafeMutablePointer<protobuf_c_boolean>?, _ n: Int) -> [Bool] {
            n == 0 ? [Bool](repeating: false, count: r) : list(v, n).map { $0 != 0 }
        }
        let slice = CoreMLSlice(begin: list(p.beginids, p.n_beginids).map { Int($0) }, end: list(p.endids, p.n_endids).map { Int($0) },
                                stride: p.n_strides == 0 ? [Int](repeating: 1, count: r) : list(p.strides, p.n_strides).map { Int($0) },
                                beginMask: flags(p.beginmasks, p.n_beginmasks), endMask: flags(p.endmasks, p.n_endmasks),
                                squeeze: flags(p.squeezemasks, p.n_squeezemasks))
        try g.slice(x[0], slice, y)
    }

    /// crop with one input: cropAmounts (top, bottom) and (left, right) off the height and width.
    mutating func crop(_ p: CoreML__Specification__CropLayerParams, _ x: [String], _ y: String) throws {
        guard x.count == 1 else { throw g.refused("a crop to the size of a second input is not supported") }
        let b = borders(p.cropamounts)
        let (top, left, bottom, right) = (b[0], b[1], b[2], b[3])
        try g.op("Slice", [x[0], g.ints(y + ".starts", [top, left]),
                           g.ints(y + ".ends", [bottom == 0 ? CoreMLProgramReader.past : -bottom, right == 0 ? CoreMLProgramReader.past : -right]),
                           g.ints(y + ".axes", [-2, -1])], y)
    }

    mutating func layerNormalization(_ p: CoreML__Specification__LayerNormalizationLayerParams, _ x: [String], _ y: String) throws {
        let shape = (0..<p.n_normalizedshape).map { Int(clamping: p.normalizedshape[$0]) }
        guard !shape.isEmpty, shape.allSatisfy({ $0 >= 1 }) else { throw g.invalid("normalizedShape", expected: "positive sizes", actual: "\(shape)") }
        let gamma = try reader.constant(p.gamma, shape: shape, place: g.label + " gamma")
        let beta = try reader.constant(p.beta, shape: shape, place: g.label + " beta")
        try g.op("LayerNormalization", [x[0], g.constant(y + ".gamma", gamma), g.constant(y + ".beta", beta)], y,
                 ["axis": CoreMLGraph.int(-shape.count), "epsilon": CoreMLGraph.float(p.eps)])
    }
}
