import MLToolCore
import MLToolTrain

/// Linear and logistic regression on a table's derived columns (docs/FORMAT.md 4.5, "Linear models"): numeric
/// features standardised with the training rows' mean and (population) standard deviation, a missing value as the
/// mean plus a missing indicator column, categorical features one-hot (an unseen category: all zeros).
///
/// The objective is Σᵢ vᵢ · lossᵢ + α/2 · ‖W‖² (bias not penalised): scikit-learn's `LogisticRegression(C = 1/α)`
/// for classes (fitted by `MLToolTrain.LogisticRegression`'s L-BFGS) and `Ridge(alpha = α)` for a regression (solved
/// exactly, by Cholesky in binary64). Same rows, same bytes.
public struct LinearTrainer: Sendable {
    public var l2: Double
    /// L-BFGS iterations at most, and the gradient tolerance on the mean loss (classification only).
    public var maxIterations = 2000
    public var tolerance = 1e-7

    public init(l2: Double = 1) { self.l2 = l2 }

    public func train(schema: TabularSchema, train m: FeatureMatrix, targets: [Float], weights: [Float]? = nil) throws -> TreeEnsemble {
        let features = schema.features
        var means = [Float](repeating: 0, count: features.count), scales = [Float](repeating: 1, count: features.count)
        for (f, feature) in features.enumerated() where feature.kind == .numeric {
            let present = m.columns[f].filter { !$0.isNaN }.map(Double.init)
            guard !present.isEmpty else { continue }
            let mean = present.reduce(0, +) / Double(present.count)
            let variance = present.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(present.count)
            means[f] = Float(mean)
            // A constant column keeps scale 1 (scikit-learn's StandardScaler does the same).
            if variance > 0 { scales[f] = Float(1 / variance.squareRoot()) }
        }
        var terms = LinearTerms(means: means, scales: scales, weights: [])
        let x = terms.derive(m, features: features), n = m.rowCount, d = LinearTerms.offsets(features)[features.count]
        let bias: [Float]
        if schema.objective == .regression {
            (terms.weights, bias) = try ridge(x, rows: n, cols: d, targets: targets)
        } else {
            (terms.weights, bias) = try logistic(x, rows: n, cols: d, targets: targets, weights: weights, classes: schema.labels.count)
        }
        var e = TreeEnsemble(objective: schema.objective, target: schema.target, labels: schema.labels, features: features, baseScores: bias)
        e.learner = .linear
        e.linear = terms
        return e
    }

    /// Multinomial logistic regression; for two classes its weight difference, which is the binomial fit at half the
    /// multinomial penalty (the two-class optimum has W₀ = −W₁), so λ is doubled to keep α.
    func logistic(_ x: [Double], rows n: Int, cols d: Int, targets: [Float], weights: [Float]?, classes: Int) throws -> ([Float], [Float]) {
        let total = weights.map { $0.reduce(0.0) { $0 + Double($1) } } ?? Double(n)
        var o = LogisticRegressionOptions(l2: .fixed((classes == 2 ? 2 : 1) * l2 / total), maxIterations: maxIterations,
                                          tolerance: tolerance, lossTolerance: 1e-12, earlyStoppingPatience: nil)
        o.selection = .logLoss
        let fit = try LogisticRegression.fit(x: x.map { Float($0) }, rows: n, cols: d, labels: targets.map { Int($0) }, classes: classes,
                                             validation: nil, options: o, sampleWeights: weights, progress: nil)
        guard classes == 2 else { return (fit.weights, fit.bias) }
        return ((0..<d).map { fit.weights[$0 * 2 + 1] - fit.weights[$0 * 2] }, [fit.bias[1] - fit.bias[0]])
    }

    /// Ridge: (XcᵀXc + αI) w = Xcᵀ(y − ȳ) on the centred columns, b = ȳ − x̄ · w.
    func ridge(_ x: [Double], rows n: Int, cols d: Int, targets: [Float]) throws -> ([Float], [Float]) {
        var mean = [Double](repeating: 0, count: d), yMean = 0.0
        for r in 0..<n {
            yMean += Double(targets[r])
            for c in 0..<d { mean[c] += x[r * d + c] }
        }
        yMean /= Double(n)
        for c in 0..<d { mean[c] /= Double(n) }
        var a = [Double](repeating: 0, count: d * d), rhs = [Double](repeating: 0, count: d), row = [Double](repeating: 0, count: d)
        for r in 0..<n {
            for c in 0..<d { row[c] = x[r * d + c] - mean[c] }
            let y = Double(targets[r]) - yMean
            for i in 0..<d {
                rhs[i] += row[i] * y
                for j in 0...i { a[i * d + j] += row[i] * row[j] }
            }
        }
        for i in 0..<d { a[i * d + i] += l2 }
        let w = try Self.solveCholesky(a, rhs, size: d)
        var b = yMean
        for c in 0..<d { b -= mean[c] * w[c] }
        return (w.map { Float($0) }, [Float(b)])
    }

    /// Solves A w = b for a symmetric positive definite A (its lower triangle, row-major d × d).
    static func solveCholesky(_ a: [Double], _ b: [Double], size d: Int) throws -> [Double] {
        var l = [Double](repeating: 0, count: d * d)
        for i in 0..<d {
            for j in 0...i {
                var s = a[i * d + j]
                for k in 0..<j { s -= l[i * d + k] * l[j * d + k] }
                if i == j {
                    guard s > 0, s.isFinite else {
                        // Cannot happen for α > 0 (the option refuses less): XcᵀXc + αI is positive definite.
                        throw TabularError.invalidModel(file: "training rows", what: "ridge normal equations", expected: "positive definite",
                                                        actual: "pivot \(s) at derived column \(i)")
                    }
                    l[i * d + i] = s.squareRoot()
                } else {
                    l[i * d + j] = s / l[j * d + j]
                }
            }
        }
        var y = b
        for i in 0..<d {
            for k in 0..<i { y[i] -= l[i * d + k] * y[k] }
            y[i] /= l[i * d + i]
        }
        for i in stride(from: d - 1, through: 0, by: -1) {
            for k in (i + 1)..<d { y[i] -= l[k * d + i] * y[k] }
            y[i] /= l[i * d + i]
        }
        return y
    }
}
