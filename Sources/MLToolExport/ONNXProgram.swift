/// An ONNX graph as plain Swift values, built by `ONNXLowering` and packed by `ONNXWriter`.
struct ONNXProgram {
    enum AttributeValue {
        case int(Int)
        case float(Float)
        case ints([Int])
        case string(String)
        case floats([Float])
        case strings([String])
    }

    struct Node {
        var op: String
        var name: String
        var inputs: [String]
        var outputs: [String]
        var attributes: [(String, AttributeValue)]
        /// The operator set's domain: "" (ONNX's own) or "ai.onnx.ml".
        var domain = ""
    }

    /// An initializer: ONNX data type (1 float, 3 int8, 7 int64), dims and little-endian raw bytes.
    struct Initializer {
        var name: String
        var dataType: Int32
        var dims: [Int]
        var raw: [UInt8]
    }

    /// A graph input or output: name, dims (-1 is the free batch dimension "N", -2 an unknown one, -3 "K" the number of
    /// detected objects) and ONNX data type.
    struct Value {
        var name: String
        var dims: [Int]
        var elemType: Int32 = DataType.float
    }

    var nodes: [Node] = []
    var initializers: [Initializer] = []
    var inputs: [Value] = []
    var outputs: [Value] = []
    var metadata: [(String, String)] = []
    var graphName = "mltool"
    var docString = ""
    var modelVersion: Int64 = 1
    /// Operator sets besides ONNX's own (domain, version): "ai.onnx.ml" for tree ensembles.
    var extraOpsets: [(String, Int64)] = []

    /// The default-domain opset the lowering targets (per-axis DequantizeLinear and Softmax over one axis need 13).
    static let opset: Int64 = 13
    /// IR version 7 is the first that knows opset 13.
    static let irVersion: Int64 = 7

    enum DataType {
        static let float: Int32 = 1
        static let int8: Int32 = 3
        static let int64: Int32 = 7
        static let string: Int32 = 8
        static let bool: Int32 = 9
    }
}
