import Foundation
import MLToolCore

/// The weights of one layer as stored under `model_weights/<layer>`, in `weight_names` order.
struct KerasLayerWeights {
    struct Entry {
        var name: String
        var shape: [Int]
        var data: [Float]
        /// "kernel" for "conv1/kernel:0" (Keras 2) and "conv1/kernel" (Keras 3).
        var key: String {
            let last = name.split(separator: "/").last.map(String.init) ?? name
            return last.split(separator: ":").first.map(String.init) ?? last
        }
    }
    var entries: [Entry] = []
}

/// One call of a layer being converted: its input tensor names (IR), the name its output must have, and the node
/// name to use.
struct KerasCall {
    var layer: KerasLayer
    var inputs: [String]
    var output: String
    var node: String
    /// Number operands of this call by position (see `KerasLayer.scalars`).
    var scalars: [Int: Float] = [:]
    var config: [String: Any] { layer.config }
}

/// What an `activation` config value turns into.
enum KerasActivation {
    case linear
    case fused(Activation)
    case softmax
    case logSoftmax
    /// An elementwise function the engine runs as its own `unary` node (gelu, elu, selu, softplus, ...).
    case unary(UnaryFunction, alpha: Float, beta: Float)
}

/// Accumulates the IR graph of a Keras model: nodes, weight tensors, and the shape of every tensor (batch and free
/// dimensions are -1). The per-layer converters (`KerasLayerConverters`) call its helpers.
struct KerasGraphBuilder {
    let file: String
    let kerasMajor: Int
    let weights: [String: KerasLayerWeights]
    let inputSize: (height: Int, width: Int)?
    private(set) var nodes: [Node] = []
    private(set) var tensors: [StoredTensor] = []
    private(set) var inputs: [GraphInput] = []
    private var shapes: [String: [Int]] = [:]

    init(file: String, kerasMajor: Int, weights: [String: KerasLayerWeights], inputSize: (height: Int, width: Int)?) {
        self.file = file; self.kerasMajor = kerasMajor; self.weights = weights; self.inputSize = inputSize
    }

    // MARK: - Tensors and nodes

    func shape(_ tensor: String) -> [Int] { shapes[tensor] ?? [] }

    func hasTensor(_ name: String) -> Bool { shapes[name] != nil }

    mutating func addInput(_ name: String, shape: [Int]) {
        inputs.append(GraphInput(name: name, shape: shape))
        shapes[name] = shape
    }

    /// Adds a node producing `output` with the given shape.
    mutating func emit(_ name: String, _ op: Op, _ inputs: [String], output: String, shape: [Int],
                       _ attributes: Attributes = Attributes()) {
        nodes.append(Node(name: name, op: op, inputs: inputs, outputs: [output], attributes: attributes))
        shapes[output] = shape
    }

    /// Adds a constant tensor (once; a shared layer's second call reuses it) and returns its name.
    @discardableResult
    mutating func constant(_ name: String, shape: [Int], data: [Float]) -> String {
        if shapes[name] == nil {
            tensors.append(StoredTensor(name: name, tensor: Tensor(shape: shape, data: data)))
            shapes[name] = shape
        }
        return name
    }

    /// The weight `key` ("kernel", "bias", "gamma", ...) of `layer`, checked against `expected` (-1 matches any
    /// size), or nil when the layer has no such weight.
    func weight(_ layer: String, _ key: String, expected: [Int]) throws -> KerasLayerWeights.Entry? {
        let matches = weights[layer]?.entries.filter { $0.key == key } ?? []
        guard let entry = matches.first else { return nil }
        guard matches.count == 1 else {
            throw ImportError.invalid(file: file, place: "layer '\(layer)' \(key)", expected: "one weight",
                                      actual: "\(matches.count) (\(matches.map(\.name).joined(separator: ", ")))")
        }
        let ok = entry.shape.count == expected.count
            && zip(entry.shape, expected).allSatisfy { $1 < 0 || $0 == $1 }
        guard ok else {
            throw ImportError.invalid(file: file, place: "layer '\(layer)' \(key)",
                                      expected: "shape \(Self.format(expected))", actual: Self.format(entry.shape))
        }
        return entry
    }

    /// Like `weight` but the weight must be there.
    func requiredWeight(_ layer: String, _ key: String, expected: [Int]) throws -> KerasLayerWeights.Entry {
        guard let w = try weight(layer, key, expected: expected) else {
            let have = weights[layer]?.entries.map(\.name) ?? []
            throw ImportError.invalid(file: file, place: "layer '\(layer)' \(key)", expected: "a weight in model_weights",
                                      actual: have.isEmpty ? "no weights" : "only \(have.joined(separator: ", "))")
        }
        return w
    }

    /// `a · b`, or an error naming the layer when it overflows (sizes come from the file).
    func mul(_ a: Int, _ b: Int, place: String) throws -> Int {
        let (r, o) = a.multipliedReportingOverflow(by: b)
        guard !o else { throw ImportError.invalid(file: file, place: "layer '\(place)'", expected: "sizes that fit in Int", actual: "\(a) × \(b)") }
        return r
    }

    /// `a + b`, or an error naming the layer when it overflows.
    func add(_ a: Int, _ b: Int, place: String) throws -> Int {
        let (r, o) = a.addingReportingOverflow(b)
        guard !o else { throw ImportError.invalid(file: file, place: "layer '\(place)'", expected: "sizes that fit in Int", actual: "\(a) + \(b)") }
        return r
    }

    /// The product of known dimensions, or -1 when one is unknown.
    func product(_ dims: ArraySlice<Int>, place: String) throws -> Int {
        if dims.contains(where: { $0 < 0 }) { return -1 }
        return try dims.reduce(1) { try mul($0, $1, place: place) }
    }

    static func format(_ shape: [Int]) -> String { "[" + shape.map { $0 < 0 ? "?" : "\($0)" }.joined(separator: ",") + "]" }

    // MARK: - Activations

    /// The activation named by a config value (a string, or Keras 3's {"class_name": "function", "config": name}).
    func activation(_ value: Any?) -> KerasActivation? { Self.activation(value, kerasMajor: kerasMajor) }

    /// See `activation(_:)`.
    static func activation(_ value: Any?, kerasMajor: Int) -> KerasActivation? {
        guard let value, !(value is NSNull) else { return .linear }
        if let dict = value as? [String: Any] {
            guard dict.string("module")?.hasPrefix("keras") ?? true, let name = dict.string("config") else { return nil }
            return Self.activation(named: name, kerasMajor: kerasMajor)
        }
        guard let name = value as? String else { return nil }
        return Self.activation(named: name, kerasMajor: kerasMajor)
    }

    /// The activations Keras names by string; hard_sigmoid changed between Keras 2 (0.2x + 0.5) and Keras 3
    /// (relu6(x + 3) / 6). The names only Keras 3 has are nil for Keras 2.
    static func activation(named name: String, kerasMajor: Int) -> KerasActivation? {
        switch name {
        case "linear": return .linear
        case "relu": return .fused(.relu)
        case "relu6": return .fused(.relu6)
        case "sigmoid": return .fused(Activation(op: .sigmoid))
        case "tanh": return .fused(Activation(op: .tanh))
        case "swish", "silu": return .fused(Activation(op: .swish))
        case "hard_sigmoid":
            return kerasMajor >= 3 ? .fused(Activation(op: .hardSigmoid, alpha: 1.0 / 6.0, beta: 0.5))
                                   : .fused(Activation(op: .hardSigmoid, alpha: 0.2, beta: 0.5))
        case "hard_silu", "hard_swish": return kerasMajor >= 3 ? .fused(Activation(op: .hardSwish)) : nil
        case "leaky_relu": return kerasMajor >= 3 ? .fused(Activation(op: .leakyRelu, alpha: 0.2)) : nil
        case "softmax": return .softmax
        case "log_softmax": return kerasMajor >= 3 ? .logSoftmax : nil
        default: return unaryActivations[name].map { .unary($0.function, alpha: $0.alpha, beta: $0.beta) }
        }
    }

    /// Keras's activations that are one `unary` function, with their parameters (Keras 2 and 3 agree on these:
    /// gelu is the exact, erf form; elu's alpha is 1; selu's alpha and scale are the SELU paper's constants).
    static let unaryActivations: [String: (function: UnaryFunction, alpha: Float, beta: Float)] = [
        "gelu": (.gelu, 0, 0), "elu": (.elu, 1, 0), "selu": (.selu, 1.6732632423543772, 1.0507009873554805),
        "softplus": (.softplus, 0, 0), "softsign": (.softsign, 0, 0), "exponential": (.exp, 0, 0), "mish": (.mish, 0, 0),
    ]

    /// Emits a standalone activation from `input` to `output` (identity when linear).
    mutating func emitActivation(_ activation: KerasActivation, node: String, input: String, output: String) {
        let shape = self.shape(input)
        switch activation {
        case .linear:
            emit(node, .identity, [input], output: output, shape: shape)
        case .fused(let a):
            emit(node, a.op, [input], output: output, shape: shape,
                 Attributes(min: a.min, max: a.max, alpha: a.alpha, beta: a.beta))
        case .softmax:
            emit(node, .softmax, [input], output: output, shape: shape, Attributes(axis: max(shape.count - 1, 0)))
        case .logSoftmax:
            emit(node, .logSoftmax, [input], output: output, shape: shape, Attributes(axis: max(shape.count - 1, 0)))
        case .unary(let f, let alpha, let beta):
            emit(node, .unary, [input], output: output, shape: shape, Attributes(alpha: alpha, beta: beta, mode: f.rawValue))
        }
    }

    /// Emits an op that can fuse an activation: fused ones go in its attributes, softmax follows as its own node.
    mutating func emitWithActivation(_ name: String, _ op: Op, _ inputs: [String], output: String, shape: [Int],
                                     _ attributes: Attributes, activation: KerasActivation) {
        var attributes = attributes
        switch activation {
        case .linear:
            emit(name, op, inputs, output: output, shape: shape, attributes)
        case .fused(let a):
            attributes.activation = a
            emit(name, op, inputs, output: output, shape: shape, attributes)
        case .softmax, .logSoftmax, .unary:
            // Not fusable: the op, then the activation as its own node.
            let pre = output + ".logits"
            emit(name, op, inputs, output: pre, shape: shape, attributes)
            let suffix = if case .softmax = activation { "softmax" } else { "activation" }
            emitActivation(activation, node: name + "." + suffix, input: pre, output: output)
        }
    }

    // MARK: - Spatial arithmetic (NHWC)

    /// Output size and (begin, end) padding along one spatial axis, as TensorFlow computes them: 'same' gives
    /// ceil(in / s) with total padding max((out − 1)·s + (k − 1)·d + 1 − in, 0), begin = total / 2, end = the rest.
    func window(_ input: Int, kernel: Int, stride: Int, dilation: Int, padding: String, place: String) throws
        -> (size: Int, begin: Int, end: Int) {
        let extent = try add(mul(kernel - 1, dilation, place: place), 1, place: place)
        if padding == "same" {
            if stride == 1 {
                return (input, (extent - 1) / 2, extent - 1 - (extent - 1) / 2)
            }
            guard input >= 0 else {
                throw ImportError.unsupported(file: file, ops: [.init(
                    op: "padding 'same' with stride \(stride) on a free input size (give --input-size)",
                    count: 1, firstNodes: [place])])
            }
            let out = input / stride + (input % stride == 0 ? 0 : 1)
            let total = max(try add(mul(out - 1, stride, place: place), extent, place: place) - input, 0)
            return (out, total / 2, total - total / 2)
        }
        guard input >= 0 else { return (-1, 0, 0) }
        guard input >= extent else {
            throw ImportError.invalid(file: file, place: "layer '\(place)'", expected: "an input of at least \(extent)",
                                      actual: "\(input)")
        }
        return ((input - extent) / stride + 1, 0, 0)
    }

    /// The broadcast of two shapes (numpy rules; -1 is unknown).
    func broadcast(_ a: [Int], _ b: [Int], place: String) throws -> [Int] {
        let n = max(a.count, b.count)
        let pa = [Int](repeating: 1, count: n - a.count) + a, pb = [Int](repeating: 1, count: n - b.count) + b
        return try zip(pa, pb).map { x, y in
            if x == y || y == 1 { return x }
            if x == 1 { return y }
            if x < 0 || y < 0 { return max(x, y) }
            throw ImportError.invalid(file: file, place: "layer '\(place)'", expected: "shapes that broadcast",
                                      actual: "\(Self.format(a)) and \(Self.format(b))")
        }
    }
}
