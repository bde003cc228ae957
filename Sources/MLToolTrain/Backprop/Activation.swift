import Foundation

/// The activations the top of a mobile CNN and mltool's heads use, with their derivatives: one table
/// (`functions`) that the reference (any float type, through Double) and the Float kernels both read.
public enum TrainableActivation: String, CaseIterable, Sendable {
    case identity, relu, relu6, sigmoid, silu, hardSwish

    /// f and f′ at x.
    static func functions(_ a: TrainableActivation) -> (f: (Double) -> Double, df: (Double) -> Double) {
        func sigmoid(_ x: Double) -> Double { 1 / (1 + exp(-x)) }
        switch a {
        case .identity: return ({ $0 }, { _ in 1 })
        case .relu: return ({ max($0, 0) }, { $0 > 0 ? 1 : 0 })
        case .relu6: return ({ min(max($0, 0), 6) }, { $0 > 0 && $0 < 6 ? 1 : 0 })
        case .sigmoid: return (sigmoid, { sigmoid($0) * (1 - sigmoid($0)) })
        case .silu: return ({ $0 * sigmoid($0) }, { sigmoid($0) * (1 + $0 * (1 - sigmoid($0))) })
        case .hardSwish:
            return ({ $0 * min(max($0 + 3, 0), 6) / 6 }, { $0 <= -3 ? 0 : $0 >= 3 ? 1 : (2 * $0 + 3) / 6 })
        }
    }

    /// f applied to every element (the reference: computed in Double).
    public func forward<T: BinaryFloatingPoint>(_ x: [T]) -> [T] {
        let f = Self.functions(self).f
        return x.map { T(f(Double($0))) }
    }

    /// dx = dy · f′(x), x being the activation's input (the reference: computed in Double).
    public func backward<T: BinaryFloatingPoint>(x: [T], dy: [T]) throws -> [T] {
        try sameCount(x.count, dy.count)
        let df = Self.functions(self).df
        return zip(x, dy).map { T(Double($1) * df(Double($0))) }
    }

    /// dx = dy · f′(x) in Float, in place over dy: the training loop's kernel.
    public func backward(x: UnsafeBufferPointer<Float>, dy: UnsafeMutableBufferPointer<Float>) throws {
        try sameCount(x.count, dy.count)
        switch self {
        case .identity: return
        case .relu: for i in 0..<x.count where !(x[i] > 0) { dy[i] = 0 }
        case .relu6: for i in 0..<x.count where !(x[i] > 0 && x[i] < 6) { dy[i] = 0 }
        case .sigmoid, .silu, .hardSwish:
            let df = Self.functions(self).df
            for i in 0..<x.count { dy[i] *= Float(df(Double(x[i]))) }
        }
    }

    private func sameCount(_ x: Int, _ dy: Int) throws {
        guard x == dy else { throw TrainError.shapeMismatch(what: "\(rawValue) backward: dy", expected: "\(x) elements", actual: "\(dy)") }
    }
}
