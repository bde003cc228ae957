import Foundation

/// The update rules for fine-tuning, over parameter tensors held as Float arrays, each with its own state. The
/// definitions are PyTorch's (torch.optim.SGD with momentum and dampening 0; torch.optim.AdamW with decoupled weight
/// decay), so a step can be checked against torch on the same numbers.
public struct Optimizer: Sendable {
    public enum Rule: Sendable, Equatable {
        /// v ← μ·v + (g + λ·θ);  θ ← θ − η·v
        case sgd(momentum: Double)
        /// m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;  θ ← θ·(1 − η·λ) − η/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + ε)
        case adamW(beta1: Double, beta2: Double, epsilon: Double)
    }

    public let rule: Rule
    public var weightDecay: Double
    /// Gradients are scaled so that their global L2 norm is at most this (nil: no clipping).
    public var clipNorm: Double?
    private var first: [[Float]] = [], second: [[Float]] = []
    public private(set) var steps = 0

    public init(_ rule: Rule, weightDecay: Double = 0, clipNorm: Double? = nil) {
        (self.rule, self.weightDecay, self.clipNorm) = (rule, weightDecay, clipNorm)
    }

    /// One step at learning rate `rate` over every parameter with its gradient (same order every call).
    public mutating func step(_ parameters: inout [[Float]], gradients: [[Float]], rate: Double) throws {
        guard parameters.count == gradients.count, zip(parameters, gradients).allSatisfy({ $0.count == $1.count }) else {
            throw TrainError.shapeMismatch(what: "optimizer step", expected: "one gradient per parameter, same sizes",
                                           actual: "\(parameters.map(\.count)) vs \(gradients.map(\.count))")
        }
        if first.isEmpty {
            first = parameters.map { [Float](repeating: 0, count: $0.count) }
            second = first
        }
        steps += 1
        let scale = clipScale(gradients)
        for p in parameters.indices {
            update(&parameters[p], gradients[p], &first[p], &second[p], rate: rate, gradientScale: scale)
        }
    }

    private func update(_ theta: inout [Float], _ g: [Float], _ m: inout [Float], _ v: inout [Float], rate: Double,
                        gradientScale: Double) {
        let (lr, wd, gs) = (Float(rate), Float(weightDecay), Float(gradientScale))
        switch rule {
        case let .sgd(momentum):
            let mu = Float(momentum)
            for i in theta.indices {
                m[i] = mu * m[i] + (g[i] * gs + wd * theta[i])
                theta[i] -= lr * m[i]
            }
        case let .adamW(beta1, beta2, epsilon):
            // In PyTorch's order of operations (m as a lerp, the bias corrections as scalars), so that a step can be
            // held to torch's within a few ulps.
            // 1 − β taken in Double: in Float, 1 − 0.9 is 0.100000024.
            let (b2, eps) = (Float(beta2), Float(epsilon))
            let (a1, a2) = (Float(1 - beta1), Float(1 - beta2))
            let stepSize = Float(rate / (1 - pow(beta1, Double(steps))))
            let root2 = Float((1 - pow(beta2, Double(steps))).squareRoot())
            let decay = Float(1 - rate * weightDecay)
            for i in theta.indices {
                let gi = g[i] * gs
                m[i] += a1 * (gi - m[i])
                v[i] = v[i] * b2 + a2 * gi * gi
                theta[i] *= decay
                theta[i] += -stepSize * (m[i] / (v[i].squareRoot() / root2 + eps))
            }
        }
    }

    /// The factor that brings the gradients' global norm down to `clipNorm` (1 when it is already within).
    private func clipScale(_ gradients: [[Float]]) -> Double {
        guard let clipNorm else { return 1 }
        let norm = gradients.reduce(0.0) { s, g in g.reduce(s) { $0 + Double($1) * Double($1) } }.squareRoot()
        return min(clipNorm / (norm + 1e-6), 1)   // torch.nn.utils.clip_grad_norm_
    }
}

/// Learning-rate schedules over `total` steps, peak rate `peak`: step t in 0..<total.
public enum LearningRateSchedule: String, CaseIterable, Sendable {
    case constant
    /// η·(1 + cos(π·t/total))/2
    case cosine
    /// PyTorch's OneCycleLR (pct_start 0.3, cosine annealing, div_factor 25, final_div_factor 10⁴): from peak/25 up
    /// to peak over the first 30 % of the steps, then down to peak/(25·10⁴) at the last step.
    case oneCycle

    public func rate(step t: Int, total: Int, peak: Double) -> Double {
        func anneal(_ from: Double, _ to: Double, _ pct: Double) -> Double { to + (from - to) / 2 * (cos(.pi * pct) + 1) }
        switch self {
        case .constant: return peak
        case .cosine: return total > 0 ? anneal(peak, 0, min(max(Double(t) / Double(total), 0), 1)) : peak
        case .oneCycle:
            let start = peak / 25, end = start / 1e4
            let warmEnd = 0.3 * Double(total) - 1, last = Double(total - 1)
            let s = Double(t)
            if s <= warmEnd { return anneal(start, peak, warmEnd > 0 ? s / warmEnd : 1) }
            return anneal(peak, end, last > warmEnd ? min((s - warmEnd) / (last - warmEnd), 1) : 1)
        }
    }
}
