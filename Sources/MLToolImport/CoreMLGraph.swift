import MLToolCore

/// The graph both Core ML readers (NeuralNetwork layers and ML Program ops) build into. Core ML blobs and MIL
/// tensors are channel-first like ONNX's, so each layer or op is expressed as ONNX-semantics nodes run through
/// `ONNXGraphBuilder`, which already tracks shapes, folds constants, translates NCHW into the IR's NHWC and keeps
/// int8 / palette weights compressed. Errors name the Core ML layer or op (`label`).
struct CoreMLGraph {
    var b: ONNXGraphBuilder
    let file: String
    /// How errors name the layer or op being converted, e.g. "layer 'conv1' (convolution)".
    var label = ""
    private var counter = 0

    init(file: String, reserved: Set<String>) {
        self.file = file
        b = ONNXGraphBuilder(file: file, opset: 13, constants: [:], reservedNames: reserved)
    }

    // MARK: attributes

    static func int(_ v: Int) -> ONNXFile.Attribute { .init(name: "", type: 2, i: v) }
    static func float(_ v: Float) -> ONNXFile.Attribute { .init(name: "", type: 1, f: v) }
    static func ints(_ v: [Int]) -> ONNXFile.Attribute { .init(name: "", type: 7, ints: v) }
    static func string(_ v: String) -> ONNXFile.Attribute { .init(name: "", type: 3, s: v) }

    // MARK: nodes and constants

    /// Converts one ONNX-semantics node (opset 13) producing `output`.
    mutating func op(_ type: String, _ inputs: [String], _ output: String, _ attributes: [String: ONNXFile.Attribute] = [:]) throws {
        counter += 1
        var attrs = attributes
        for k in attrs.keys { attrs[k]?.name = k }
        let node = ONNXFile.Node(name: "\(output)#\(counter)", opType: type, domain: "", inputs: inputs, outputs: [output],
                                 attributes: attrs, label: label)
        try b.convert(node)
    }

    /// A fresh tensor name derived from `base`.
    mutating func fresh(_ base: String) -> String { b.fresh(base) }

    /// Registers constant `c` under a fresh name derived from `base`.
    mutating func constant(_ base: String, _ c: ONNXConstant) -> String {
        let name = b.fresh(base)
        b.constants[name] = c
        return name
    }

    /// A constant of integers (shapes, axes, pads).
    mutating func ints(_ base: String, _ v: [Int]) -> String {
        constant(base, ONNXConstant(shape: [v.count], values: v.map(Double.init), isInteger: true))
    }

    /// A float scalar constant.
    mutating func scalar(_ base: String, _ v: Float) -> String {
        constant(base, ONNXConstant(shape: [], values: [Double(v)]))
    }

    /// The ONNX-layout shape of an activation or constant, or nil when `name` is undefined.
    func shape(_ name: String) -> [Int]? { b.shapes[name] ?? b.constants[name]?.shape }

    /// The shape of `name`, or an error naming the current layer.
    func need(_ name: String) throws -> [Int] {
        guard let s = shape(name) else {
            throw ImportError.invalid(file: file, place: label, expected: "input '\(name)' computed earlier", actual: "undefined")
        }
        return s
    }

    func isConstant(_ name: String) -> Bool { b.constants[name] != nil }

    func invalid(_ what: String, expected: String, actual: String) -> ImportError {
        .invalid(file: file, place: what.isEmpty ? label : "\(label) \(what)", expected: expected, actual: actual)
    }

    func refused(_ reason: String) -> ImportError { .refused(file: file, place: label, reason: reason) }

    // MARK: compositions used by both readers

    /// `global` ("GlobalAveragePool" or "GlobalMaxPool") of a rank-4 tensor over two axes other than the batch's
    /// (ONNX layout). The spatial axes (2, 3) of (N, C, H, W) are pooled directly; any other pair is first moved last
    /// by a transpose — what coremltools writes for a Keras (TensorFlow) network's global pooling is a transpose to
    /// (N, H, W, C), element-wise ops, then a mean over axes 1 and 2. `what` names the reduction in the refusal.
    mutating func spatialReduce(_ global: String, _ x: String, axes: Set<Int>, keepDims: Bool, _ output: String,
                                what: String) throws {
        let s = try need(x)
        guard s.count == 4, axes.count == 2, axes.allSatisfy({ (1..<4).contains($0) }) else {
            throw refused("\(what) over axes \(axes.sorted()) of \(s) (only two axes of a rank-4 tensor, not the batch's, are supported)")
        }
        let reduced = axes.sorted(), kept = (0..<4).filter { !axes.contains($0) }
        var source = x
        if reduced != [2, 3] {
            source = fresh(output + ".moved")
            try op("Transpose", [x], source, ["perm": Self.ints(kept + reduced)])
        }
        if keepDims && reduced == [2, 3] { return try op(global, [source], output) }
        let pooled = fresh(output + ".pooled")
        try op(global, [source], pooled)
        var shape = keepDims ? s : kept.map { s[$0] }
        for a in reduced where keepDims { shape[a] = 1 }
        shape[0] = 0
        try op("Reshape", [pooled, ints(output + ".shape", shape)], output)
    }

    /// y = f(x) for a `UnaryFunction`, straight into the IR (elementwise: no layout question).
    mutating func unary(_ f: UnaryFunction, _ x: String, _ output: String, alpha: Float = 0) throws {
        let s = try need(x)
        if isConstant(x) { throw refused("\(f.rawValue) of a constant") }
        b.emit(label.isEmpty ? output : "\(output).\(f.rawValue)", .unary, [x], output, Attributes(alpha: alpha, mode: f.rawValue))
        b.shapes[output] = s
    }

    /// PReLU, exactly: relu(x) + slope · (x − relu(x)); `slope` broadcasts against x (ONNX layout).
    mutating func prelu(_ x: String, slope: ONNXConstant, _ output: String) throws {
        let r = fresh(output + ".pos"), neg = fresh(output + ".neg"), scaled = fresh(output + ".scaled")
        try op("Relu", [x], r)
        try op("Sub", [x, r], neg)
        try op("Mul", [neg, constant(output + ".slope", slope)], scaled)
        try op("Add", [r, scaled], output)
    }

    /// Nearest-neighbour upsampling of (N, C, H, W) by integer factors, in the IR: (N, H, W, C) is viewed as
    /// (N, H, 1, W, 1, C), multiplied by ones (1, 1, sh, 1, sw, 1), and viewed as (N, H·sh, W·sw, C); a resize when
    /// the height or width is flexible.
    mutating func upsampleNearest(_ x: String, factors: [Int], _ output: String) throws {
        let s = try need(x)
        guard s.count == 4, factors.count == 2, factors.allSatisfy({ (1...ONNXGraphBuilder.maxWindow).contains($0) }) else {
            throw invalid("", expected: "a (N, C, H, W) input and integer scale factors ≥ 1", actual: "\(s), factors \(factors)")
        }
        let (sh, sw) = (factors[0], factors[1])
        if s[2] < 0 || s[3] < 0 {
            // A flexible height or width: the engine's nearest resize, sized per input (floor of i / factor).
            let scales = constant(output + ".scales", ONNXConstant(shape: [4], values: [1, 1, Double(sh), Double(sw)]))
            return try op("Resize", [x, "", scales], output, ["mode": Self.string("nearest"), "nearest_mode": Self.string("floor"),
                                                             "coordinate_transformation_mode": Self.string("asymmetric")])
        }
        let spread = fresh(output + ".spread"), tiled = fresh(output + ".tiled")
        b.emit(output + ".spread", .reshape, [x], spread, Attributes(shape: [0, s[2], 1, s[3], 1, s[1]]))
        let ones = b.addWeight(output + ".ones", shape: [1, 1, sh, 1, sw, 1], values: [Float](repeating: 1, count: sh * sw))
        b.emit(output + ".tile", .mul, [spread, ones], tiled)
        let h = s[2] < 0 ? -1 : s[2] * sh, w = s[3] < 0 ? -1 : s[3] * sw
        b.emit(output, .reshape, [tiled], output, Attributes(shape: [0, h, w, s[1]]))
        b.shapes[output] = [s[0], s[1], h, w]
    }
}
