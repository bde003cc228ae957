/// A TensorFlow Lite model in memory, as `TFLiteLowering` builds it and `TFLiteWriter` packs it (schema version 3,
/// tensorflow/compiler/mlir/lite/schema/schema.fbs): one subgraph of tensors and operators over a list of buffers,
/// buffer 0 the empty one every computed tensor points at.
struct TFLiteProgram {
    /// Schema numbers (BuiltinOperator) of the operators the lowering emits.
    enum Operator: Int32 {
        case add = 0, averagePool2D = 1, concatenation = 2, conv2D = 3, depthwiseConv2D = 4, dequantize = 6
        case fullyConnected = 9, logistic = 14, maxPool2D = 17, mul = 18, relu = 19, reluN1To1 = 20, relu6 = 21
        case reshape = 22, resizeBilinear = 23, softmax = 25, tanh = 28, pad = 34, transpose = 39, mean = 40
        case sub = 41, div = 42, maximum = 55, minimum = 57, padV2 = 60, resizeNearestNeighbor = 97, leakyRelu = 98
        case mirrorPad = 100, hardSwish = 117, reduceMax = 82
        case floor = 8, exp = 47, neg = 59, sin = 66, log = 73, sqrt = 75, rsqrt = 76, abs = 101, ceil = 104, cos = 108
        case elu = 111, round = 116
        // The detector's decoder and NMS (TFLiteDetection).
        case gather = 36, topKV2 = 48, argMax = 56, less = 58, greater = 61, slice = 65, equal = 71, sum = 74
        case nonMaxSuppressionV4 = 120, selectV2 = 123
    }

    /// Schema numbers (BuiltinOptions union) of the options tables the lowering writes.
    enum OptionsType: UInt8 {
        case conv2D = 1, depthwiseConv2D = 2, pool2D = 5, fullyConnected = 8, softmax = 9, concatenation = 10, add = 11
        case resizeBilinear = 15, reshape = 17, mul = 21, pad = 22, transpose = 26, reducer = 27, sub = 28, div = 29
        case maximumMinimum = 39, padV2 = 43, resizeNearestNeighbor = 74, leakyRelu = 75, mirrorPad = 77
        case hardSwish = 91
        case gather = 23, topKV2 = 34, argMax = 40, less = 41, greater = 44, slice = 48, equal = 53, nonMaxSuppressionV4 = 95
        case selectV2 = 98
    }

    /// TensorType.
    enum ElementType: Int8 {
        case float32 = 0, float16 = 1, int32 = 2, bool = 6, int8 = 9
    }

    /// ActivationFunctionType, fused into conv, pooling, fully connected and elementwise operators.
    enum FusedActivation: Int8 {
        case none = 0, relu = 1, reluN1To1 = 2, relu6 = 3, tanh = 4
    }

    /// Padding.
    enum Padding: Int8 {
        case same = 0, valid = 1
    }

    /// One field of an options table, by its vtable slot (the schema's field order).
    enum Field {
        case int8(Int, Int8)
        case int32(Int, Int32, default: Int32)
        case float(Int, Float)
        case bool(Int, Bool)
        case ints(Int, [Int32])
    }

    struct Tensor {
        var name: String
        /// Batch 1 where the batch is free.
        var shape: [Int]
        /// The shape with −1 for a free dimension (the batch of the input and what follows from it); nil when none.
        var signature: [Int]?
        var type: ElementType = .float32
        /// Index into `buffers`; 0 for a computed tensor.
        var buffer = 0
        /// An int8 constant's QuantizationParameters.
        var quantization: Quantization?
    }

    /// QuantizationParameters: real = scales[c] · (q − zeroPoints[c]), c the index along `axis`
    /// (quantized_dimension; one scale and zero point for the whole tensor, axis 0).
    struct Quantization {
        var scales: [Float]
        var zeroPoints: [Int64]
        var axis: Int
    }

    struct Node {
        var op: Operator
        var inputs: [Int]
        var outputs: [Int]
        var optionsType: OptionsType?
        var options: [Field] = []
    }

    var tensors: [Tensor] = []
    /// Constant data; buffer 0 is the empty sentinel.
    var buffers: [[UInt8]] = [[]]
    var nodes: [Node] = []
    var inputs: [Int] = []
    var outputs: [Int] = []
    var description = ""
    /// Model.metadata: a name and the index of its buffer.
    var metadata: [(name: String, buffer: Int)] = []

    /// Appends a constant buffer; returns its index.
    mutating func buffer(_ bytes: [UInt8]) -> Int {
        buffers.append(bytes)
        return buffers.count - 1
    }
}
