import Foundation
import MLToolCore

/// Histogram gradient boosting (the algorithm of LightGBM, written from its description): quantile bins, trees grown
/// leaf-wise (the leaf whose best split gains most is split next) up to `leaves` leaves, each leaf's histogram built
/// from its rows or, for the larger child, as its parent's less its sibling's; numeric splits learn where missing
/// values go, categorical splits order the categories by gradient / (hessian + cat_smooth) and take a prefix.
/// Deterministic: the same data and parameters give the same trees for any thread count.
public struct BoostedTreeTrainer: Sendable {
    public var parameters: BoostedTreeParameters

    public init(parameters: BoostedTreeParameters = BoostedTreeParameters()) { self.parameters = parameters }

    /// What training made and measured.
    public struct Result: Sendable {
        public var ensemble: TreeEnsemble
        /// The rounds kept (the best on validation), and the loss after each round on validation (when given).
        public var rounds: Int
        public var validationLoss: [Double]
    }

    /// Trains on `train` with `targets` (class index, or the value for a regression), stopping early on
    /// `validation`. The schema's categorical features keep at most `maxBins` categories (the most frequent; the
    /// others read as missing).
    public func train(schema: TabularSchema, train: FeatureMatrix, targets: [Float],
                      validation: (matrix: FeatureMatrix, targets: [Float])? = nil) -> Result {
        let p = parameters
        var features = schema.features
        for i in features.indices where features[i].kind == .categorical {
            features[i].categories = Array((features[i].categories ?? []).prefix(p.maxBins))
        }
        let categorical = features.map { $0.kind == .categorical }
        let bins = FeatureBins(matrix: train, categorical: categorical, maxBins: p.maxBins)
        let binned = bins.binned(train)
        var offsets = [0]
        for c in bins.counts { offsets.append(offsets.last! + c) }
        let n = train.rowCount, k = schema.objective == .multiclass ? schema.labels.count : 1
        let threads = p.threads > 0 ? p.threads : ProcessInfo.processInfo.activeProcessorCount

        // Starting scores: the log-odds of the positive class, the log prior of each class, or the mean.
        var base = [Float](repeating: 0, count: k)
        switch schema.objective {
        case .regression: base[0] = Float(targets.reduce(0.0) { $0 + Double($1) } / Double(max(n, 1)))
        case .binary:
            let pos = Double(targets.filter { $0 == 1 }.count) / Double(max(n, 1))
            base[0] = Float(log(max(pos, 1e-15) / max(1 - pos, 1e-15)))
        case .multiclass:
            var counts = [Double](repeating: 0, count: k)
            for t in targets { counts[Int(t)] += 1 }
            for j in 0..<k { base[j] = Float(log(max(counts[j] / Double(max(n, 1)), 1e-15))) }
        }
        var ensemble = TreeEnsemble(objective: schema.objective, target: schema.target, labels: schema.labels,
                                    features: features, baseScores: base)
        var scores = [Float](repeating: 0, count: n * k)
        for r in 0..<n { for j in 0..<k { scores[r * k + j] = base[j] } }
        var vScores = validation.map { v in (0..<(v.matrix.rowCount * k)).map { base[$0 % k] } } ?? []
        var g = [Float](repeating: 0, count: n * k), h = g
        var losses: [Double] = [], best = Double.infinity, bestRound = 0
        var nodeGains: [Double] = []
        var grower = TreeGrower(parameters: p, bins: bins, binned: binned, rowCount: n, offsets: offsets, threads: threads)

        for round in 0..<p.iterations {
            Self.gradients(schema.objective, k: k, scores: scores, targets: targets, g: &g, h: &h)
            for j in 0..<k {
                let gj = k == 1 ? g : (0..<n).map { g[$0 * k + j] }, hj = k == 1 ? h : (0..<n).map { h[$0 * k + j] }
                let tree = grower.grow(g: gj, h: hj)
                for (leaf, rows) in tree.leafRows { for r in rows { scores[Int(r) * k + j] += tree.nodes[leaf].value } }
                ensemble.append(tree.nodes, features: features)
                nodeGains += tree.nodes.map(\.gain)
                if let v = validation {
                    let t = ensemble.treeCount - 1
                    for r in 0..<v.matrix.rowCount { vScores[r * k + j] += ensemble.leafValue(t) { v.matrix.columns[$0][r] } }
                }
            }
            guard let v = validation else { continue }
            let loss = Self.loss(schema.objective, k: k, scores: vScores, targets: v.targets)
            losses.append(loss)
            if loss < best { best = loss; bestRound = round + 1 } else if round + 1 - bestRound >= p.earlyStopping { break }
        }
        let rounds = validation == nil ? ensemble.treeCount / k : bestRound
        ensemble.truncate(trees: rounds * k)
        // Importance from the trees kept.
        var gains = [Double](repeating: 0, count: features.count), splits = [Int](repeating: 0, count: features.count)
        for (i, gain) in nodeGains.prefix(ensemble.values.count).enumerated() {
            let f = Int(ensemble.nodes[i * 5])
            if f >= 0 { gains[f] += gain; splits[f] += 1 }
        }
        for f in features.indices { ensemble.features[f].gain = gains[f]; ensemble.features[f].splits = splits[f] }
        return Result(ensemble: ensemble, rounds: rounds, validationLoss: losses)
    }

    /// Per row (and class): the loss's first and second derivatives at the current scores.
    static func gradients(_ objective: TabularSchema.Objective, k: Int, scores: [Float], targets: [Float],
                          g: inout [Float], h: inout [Float]) {
        switch objective {
        case .regression:
            for r in targets.indices { g[r] = scores[r] - targets[r]; h[r] = 1 }
        case .binary:
            for r in targets.indices {
                let p = 1 / (1 + Float(exp(Double(-scores[r]))))
                g[r] = p - targets[r]; h[r] = max(p * (1 - p), 1e-16)
            }
        case .multiclass:
            // LightGBM's factor K / (K − 1) on the diagonal hessian.
            let factor = Float(k) / Float(k - 1)
            var e = [Float](repeating: 0, count: k)
            for r in targets.indices {
                let row = r * k
                var top = -Float.infinity
                for j in 0..<k { top = max(top, scores[row + j]) }
                var sum: Float = 0
                for j in 0..<k { e[j] = Float(exp(Double(scores[row + j] - top))); sum += e[j] }
                let t = Int(targets[r])
                for j in 0..<k {
                    let p = e[j] / sum
                    g[row + j] = p - (j == t ? 1 : 0); h[row + j] = max(factor * p * (1 - p), 1e-16)
                }
            }
        }
    }

    /// Mean log-loss (classification) or mean squared error (regression) of `scores`.
    static func loss(_ objective: TabularSchema.Objective, k: Int, scores: [Float], targets: [Float]) -> Double {
        var sum = 0.0
        let p = TreeEnsemble.transform(scores, objective: objective, classes: objective == .binary ? 2 : k)
        for (r, t) in targets.enumerated() {
            switch objective {
            case .regression: let d = Double(p[r]) - Double(t); sum += d * d
            case .binary: sum -= log(max(Double(p[2 * r + Int(t)]), 1e-15))
            case .multiclass: sum -= log(max(Double(p[r * k + Int(t)]), 1e-15))
            }
        }
        return sum / Double(max(targets.count, 1))
    }
}
