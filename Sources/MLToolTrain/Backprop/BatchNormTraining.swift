/// Batch normalisation over the channels of NHWC activations (the last axis; every other axis is a sample), trained:
///
///     x̂ = (x − μ) / √(σ² + ε),  y = γ·x̂ + β
///
/// In `.batch` mode μ and σ² are the batch's mean and biased variance per channel, and the gradient flows through
/// them: dx = γ/(M·√(σ² + ε)) · (M·dy − Σdy − x̂·Σ(dy·x̂)) over the M samples. In `.frozen` mode μ and σ² are the
/// running statistics, constants: dx = dy·γ/√(σ² + ε). Both give dγ = Σ dy·x̂ and dβ = Σ dy. One generic
/// implementation serves as the kernel (Float) and as its own reference (Double, for central differences): the
/// loops are plain per-channel sums in a fixed order.
public struct BatchNormTraining<T: BinaryFloatingPoint & Sendable>: Sendable {
    public enum Statistics: Sendable { case batch, frozen }
    public var gamma: [T], beta: [T]
    public var runningMean: [T], runningVariance: [T]
    public var epsilon: T = 1e-5
    /// The weight of the new batch in the running statistics (PyTorch's momentum 0.1).
    public var momentum: T = 0.1

    public init(gamma: [T], beta: [T], runningMean: [T], runningVariance: [T]) throws {
        let c = gamma.count
        guard beta.count == c, runningMean.count == c, runningVariance.count == c, c > 0 else {
            throw TrainError.shapeMismatch(what: "batch norm parameters", expected: "γ, β, mean and variance of one length > 0",
                                           actual: "\([gamma.count, beta.count, runningMean.count, runningVariance.count])")
        }
        (self.gamma, self.beta, self.runningMean, self.runningVariance) = (gamma, beta, runningMean, runningVariance)
    }

    /// What the forward pass keeps for the backward one.
    public struct Saved: Sendable {
        public let normalized: [T]
        public let inverseStd: [T]
        public let statistics: Statistics
    }

    /// y for x (samples × C, row-major). In `.batch` mode the running statistics move toward the batch's (the
    /// variance's unbiased form, as PyTorch keeps it).
    public mutating func forward(_ x: [T], statistics: Statistics) throws -> (y: [T], saved: Saved) {
        let c = gamma.count
        guard x.count % c == 0, x.count > 0 else {
            throw TrainError.shapeMismatch(what: "batch norm input", expected: "a multiple of \(c) elements", actual: "\(x.count)")
        }
        let m = x.count / c
        var mean = runningMean, variance = runningVariance
        if statistics == .batch {
            mean = columnSums(x, c) { v, _ in v }.map { $0 / T(m) }
            variance = columnSums(x, c) { v, i in (v - mean[i % c]) * (v - mean[i % c]) }.map { $0 / T(m) }
            let unbiased = m > 1 ? T(m) / T(m - 1) : 1
            for k in 0..<c {
                runningMean[k] += momentum * (mean[k] - runningMean[k])
                runningVariance[k] += momentum * (variance[k] * unbiased - runningVariance[k])
            }
        }
        let inverseStd = variance.map { 1 / ($0 + epsilon).squareRoot() }
        var normalized = x, y = x
        for i in 0..<x.count {
            let k = i % c
            normalized[i] = (x[i] - mean[k]) * inverseStd[k]
            y[i] = gamma[k] * normalized[i] + beta[k]
        }
        return (y, Saved(normalized: normalized, inverseStd: inverseStd, statistics: statistics))
    }

    /// dx, dγ and dβ of Σ y·dy.
    public func backward(_ saved: Saved, dy: [T]) throws -> (dx: [T], dGamma: [T], dBeta: [T]) {
        let c = gamma.count
        guard dy.count == saved.normalized.count else {
            throw TrainError.shapeMismatch(what: "batch norm dy", expected: "\(saved.normalized.count) elements", actual: "\(dy.count)")
        }
        let m = dy.count / c
        let dBeta = columnSums(dy, c) { v, _ in v }
        let dGamma = columnSums(dy, c) { v, i in v * saved.normalized[i] }
        var dx = dy
        for i in 0..<dy.count {
            let k = i % c
            let scale = gamma[k] * saved.inverseStd[k]
            dx[i] = saved.statistics == .frozen
                ? dy[i] * scale
                : scale / T(m) * (T(m) * dy[i] - dBeta[k] - saved.normalized[i] * dGamma[k])
        }
        return (dx, dGamma, dBeta)
    }

    /// Σ over the samples of `value(x[i], i)` per channel (i mod c), in order.
    private func columnSums(_ x: [T], _ c: Int, _ value: (T, Int) -> T) -> [T] {
        var sums = [T](repeating: 0, count: c)
        for i in 0..<x.count { sums[i % c] += value(x[i], i) }
        return sums
    }
}
