import COpenBLAS
import Foundation
import MLToolCore

/// A fitted softmax classifier: probabilities = softmax(x · weights + bias), a plain dense layer.
public struct LogisticRegressionModel: Sendable, Equatable {
    /// features × classes, row-major (IN, OUT) like a dense layer's kernel.
    public var weights: [Float]
    public var bias: [Float]
    public var classes: Int
    public var features: Int
    /// The L2 strength of the returned weights (the chosen one with `.auto`).
    public var chosenL2: Double
    /// Every iteration of every L2 value tried, in order.
    public var history: [IterationRecord]
    public var stopReason: StopReason
    /// Iterations of the returned fit.
    public var iterations: Int
    public var trainAccuracy: Double
    public var validationAccuracy: Double?
    public var validationLoss: Double?

    public init(weights: [Float], bias: [Float], classes: Int, features: Int, chosenL2: Double,
                history: [IterationRecord] = [], stopReason: StopReason = .gradientTolerance, iterations: Int = 0,
                trainAccuracy: Double = 0, validationAccuracy: Double? = nil, validationLoss: Double? = nil) {
        self.weights = weights; self.bias = bias; self.classes = classes; self.features = features
        self.chosenL2 = chosenL2; self.history = history; self.stopReason = stopReason
        self.iterations = iterations; self.trainAccuracy = trainAccuracy
        self.validationAccuracy = validationAccuracy; self.validationLoss = validationLoss
    }

    /// x · weights + bias for `rows` rows of `features` values: rows × classes.
    public func logits(_ x: [Float], rows: Int) throws -> [Float] {
        try LogisticRegression.checkDense(x, rows: rows, cols: features, what: "features")
        guard weights.count == features * classes, bias.count == classes else {
            throw TrainError.shapeMismatch(what: "model", expected: "\(features)×\(classes) weights, \(classes) bias",
                                           actual: "\(weights.count) weights, \(bias.count) bias")
        }
        var z = [Float](repeating: 0, count: rows * classes)
        x.withUnsafeBufferPointer { xp in
            weights.withUnsafeBufferPointer { wp in
                z.withUnsafeMutableBufferPointer { zp in
                    DenseRows(base: xp.baseAddress!, rows: rows, cols: features)
                        .forward(rows: 0..<rows, weights: wp.baseAddress!, classes: classes, into: zp.baseAddress!)
                }
            }
        }
        for r in 0..<rows { for c in 0..<classes { z[r * classes + c] += bias[c] } }
        return z
    }

    /// x · weights + bias for sparse rows (e.g. a text vectorizer's output): rows × classes.
    public func logits(sparse x: CSRMatrix) throws -> [Float] {
        guard x.cols == features, weights.count == features * classes, bias.count == classes else {
            throw TrainError.shapeMismatch(what: "sparse features", expected: "\(features) columns",
                                           actual: "\(x.cols) columns")
        }
        var z = [Float](repeating: 0, count: x.rows * classes)
        SparseRows.with(x) { rows in
            weights.withUnsafeBufferPointer { wp in
                z.withUnsafeMutableBufferPointer { zp in
                    rows.forward(rows: 0..<x.rows, weights: wp.baseAddress!, classes: classes, into: zp.baseAddress!)
                }
            }
        }
        for r in 0..<x.rows { for c in 0..<classes { z[r * classes + c] += bias[c] } }
        return z
    }

    /// Softmax probabilities, rows × classes (each row sums to 1).
    public func probabilities(_ x: [Float], rows: Int) throws -> [Float] {
        softmax(try logits(x, rows: rows), rows: rows)
    }

    /// Softmax probabilities of sparse rows, rows × classes.
    public func probabilities(sparse x: CSRMatrix) throws -> [Float] {
        softmax(try logits(sparse: x), rows: x.rows)
    }

    private func softmax(_ logits: [Float], rows: Int) -> [Float] {
        var z = logits
        // Each exponential once (kept in Double until the division), not once for the sum and again for the output.
        var e = [Double](repeating: 0, count: classes)
        for r in 0..<rows {
            let row = r * classes
            var m = -Float.infinity
            for c in 0..<classes { m = max(m, z[row + c]) }
            var s = 0.0
            for c in 0..<classes { e[c] = exp(Double(z[row + c] - m)); s += e[c] }
            for c in 0..<classes { z[row + c] = Float(e[c] / s) }
        }
        return z
    }
}
