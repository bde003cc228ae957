import MLToolCore

/// One TFLite operator being converted: its inputs and outputs (tensor indices; −1 for an absent optional input),
/// its options table and the IR names of its node and first output.
struct TFLiteCall {
    var op: TFLiteFile.Operator
    var index: Int
    var opName: String
    var node: String
    var output: String

    var inputs: [Int] { op.inputs }
    var outputs: [Int] { op.outputs }
    var options: FlatBuffer.Table? { op.options?.table }

    /// Input `k`, which must be present.
    func input(_ k: Int, _ b: TFLiteGraphBuilder) throws -> Int {
        guard k < inputs.count, inputs[k] >= 0 else {
            throw ImportError.invalid(file: b.file, place: "operator \(index) (\(opName)) '\(node)' input \(k)",
                                      expected: "a tensor", actual: k < inputs.count ? "absent (−1)" : "\(inputs.count) inputs")
        }
        _ = try b.tensor(inputs[k], "operator \(index) (\(opName)) input \(k)")
        return inputs[k]
    }

    /// Input `k`, or nil when absent.
    func optionalInput(_ k: Int, _ b: TFLiteGraphBuilder) throws -> Int? {
        guard k < inputs.count, inputs[k] >= 0 else { return nil }
        return try input(k, b)
    }

    func place(_ what: String) -> String { "operator \(index) (\(opName)) '\(node)' \(what)" }
}

/// The TFLite operator table: operator name ("CONV_2D", "CUSTOM:<code>") → converter. The one place the importer's
/// support is decided: `TFLiteImporter.checkSupported` lists every operator not here, with counts, in one error.
enum TFLiteOps {
    typealias Converter = @Sendable (inout TFLiteGraphBuilder, TFLiteCall) throws -> Void

    static let converters: [String: Converter] = [
        "CONV_2D": { try $0.conv($1) },
        "DEPTHWISE_CONV_2D": { try $0.depthwiseConv($1) },
        "FULLY_CONNECTED": { try $0.fullyConnected($1) },
        "CUSTOM:Convolution2DTransposeBias": { try $0.transposeConvBias($1) },
        "TRANSPOSE_CONV": { try $0.transposeConv($1) },
        "ADD": { try $0.binary($1, .add, optionsSlot: 0) },
        "SUB": { try $0.binary($1, .sub, optionsSlot: 0) },
        "MUL": { try $0.binary($1, .mul, optionsSlot: 0) },
        "DIV": { try $0.binary($1, .div, optionsSlot: 0) },
        "MAXIMUM": { try $0.binaryFunction($1, .max) },
        "MINIMUM": { try $0.binaryFunction($1, .min) },
        "PRELU": { try $0.binaryFunction($1, .prelu) },
        "MAX_POOL_2D": { try $0.pool($1, .maxPool) },
        "AVERAGE_POOL_2D": { try $0.pool($1, .avgPool) },
        "RESHAPE": { try $0.reshape($1) },
        "CONCATENATION": { try $0.concatenation($1) },
        "PAD": { try $0.pad($1) },
        "PADV2": { try $0.pad($1) },
        "MEAN": { try $0.mean($1) },
        "RESIZE_BILINEAR": { try $0.resize($1, bilinear: true) },
        "RESIZE_NEAREST_NEIGHBOR": { try $0.resize($1, bilinear: false) },
        "LOGISTIC": { try $0.unaryOp($1, Activation(op: .sigmoid)) },
        "TANH": { try $0.unaryOp($1, Activation(op: .tanh)) },
        "RELU": { try $0.unaryOp($1, .relu) },
        "RELU6": { try $0.unaryOp($1, .relu6) },
        "RELU_N1_TO_1": { try $0.unaryOp($1, Activation(op: .clip, min: -1, max: 1)) },
        "HARD_SWISH": { try $0.unaryOp($1, Activation(op: .hardSwish)) },
        "LEAKY_RELU": { try $0.leakyRelu($1) },
        "SOFTMAX": { try $0.softmax($1) },
        "TRANSPOSE": { try $0.transpose($1) },
        "SQUEEZE": { try $0.squeeze($1) },
        "STRIDED_SLICE": { try $0.stridedSlice($1) },
        "SLICE": { try $0.slice($1) },
        "DEQUANTIZE": { try $0.dequantize($1) },
        "QUANTIZE": { try $0.quantizeOp($1) },
        "DENSIFY": { try $0.densify($1) },
        "DEPTH_TO_SPACE": { try $0.depthToSpace($1) },
    ]
}
