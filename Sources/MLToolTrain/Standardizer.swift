import MLToolCore

/// Per-feature standardisation z = (x − μ) / σ (population σ; a constant feature gets σ = 1), like scikit-learn's
/// `StandardScaler`. After fitting on standardised features, `fold(into:)` moves it into the weights so the shipped
/// head is a plain dense layer on raw features.
public struct Standardizer: Sendable, Equatable {
    public var mean: [Float]
    public var std: [Float]

    public init(mean: [Float], std: [Float]) { self.mean = mean; self.std = std }

    /// μ and σ of each column of `rows × cols` row-major `x` (accumulated in Double, in row order).
    public static func fit(x: [Float], rows: Int, cols: Int) throws -> Standardizer {
        try LogisticRegression.checkDense(x, rows: rows, cols: cols, what: "features")
        var sum = [Double](repeating: 0, count: cols)
        x.withUnsafeBufferPointer { p in
            sum.withUnsafeMutableBufferPointer { s in
                for r in 0..<rows { let row = r &* cols; for j in 0..<cols { s[j] += Double(p[row &+ j]) } }
            }
        }
        let mean = sum.map { $0 / Double(rows) }
        var sq = [Double](repeating: 0, count: cols)
        x.withUnsafeBufferPointer { p in
            sq.withUnsafeMutableBufferPointer { s in
                for r in 0..<rows {
                    let row = r &* cols
                    for j in 0..<cols { let e = Double(p[row &+ j]) - mean[j]; s[j] += e * e }
                }
            }
        }
        let std = sq.map { v -> Float in
            let s = Float((v / Double(rows)).squareRoot())
            return s > 0 && s.isFinite ? s : 1
        }
        return Standardizer(mean: mean.map(Float.init), std: std)
    }

    /// Standardises `rows × features` row-major `x` in place.
    public func apply(_ x: inout [Float], rows: Int) throws {
        let cols = mean.count
        guard cols >= 1, try x.count == Checked.mul(rows, cols) else {
            throw TrainError.shapeMismatch(what: "features to standardise",
                                           expected: "\(rows) rows × \(cols) columns", actual: "\(x.count) values")
        }
        let inv = std.map { 1 / $0 }
        x.withUnsafeMutableBufferPointer { p in
            for r in 0..<rows {
                let row = r &* cols
                for j in 0..<cols { p[row &+ j] = (p[row &+ j] - mean[j]) * inv[j] }
            }
        }
    }

    /// A standardised copy of `x`.
    public func applied(_ x: [Float], rows: Int) throws -> [Float] {
        var y = x
        try apply(&y, rows: rows)
        return y
    }

    /// The model on raw features equal to `model` on standardised ones: W′ = W / σ (row-wise), b′ = b − Σⱼ (μⱼ/σⱼ)·Wⱼ.
    public func fold(into model: LogisticRegressionModel) throws -> LogisticRegressionModel {
        var out = model
        let d = model.features, k = model.classes
        guard mean.count == d, std.count == d, model.weights.count == d * k, model.bias.count == k else {
            throw TrainError.shapeMismatch(what: "standardisation to fold",
                                           expected: "\(d) features (\(d)×\(k) weights)",
                                           actual: "\(mean.count) means, \(model.weights.count) weights")
        }
        var shift = [Double](repeating: 0, count: k)
        for j in 0..<d {
            let s = Double(std[j]), m = Double(mean[j])
            for c in 0..<k {
                let w = Double(model.weights[j * k + c])
                out.weights[j * k + c] = Float(w / s)
                shift[c] += m / s * w
            }
        }
        for c in 0..<k { out.bias[c] = Float(Double(model.bias[c]) - shift[c]) }
        return out
    }
}
