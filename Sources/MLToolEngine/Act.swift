import CMLToolKernels
import Foundation
import MLToolCore

/// A fused activation resolved to the C kernels' code and two parameters.
struct Act: Sendable {
    var code: Int32
    var p0: Float = 0
    var p1: Float = 0

    static let none = Act(code: Int32(MLK_ACT_NONE))

    /// Resolves `op` with its parameters; nil when `op` is not an activation.
    init?(op: Op, min: Float?, max: Float?, alpha: Float?, beta: Float?) {
        switch op {
        case .relu: code = Int32(MLK_ACT_RELU)
        case .clip: code = Int32(MLK_ACT_CLIP); p0 = min ?? -.infinity; p1 = max ?? .infinity
        case .leakyRelu: code = Int32(MLK_ACT_LEAKY); p0 = alpha ?? 0.01
        case .sigmoid: code = Int32(MLK_ACT_SIGMOID)
        case .hardSigmoid: code = Int32(MLK_ACT_HARDSIGMOID); p0 = alpha ?? 0.2; p1 = beta ?? 0.5
        case .hardSwish: code = Int32(MLK_ACT_HARDSWISH)
        case .swish: code = Int32(MLK_ACT_SWISH)
        case .tanh: code = Int32(MLK_ACT_TANH)
        case .identity: code = Int32(MLK_ACT_NONE)
        default: return nil
        }
    }

    init(code: Int32) { self.code = code }

    init?(_ a: Activation?) {
        guard let a else { self = .none; return }
        self.init(op: a.op, min: a.min, max: a.max, alpha: a.alpha, beta: a.beta)
    }

    var isNone: Bool { code == Int32(MLK_ACT_NONE) }

    /// The plain definition, used by the reference kernels.
    func apply(_ x: Float) -> Float {
        switch Int(code) {
        case Int(MLK_ACT_RELU): return Swift.max(x, 0)
        case Int(MLK_ACT_CLIP): return Swift.min(Swift.max(x, p0), p1)
        case Int(MLK_ACT_LEAKY): return x < 0 ? p0 * x : x
        case Int(MLK_ACT_SIGMOID): return 1 / (1 + exp(-x))
        case Int(MLK_ACT_HARDSIGMOID): return Swift.max(0, Swift.min(1, p0 * x + p1))
        case Int(MLK_ACT_HARDSWISH): return x * Swift.min(Swift.max(x + 3, 0), 6) / 6
        case Int(MLK_ACT_SWISH): return x / (1 + exp(-x))
        case Int(MLK_ACT_TANH): return tanh(x)
        case Int(MLK_ACT_GELU): return UnaryFunction.gelu.apply(x, alpha: 0)
        default: return x
        }
    }
}
