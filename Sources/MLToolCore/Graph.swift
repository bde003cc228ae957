import Foundation

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
/// - matMul: a (…,M,K), b (K,N), bias? (N) → (…,M,N)  (b and the bias constants)
/// - batchMatMul: a (…,M,K), b (…,K,N) → (…,M,N), both of rank ≥ 2, the batch axes broadcast (numpy rules); plain
///   row-major operands (the ONNX importer gives it rank-4 tensors in NCHW order)
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
/// - unary: elementwise y = f(x) for the function named by `mode` (`UnaryFunction` lists them, with the parameters
///   alpha / beta each takes)
/// - pow: x^y elementwise, numpy broadcasting (as add)
/// - resize: (N,H,W,C) → (N,OH,OW,C) [shape (OH, OW), scales (sh, sw): the factors the coordinate transform divides
///   by, mode "nearest"|"linear"|"cubic", coordinateMode "half_pixel"|"half_pixel_symmetric"|"pytorch_half_pixel"|
///   "align_corners"|"asymmetric", nearestMode "round_prefer_floor"|"round_prefer_ceil"|"floor"|"ceil", alpha (the
///   cubic coefficient, default −0.75), excludeOutside, antialias]: ONNX Resize on the two spatial axes; taps that
///   fall outside the input take the edge value (or weight 0, renormalised, with excludeOutside)
/// - slice: [axes, starts, steps, counts]: along each listed axis take `counts[i]` elements starting at
///   `starts[i]` (0 ≤ start < size when counts[i] > 0) every `steps[i]` (≠ 0, negative runs backwards); other axes
///   whole
/// - convTranspose: x (N,H,W,C), w (C,KH,KW,OC/groups), b? (OC) → (N,OH,OW,OC), OH = (H−1)·sh + (KH−1)·dh + 1 − top −
///   bottom + outputPadding[0] (OW alike) [strides, dilations, pads (top,left,bottom,right), outputPadding? (extra rows
///   and columns at the end, default 0, 0), groups, activation]: the adjoint of conv, each input pixel scattering
///   x·w into the output window it reaches (ONNX ConvTranspose)
/// - layerNorm: x, scale? (S), bias? (S) → x's shape [axis (default −1), epsilon (default 1e-5)]: each slice over the
///   trailing axes from `axis` (S values) becomes (x − mean) / √(variance + epsilon) · scale + bias, the variance
///   the mean of (x − mean)² (ONNX LayerNormalization; Instance/GroupNormalization import as it); with mode "mean"
///   or "invStdDev" the output is instead that statistic of each slice, x's shape with the trailing axes 1
/// - topK: [axis, k, largest (default true), mode "values"|"indices"]: the k largest (or smallest) values along
///   `axis`, sorted (ties: lower index first), or their indices as float32 values
/// - binary: a, b → f(a, b) elementwise with numpy broadcasting (as add) for the function named by `mode`
///   (`BinaryFunction` lists them); comparisons and logic give 1 or 0
/// - where: condition, a, b → a where condition ≠ 0, else b; numpy broadcasting of all three
/// - reduce: x → x with each axis in `axes` reduced to size 1 by the function named by `mode` (`ReduceFunction`);
///   no `axes`: every axis. The importer reshapes away the reduced axes when the source drops them.
/// - argMax: [axis, largest (default true; false: the minimum), selectLastIndex] → x with `axis` of size 1, holding
///   the index of the first (or last) extreme value along it as a float32 value; NaN counts as the extreme
/// - logSoftmax, hardmax [axis]: log(softmax(x)); 1 at the first maximum along `axis`, 0 elsewhere
/// - gather: data, indices → data with axis `axis` replaced by the indices' shape, taking data[…, i, …] for each
///   index i (float32 values holding integers; negative ones count from the end; one that is not an integer in
///   range gives NaN)
/// - lstm, gru, rnn: ONNX's LSTM / GRU / RNN, one node per requested output (a node has one output; the nodes of one
///   ONNX layer share its weights and the engine runs only those whose output is needed).
///   Inputs: x (T, B, I) time-major; w (D, G·H, I), r (D, G·H, H), b (D, 2·G·H) (the W then the R biases), and for
///   lstm p (D, 3·H) (peepholes i, o, f) — model tensors in ONNX's gate order (lstm i, o, f, c; gru z, r, h; rnn one
///   gate: G = 4, 3, 1), D = 2 for "bidirectional" (forward first) else 1; then the initial states listed in
///   `initialStates` ("h", "c": each (D, B, H), zeros when absent), in that order.
///   Output by `mode`: "y" (T, B, H, D) — ONNX's Y (T, D, B, H) in NHWC — or "h" / "c": the last state (D, B, H).
///   [direction "forward"|"reverse"|"bidirectional", activations (ONNX names, per direction: lstm f, g, h; gru f,
///   g; rnn f) with activationAlpha / activationBeta (one value each, defaults resolved), clip (gate pre-activations
///   clamped to ±clip), inputForget (lstm: f = 1 − i), linearBeforeReset (gru), sequenceLengths (one per batch
///   item: later steps give zeros in y, the state stops at the item's last step)]
/// - shape: x → its dimensions as a 1-D tensor of floats, in the order of `perm` (the axes read; all when absent)
/// - expand: x, target (a plan-time value) → x broadcast with the target shape (numpy rules)
/// - plan-time values (docs/FORMAT.md): what follows from `shape` outputs and constants alone; the engine computes
///   them when it plans a set of input shapes. reshape may take its target as a second input of that kind; slice
///   with `ends` resolves ONNX starts/ends per input size (they may be its second and third inputs, of that kind);
///   conv and pools with `autoPad` their pads; resize with `scales` and no `shape` its size
/// - ifElse: condition (one element), a, b → a when the condition ≠ 0, else b: the outputs of an ONNX If whose
///   condition is not known at import (both branches are inlined; a plan-time condition runs only the branch it
///   takes, whose shape may differ from the other's; else both run and share one shape). An If whose condition
///   folds at import inlines only the taken branch and leaves no ifElse. Without b, the condition must be a
///   plan-time value and non-zero (a variant of the graph converted for one branch only: `ONNXGraphBuilder+Variants`)
/// - quantize: x → q = clamp(round_half_even(x / scale[c]) + zeroPoint[c], min, max), c the index along `axis` (one
///   scale and zero point for the whole tensor when `axis` is absent), the integer codes as float32 values (ONNX
///   QuantizeLinear; x / scale in float32, NaN gives the zero point); mode "values": the codes dequantized again,
///   scale[c] · (q − zeroPoint[c]) (a QuantizeLinear → DequantizeLinear pair) [axis, quantScales, quantZeroPoints,
///   min, max (the code range, e.g. 0, 255 for uint8), mode "codes" (default) | "values"]; mode "dynamic": ONNX
///   DynamicQuantizeLinear → DequantizeLinear, one uint8 scale and zero point computed from the whole input when it
///   runs (onnxruntime's rule, docs/FORMAT.md), no quantScales [min 0, max 255]
/// - dequantize: q → (q − zeroPoint[c]) · scale[c] in float32 (ONNX DequantizeLinear) [axis, quantScales,
///   quantZeroPoints]
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
    /// The source's element type when it is an integer or bool ("int64", "int32", "uint8", "bool", …): the engine
    /// carries the values as float32, and refuses one that is not an integer of that type (docs/FORMAT.md).
    public var elementType: String?
    /// The source's names of free dimensions, one per `shape` entry ("" for an unnamed or fixed one); nil when none
    /// is named (docs/FORMAT.md).
    public var dimensionNames: [String]?
    /// The source's bounds of each dimension, [min, max] (max −1: unbounded), one per `shape` entry; nil when it
    /// sets none (docs/FORMAT.md; checked by `sizeError`).
    public var dimensionRanges: [[Int]]?
    /// The only shapes the source accepts (−1 entries match any size); nil when it lists none.
    public var enumeratedShapes: [[Int]]?
    public init(name: String, shape: [Int], elementType: String? = nil) {
        self.name = name; self.shape = shape; self.elementType = elementType
    }

    /// The range of each integer element type an input may declare (bool: 0 and 1).
    public static let integerRanges: [String: ClosedRange<Double>] = [
        "bool": 0...1, "int8": -128...127, "uint8": 0...255, "int16": -32_768...32_767, "uint16": 0...65_535,
        "int32": -2_147_483_648...2_147_483_647, "uint32": 0...4_294_967_295,
        "int64": -0x1p63...0x1.fffffffffffffp62, "uint64": 0...0x1.fffffffffffffp63,   // the doubles within range
    ]
}

extension Attributes {
    /// Whether `node`'s settings follow from the input size at run time (docs/FORMAT.md, plan-time values): automatic
    /// pads, ONNX slice bounds, a resize sized by its scales, a reshape whose target is an input.
    public func sizedAtRunTime(_ node: Node) -> Bool {
        autoPad != nil || ends != nil || (node.op == .resize && shape == nil) || (node.op == .reshape && node.inputs.count > 1)
    }
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
    case unary
    case pow, resize, slice, topK
    // Elementwise and reduction breadth (ONNX import): see the doc comment of `Graph`.
    case binary, `where`, reduce, argMax, logSoftmax, hardmax, gather
    case lstm, gru, rnn   // recurrent layers
    case convTranspose, layerNorm, batchMatMul   // layers
    case shape, expand   // shapes computed from the input shapes
    case ifElse   // control flow (ONNX If)
    case quantize, dequantize   // quantized ONNX: linear (de)quantization of computed tensors
}

/// The elementwise functions of the `unary` op, by name (`Attributes.mode`): the one table every reader, kernel and
/// writer looks up. α and β are `Attributes.alpha` / `beta`.
public enum UnaryFunction: String, CaseIterable, Sendable {
    /// x if x > α else 0
    case thresholdedRelu
    /// x if x > 0 else α·(eˣ − 1)
    case elu
    /// log(1 + eˣ)
    case softplus
    /// x / (1 + |x|)
    case softsign
    case exp, log, abs
    /// √x
    case sqrt
    /// 1 / √(x + α)
    case rsqrt
    /// 1 / (x + α)
    case reciprocal
    /// xᵅ
    case pow
    /// max(x, α)
    case threshold
    case neg, floor, ceil
    /// to the nearest integer, halves to even
    case round
    /// −1, 0 or 1 (NaN stays NaN)
    case sign
    case sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh
    case erf
    /// x·Φ(x) (the exact form, through erf)
    case gelu
    /// ½x(1 + tanh(√(2/π)(x + 0.044715x³)))
    case geluTanh
    /// x·tanh(softplus(x))
    case mish
    /// β·x if x > 0 else β·α·(eˣ − 1) (ONNX Selu: α alpha, β gamma)
    case selu
    /// max(0, x) + min(0, α·(exp(x/α) − 1))
    case celu
    /// 1 if x = 0 else 0 (logical not)
    case not
    /// the integer part, toward zero (a cast to an integer type)
    case trunc
    /// 1 if x ≠ 0 else 0 (a cast to bool); NaN gives 1
    case nonZero
    /// 1 if x is NaN else 0
    case isNaN
    /// 1 if x is ±∞ else 0
    case isInf

    /// The plain definition (the reference kernel).
    public func apply(_ x: Float, alpha a: Float, beta b: Float = 0) -> Float {
        switch self {
        case .thresholdedRelu: return x > a ? x : 0
        case .elu: return x > 0 ? x : a * (Foundation.exp(x) - 1)
        case .softplus: return x > 20 ? x : Foundation.log1p(Foundation.exp(x))
        case .softsign: return x / (1 + Swift.abs(x))
        case .exp: return Foundation.exp(x)
        case .log: return Foundation.log(x)
        case .abs: return Swift.abs(x)
        case .sqrt: return x.squareRoot()
        case .rsqrt: return 1 / (x + a).squareRoot()
        case .reciprocal: return 1 / (x + a)
        case .pow: return Foundation.pow(x, a)
        case .threshold: return Swift.max(x, a)
        case .neg: return -x
        case .floor: return x.rounded(.down)
        case .ceil: return x.rounded(.up)
        case .round: return x.rounded(.toNearestOrEven)
        case .sign: return x > 0 ? 1 : x < 0 ? -1 : x.isNaN ? x : 0
        case .sin: return Foundation.sin(x)
        case .cos: return Foundation.cos(x)
        case .tan: return Foundation.tan(x)
        case .asin: return Foundation.asin(x)
        case .acos: return Foundation.acos(x)
        case .atan: return Foundation.atan(x)
        case .sinh: return Foundation.sinh(x)
        case .cosh: return Foundation.cosh(x)
        case .asinh: return Foundation.asinh(x)
        case .acosh: return Foundation.acosh(x)
        case .atanh: return Foundation.atanh(x)
        case .erf: return Foundation.erf(x)
        case .gelu: return 0.5 * x * (1 + Foundation.erf(x * 0.70710678118654752))
        case .geluTanh:
            return 0.5 * x * (1 + Foundation.tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)))
        case .mish: return x * Foundation.tanh(UnaryFunction.softplus.apply(x, alpha: 0))
        case .selu: return x > 0 ? b * x : b * a * (Foundation.exp(x) - 1)
        case .celu: return Swift.max(0, x) + Swift.min(0, a * (Foundation.exp(x / a) - 1))
        case .not: return x == 0 ? 1 : 0
        case .trunc: return x.rounded(.towardZero)
        case .nonZero: return x != 0 ? 1 : 0
        case .isNaN: return x.isNaN ? 1 : 0
        case .isInf: return x.isInfinite ? 1 : 0
        }
    }
}

/// The elementwise functions of the `binary` op, by name (`Attributes.mode`). Comparisons and logic give 1 or 0 (and
/// read any non-zero value as true).
public enum BinaryFunction: String, CaseIterable, Sendable {
    /// max(a, b); NaN if either is NaN (ONNX Max)
    case max
    /// min(a, b); NaN if either is NaN (ONNX Min)
    case min
    /// a − b·⌊a / b⌋: the sign of b (ONNX Mod, fmod = 0; integer operands)
    case mod
    /// a − b·trunc(a / b): the sign of a (C fmod; ONNX Mod, fmod = 1)
    case fmod
    case equal, less, lessOrEqual, greater, greaterOrEqual
    case and, or, xor
    /// a if a ≥ 0 else b·a (ONNX PRelu: b the slope)
    case prelu

    /// The plain definition (the reference kernel).
    @inline(__always)
    public func apply(_ a: Float, _ b: Float) -> Float {
        switch self {
        case .max: return a.isNaN || b.isNaN ? .nan : Swift.max(a, b)
        case .min: return a.isNaN || b.isNaN ? .nan : Swift.min(a, b)
        case .mod:
            if b == 0 { return .nan }
            let r = Foundation.fmod(a, b)
            return r != 0 && (r < 0) != (b < 0) ? r + b : r
        case .fmod: return Foundation.fmod(a, b)
        case .equal: return a == b ? 1 : 0
        case .less: return a < b ? 1 : 0
        case .lessOrEqual: return a <= b ? 1 : 0
        case .greater: return a > b ? 1 : 0
        case .greaterOrEqual: return a >= b ? 1 : 0
        case .and: return a != 0 && b != 0 ? 1 : 0
        case .or: return a != 0 || b != 0 ? 1 : 0
        case .xor: return (a != 0) != (b != 0) ? 1 : 0
        case .prelu: return a < 0 ? b * a : a
        }
    }
}

/// The reductions of the `reduce` op, by name (`Attributes.mode`).
public enum ReduceFunction: String, CaseIterable, Sendable {
    case sum, mean, max, min, prod
    /// Σ|x|
    case l1
    /// √(Σx²)
    case l2
    /// log Σx
    case logSum
    /// log Σeˣ (computed from the maximum, so it does not overflow)
    case logSumExp
    /// Σx²
    case sumSquare
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
    // resize
    public var scales: [Float]?
    public var coordinateMode: String?
    public var nearestMode: String?
    public var excludeOutside: Bool?
    public var antialias: Bool?
    // slice
    public var starts: [Int]?
    public var steps: [Int]?
    public var counts: [Int]?
    // topK
    public var k: Int?
    public var largest: Bool?
    // argMax
    public var selectLastIndex: Bool?
    // lstm, gru, rnn (`mode` selects the output)
    public var direction: String?
    public var activations: [String]?
    public var activationAlpha: [Float]?
    public var activationBeta: [Float]?
    public var clip: Float?
    public var inputForget: Bool?
    public var linearBeforeReset: Bool?
    public var sequenceLengths: [Int]?
    public var initialStates: [String]?
    // convTranspose
    public var outputPadding: [Int]?
    // slice: ONNX-style ends (starts and ends resolved per input size; `counts` absent)
    public var ends: [Int]?
    // conv, maxPool, avgPool: "SAME_UPPER" | "SAME_LOWER" (pads resolved per input size)
    public var autoPad: String?
    // quantize, dequantize: per tensor (one value) or per index along `axis`
    public var quantScales: [Float]?
    public var quantZeroPoints: [Int]?

    public init(kernel: [Int]? = nil, strides: [Int]? = nil, dilations: [Int]? = nil, pads: [Int]? = nil,
                groups: Int? = nil, activation: Activation? = nil, axis: Int? = nil, axes: [Int]? = nil,
                perm: [Int]? = nil, shape: [Int]? = nil, min: Float? = nil, max: Float? = nil, alpha: Float? = nil,
                beta: Float? = nil, epsilon: Float? = nil, ceilMode: Bool? = nil, countIncludePad: Bool? = nil,
                value: Float? = nil, mode: String? = nil, scales: [Float]? = nil, coordinateMode: String? = nil,
                nearestMode: String? = nil, excludeOutside: Bool? = nil, antialias: Bool? = nil, starts: [Int]? = nil,
                steps: [Int]? = nil, counts: [Int]? = nil, k: Int? = nil, largest: Bool? = nil) {
        self.kernel = kernel; self.strides = strides; self.dilations = dilations; self.pads = pads
        self.groups = groups; self.activation = activation; self.axis = axis; self.axes = axes; self.perm = perm
        self.shape = shape; self.min = min; self.max = max; self.alpha = alpha; self.beta = beta
        self.epsilon = epsilon; self.ceilMode = ceilMode; self.countIncludePad = countIncludePad
        self.value = value; self.mode = mode
        self.scales = scales; self.coordinateMode = coordinateMode; self.nearestMode = nearestMode
        self.excludeOutside = excludeOutside; self.antialias = antialias
        self.starts = starts; self.steps = steps; self.counts = counts; self.k = k; self.largest = largest
    }
}
