/// A Core ML NeuralNetworkClassifier (or a detector pipeline) as plain Swift values, built by `CoreMLLowering` and packed by `CoreMLWriter`.
/// Blobs are rank-5 Core ML tensors (C, H, W per image); an IR tensor of rank 2 (N, C) is a (C, 1, 1) blob.
struct CoreMLProgram {
    /// Weights as Core ML stores them.
    enum Weights {
        case float([Float])
        /// Little-endian IEEE half floats.
        case float16([UInt8])
        /// 8-bit unsigned codes: w = scale[c] · code + bias[c] along the first (output-channel) axis, or one pair.
        case linear(codes: [UInt8], scale: [Float], bias: [Float])
        /// `bits`-bit indices packed most significant bit first into a table of 2^bits floats.
        case lookupTable(bits: Int, packed: [UInt8], table: [Float])
    }

    enum Activation {
        case relu, sigmoid, tanh
        case leakyRelu(alpha: Float)
        case linear(alpha: Float, beta: Float)
        case sigmoidHard(alpha: Float, beta: Float)
    }

    enum Kind {
        /// pads: (top, left, bottom, right).
        case convolution(outputChannels: Int, kernelChannels: Int, groups: Int, kernel: [Int], stride: [Int],
                         dilation: [Int], pads: [Int], weights: Weights, bias: [Float]?)
        case innerProduct(inputChannels: Int, outputChannels: Int, weights: Weights, bias: [Float]?)
        case batchnorm(channels: Int, epsilon: Float, gamma: [Float], beta: [Float], mean: [Float], variance: [Float])
        case activation(Activation)
        case clip(min: Float, max: Float)
        /// type: 0 max, 1 average.
        case pooling(type: Int, kernel: [Int], stride: [Int], pads: [Int], excludePadding: Bool, global: Bool)
        case softmax
        /// mode: "constant", "reflect" or "edge"; pads: (top, left, bottom, right).
        case padding(mode: String, value: Float, pads: [Int])
        case add, multiply
        /// y = scale · x (+ bias); each of length 1 or C.
        case scale(scale: [Float], bias: [Float]?)
        /// y = x + bias; length 1 or C.
        case bias([Float])
        case flatten(channelLast: Bool)
        case concat
        /// (C, H, W) target shape, channel-first order.
        case reshape([Int])
        /// Output axis i is input axis axes[i] of (Seq, C, H, W).
        case permute([Int])
        /// A constant (C, H, W) blob.
        case loadConstant(shape: [Int], values: [Float])
    }

    /// The second stage of a detector pipeline: Core ML's NonMaximumSuppression model after the network, whose
    /// outputs `raw_confidence` (boxes × classes) and `raw_coordinates` (boxes × 4) it reads.
    struct DetectorStage {
        var boxes: Int
        var iouThreshold: Double
        var confidenceThreshold: Double
        var perClass: Bool
    }

    struct Layer {
        var name: String
        var inputs: [String]
        var outputs: [String]
        var kind: Kind
    }

    var layers: [Layer] = []
    var inputName = "image"
    var height = 0, width = 0
    /// 10 GRAYSCALE, 20 RGB, 30 BGR.
    var colorSpace: Int32 = 20
    var channelScale: Float = 1
    /// Per channel in the colour space's order (one value for grayscale).
    var channelBias: [Float] = [0, 0, 0]
    var labels: [String] = []
    var probabilityBlob = "classLabelProbs"
    var metadata: [(String, String)] = []
    var author = "", license = "", shortDescription = "", version = ""
    /// Set for an object detector: the model is written as a pipeline (network → NonMaximumSuppression).
    var detector: DetectorStage?

    /// Core ML 4 (iOS 14, macOS 11): the classic layers used here, quantized and half weights all load there.
    static let specificationVersion: Int32 = 5
    static let predictedFeatureName = "classLabel"
}
