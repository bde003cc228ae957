import MLToolCore

/// A linear model's terms (docs/FORMAT.md 4.5, "Linear models"): each feature's mean and scale, and the weights of the
/// D derived columns (a numeric feature's standardised value and missing indicator, a categorical feature's one-hot
/// columns). The scores are the base scores plus the derived row times the weights.
public struct LinearTerms: Sendable, Equatable {
    /// Per feature (F): the mean and scale of a numeric one (0 and 1 for a categorical one).
    public var means: [Float]
    public var scales: [Float]
    /// D × K, row-major: the weight of derived column d for score k.
    public var weights: [Float]

    public init(means: [Float], scales: [Float], weights: [Float]) {
        self.means = means; self.scales = scales; self.weights = weights
    }

    /// Where each feature's derived columns start, then D.
    public static func offsets(_ features: [TabularConfig.Feature]) -> [Int] {
        var out = [0]
        for f in features { out.append(out[out.count - 1] + (f.kind == .numeric ? 2 : f.categories?.count ?? 0)) }
        return out
    }

    /// The derived columns of every row of `m`, n × D row-major (binary64).
    public func derive(_ m: FeatureMatrix, features: [TabularConfig.Feature]) -> [Double] {
        let offsets = Self.offsets(features), d = offsets[features.count], n = m.rowCount
        var x = [Double](repeating: 0, count: n * d)
        for (f, feature) in features.enumerated() {
            let column = m.columns[f], at = offsets[f]
            let mean = Double(means[f]), scale = Double(scales[f]), count = offsets[f + 1] - at
            for r in 0..<n {
                let v = column[r]
                if feature.kind == .numeric {
                    if v.isNaN { x[r * d + at + 1] = 1 } else { x[r * d + at] = (Double(v) - mean) * scale }
                } else if let c = Int(exactly: v), c >= 0, c < count {
                    x[r * d + at + c] = 1
                }
            }
        }
        return x
    }

    /// Raw scores [row · K + k]: `base[k]` plus the derived row times column k of the weights, summed in binary64 in
    /// column order and rounded once.
    public func scores(_ m: FeatureMatrix, features: [TabularConfig.Feature], base: [Float]) -> [Float] {
        let k = base.count, x = derive(m, features: features), d = weights.count / max(k, 1)
        var out = [Float](repeating: 0, count: m.rowCount * k)
        for r in 0..<m.rowCount {
            for j in 0..<k {
                var s = Double(base[j])
                for c in 0..<d { s += x[r * d + c] * Double(weights[c * k + j]) }
                out[r * k + j] = Float(s)
            }
        }
        return out
    }
}
