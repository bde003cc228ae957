import Foundation

/// The gate functions of the recurrent ops (`lstm`, `gru`, `rnn`), by their ONNX names (`Attributes.activations`):
/// the one table the importer, the kernels and the writers look up. α and β are `Attributes.activationAlpha` /
/// `activationBeta`, one value per function.
public enum RecurrentFunction: String, CaseIterable, Sendable {
    case relu = "Relu", tanh = "Tanh", sigmoid = "Sigmoid"
    /// α·x + β
    case affine = "Affine"
    /// x if x ≥ 0 else α·x
    case leakyRelu = "LeakyRelu"
    /// x if x ≥ α else 0
    case thresholdedRelu = "ThresholdedRelu"
    /// α·tanh(β·x)
    case scaledTanh = "ScaledTanh"
    /// min(max(α·x + β, 0), 1)
    case hardSigmoid = "HardSigmoid"
    /// x if x ≥ 0 else α·(eˣ − 1)
    case elu = "Elu"
    /// x / (1 + |x|)
    case softsign = "Softsign"
    /// log(1 + eˣ)
    case softplus = "Softplus"

    /// The function named `name`, in any letter case (ONNX runtimes compare names case-insensitively).
    public init?(onnxName name: String) {
        guard let f = Self.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else { return nil }
        self = f
    }

    /// α when the file gives none (nil: the function takes no α, and takes none from `activation_alpha`).
    public var defaultAlpha: Float? {
        switch self {
        case .affine, .scaledTanh, .elu: return 1
        case .leakyRelu: return 0.01
        case .thresholdedRelu: return 1
        case .hardSigmoid: return 0.2
        default: return nil
        }
    }

    /// β when the file gives none (nil: the function takes no β).
    public var defaultBeta: Float? {
        switch self {
        case .affine: return 0
        case .scaledTanh: return 1
        case .hardSigmoid: return 0.5
        default: return nil
        }
    }

    /// The plain definition (the reference kernel).
    public func apply(_ x: Float, alpha a: Float, beta b: Float) -> Float {
        switch self {
        case .relu: return Swift.max(x, 0)
        case .tanh: return Foundation.tanh(x)
        case .sigmoid: return 1 / (1 + Foundation.exp(-x))
        case .affine: return a * x + b
        case .leakyRelu: return x >= 0 ? x : a * x
        case .thresholdedRelu: return x >= a ? x : 0
        case .scaledTanh: return a * Foundation.tanh(b * x)
        case .hardSigmoid: return Swift.min(Swift.max(a * x + b, 0), 1)
        case .elu: return x >= 0 ? x : a * (Foundation.exp(x) - 1)
        case .softsign: return x / (1 + Swift.abs(x))
        case .softplus: return x > 20 ? x : Foundation.log1p(Foundation.exp(x))
        }
    }
}
