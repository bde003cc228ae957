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
        x.withUnsafeBufferPointer { addSums($0.baseAddress!, count: rows, into: &sum) }
        let mean = sum.map { $0 / Double(rows) }
        var sq = [Double](repeating: 0, count: cols)
        x.withUnsafeBufferPointer { addSquares($0.baseAddress!, count: rows, mean: mean, into: &sq) }
        return Standardizer(mean: mean.map(Float.init), std: deviations(sq, rows: rows))
    }

    /// μ and σ of the first `rows` rows of a row file, read a block at a time: the same values, in the same order,
    /// as `fit(x:rows:cols:)` on those rows in memory (two passes over the file). Throws on a non-finite value.
    public static func fit(file: FeatureRowFile, rows: Int) throws -> Standardizer {
        guard rows >= 1, rows <= file.rows else {
            throw TrainError.shapeMismatch(what: "features", expected: "1...\(file.rows) rows", actual: "\(rows)")
        }
        let cols = file.cols
        var sum = [Double](repeating: 0, count: cols)
        try file.forEachBlock(0..<rows) { block, r in
            for i in 0..<(r.count &* cols) where !block[i].isFinite {
                throw TrainError.nonFiniteValue(what: "features", row: r.lowerBound &+ i / cols, column: i % cols,
                                                value: "\(block[i])")
            }
            addSums(block, count: r.count, into: &sum)
            return false
        }
        let mean = sum.map { $0 / Double(rows) }
        var sq = [Double](repeating: 0, count: cols)
        try file.forEachBlock(0..<rows) { block, r in
            addSquares(block, count: r.count, mean: mean, into: &sq)
            return false
        }
        return Standardizer(mean: mean.map(Float.init), std: deviations(sq, rows: rows))
    }

    /// Adds each column of `count` rows to `sum`, row after row.
    private static func addSums(_ x: UnsafePointer<Float>, count: Int, into sum: inout [Double]) {
        let cols = sum.count
        sum.withUnsafeMutableBufferPointer { s in
            for r in 0..<count { let row = r &* cols; for j in 0..<cols { s[j] += Double(x[row &+ j]) } }
        }
    }

    /// Adds each column's squared deviation from `mean` of `count` rows to `sq`, row after row.
    private static func addSquares(_ x: UnsafePointer<Float>, count: Int, mean: [Double], into sq: inout [Double]) {
        let cols = sq.count
        sq.withUnsafeMutableBufferPointer { s in
            for r in 0..<count {
                let row = r &* cols
                for j in 0..<cols { let e = Double(x[row &+ j]) - mean[j]; s[j] += e * e }
            }
        }
    }

    /// Population σ from summed squares; a constant (or degenerate) column gets 1.
    private static func deviations(_ sq: [Double], rows: Int) -> [Float] {
        sq.map { v -> Float in
            let s = Float((v / Double(rows)).squareRoot())
            return s > 0 && s.isFinite ? s : 1
        }
    }

    /// Standardises `rows × features` row-major `x` in place.
    public func apply(_ x: inout [Float], rows: Int) throws {
        let cols = mean.count
        guard cols >= 1, try x.count == Checked.mul(rows, cols) else {
            throw TrainError.shapeMismatch(what: "features to standardise",
                                           expected: "\(rows) rows × \(cols) columns", actual: "\(x.count) values")
        }
        x.withUnsafeMutableBufferPointer { standardize($0.baseAddress!, count: rows) }
    }

    /// Standardises rows `r` of a row file in place, a block at a time (the same arithmetic as `apply`). Throws on
    /// a value that is not finite afterwards, as the in-memory fit refuses it.
    public func apply(file: FeatureRowFile, rows r: Range<Int>) throws {
        guard file.cols == mean.count else {
            throw TrainError.shapeMismatch(what: "features to standardise", expected: "\(mean.count) columns",
                                           actual: "\(file.cols)")
        }
        let cols = file.cols
        try file.forEachBlock(r) { block, b in
            standardize(block, count: b.count)
            for i in 0..<(b.count &* cols) where !block[i].isFinite {
                throw TrainError.nonFiniteValue(what: "standardised features", row: b.lowerBound &+ i / cols,
                                                column: i % cols, value: "\(block[i])")
            }
            return true
        }
    }

    /// z = (x − μ) · (1/σ) on `count` rows.
    private func standardize(_ x: UnsafeMutablePointer<Float>, count: Int) {
        let cols = mean.count
        let inv = std.map { 1 / $0 }
        for r in 0..<count {
            let row = r &* cols
            for j in 0..<cols { x[row &+ j] = (x[row &+ j] - mean[j]) * inv[j] }
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
