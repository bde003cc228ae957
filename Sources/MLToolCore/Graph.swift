/// The network IR shared by importers, the engine, quantization and exporters.
///
/// Layout convention: every rank-4 activation is NHWC (N, H, W, C). Importers translate their source layout into it
/// (ONNX is NCHW: they remap axes and insert `transpose` before a reshape whose element order depends on layout).
/// Tensors of other ranks are plain row-major. Weights are referenced by name from the model's tensor table.
///
/// Op semantics (inputs → outputs; attributes in brackets):
/// - conv: x (N,H,W,C), w (KH,KW,C/groups,OC), b? (OC) → (N,OH,OW,OC)
///   [strides (sh,sw), dilations (dh,dw), pads (top,left,bottom,right), groups, activation]
/// - dense: x (N,…) flattened to (N,IN), w (IN,OUT), b? (OUT) → (N,OUT) [activation]
/// - matMul: a (…,M,K), b (K,N) → (…,M,N)  (b a constant)
/// - batchNorm: x, scale, bias, mean, variance (C, along the last axis) → x [epsilon]
/// - relu, sigmoid, tanh, hardSwish, swish, identity: elementwise
/// - clip [min, max]; leakyRelu [alpha]; hardSigmoid [alpha, beta]: y = max(0, min(1, alpha·x + beta))
/// - softmax [axis]
/// - add, sub, mul, div: numpy broadcasting, output shape the broadcast of both [activation]
/// - maxPool, avgPool: (N,H,W,C) [kernel (kh,kw), strides, dilations? (default 1, 1), pads, ceilMode, countIncludePad]
/// - globalAvgPool, globalMaxPool: (N,H,W,C) → (N,1,1,C)
/// - concat [axis]; reshape [shape: 0 copies the input dim, -1 is inferred]; flatten [axis] → 2-D;
///   transpose [perm]; squeeze [axes]; unsqueeze [axes]
/// - pad [pads: per axis begin…, end… (2·rank values), mode "constant"|"reflect"|"edge", value]
public struct Graph: Codable, Equatable, Sendable {
    public var inputs: [GraphInput]
    public var outputs: [String]
    public var nodes: [Node]
    /// The layout of the source framework ("nchw" for ONNX, "nhwc" for Keras): `mltool run` takes and gives
    /// rank-4 tensors in it.
    public var sourceLayout: String

    public init(inputs: [GraphInput], outputs: [String], nodes: [Node], sourceLayout: String = "nhwc") {
        self.inputs = inputs; self.outputs = outputs; self.nodes = nodes; self.sourceLayout = sourceLayout
    }
}

/// A graph input: its name and shape in IR layout; -1 marks a free dimension (the batch).
public struct GraphInput: Codable, Equatable, Sendable {
    public var name: String
    public var shape: [Int]
    public init(name: String, shape: [Int]) { self.name = name; self.shape = shape }
}

public struct Node: Codable, Equatable, Sendable {
    public var name: String
    public var op: Op
    public var inputs: [String]
    public var outputs: [String]
    public var attributes: Attributes

    public init(name: String, op: Op, inputs: [String], outputs: [String], attributes: Attributes = Attributes()) {
        self.name = name; self.op = op; self.inputs = inputs; self.outputs = outputs; self.attributes = attributes
    }
}

/// The engine's operators. Raw values are stored in model files: never rename one.
public enum Op: String, Codable, CaseIterable, Sendable {
    case conv, dense, matMul, batchNorm
    case relu, clip, leakyRelu, sigmoid, hardSigmoid, hardSwish, swish, tanh, softmax, identity
    case add, sub, mul, div
    case maxPool, avgPool, globalAvgPool, globalMaxPool
    case concat, reshape, flatten, transpose, squeeze, unsqueeze, pad
}

/// An activation fused into the op that produces a tensor.
public struct Activation: Codable, Equatable, Sendable {
    public var op: Op          // relu, clip, leakyRelu, sigmoid, hardSigmoid, hardSwish, swish, tanh
    public var min: Float?
    public var max: Float?
    public var alpha: Float?
    public var beta: Float?
    public init(op: Op, min: Float? = nil, max: Float? = nil, alpha: Float? = nil, beta: Float? = nil) {
        self.op = op; self.min = min; self.max = max; self.alpha = alpha; self.beta = beta
    }
    public static let relu = Activation(op: .relu)
    public static let relu6 = Activation(op: .clip, min: 0, max: 6)
}

/// Every attribute any op takes; each op reads the ones listed in `Graph`'s documentation.
public struct Attributes: Codable, Equatable, Sendable {
    public var kernel: [Int]?
    public var strides: [Int]?
    public var dilations: [Int]?
    public var pads: [Int]?
    public var groups: Int?
    public var activation: Activation?
    public var axis: Int?
    public var axes: [Int]?
    public var perm: [Int]?
    public var shape: [Int]?
    public var min: Float?
    public var max: Float?
    public var alpha: Float?
    public var beta: Float?
    public var epsilon: Float?
    public var ceilMode: Bool?
    public var countIncludePad: Bool?
    public var value: Float?
    public var mode: String?

    public init(kernel: [Int]? = nil, strides: [Int]? = nil, dilations: [Int]? = nil, pads: [Int]? = nil,
                groups: Int? = nil, activation: Activation? = nil, axis: Int? = nil, axes: [Int]? = nil,
                perm: [Int]? = nil, shape: [Int]? = nil, min: Float? = nil, max: Float? = nil, alpha: Float? = nil,
                beta: Float? = nil, epsilon: Float? = nil, ceilMode: Bool? = nil, countIncludePad: Bool? = nil,
                value: Float? = nil, mode: String? = nil) {
        self.kernel = kernel; self.strides = strides; self.dilations = dilations; self.pads = pads
        self.groups = groups; self.activation = activation; self.axis = axis; self.axes = axes; self.perm = perm
        self.shape = shape; self.min = min; self.max = max; self.alpha = alpha; self.beta = beta
        self.epsilon = epsilon; self.ceilMode = ceilMode; self.countIncludePad = countIncludePad
        self.value = value; self.mode = mode
    }
}
