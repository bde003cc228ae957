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
    /// others read as missing). `weights` (one per training row, > 0) scale each row's gradient and hessian and its
    /// share of the starting scores, as if the row appeared that many times (class weights); the validation loss is
    /// unweighted.
    public func train(schema: TabularSchema, train: FeatureMatrix, targets: [Float],
                      validation: (matrix: FeatureMatrix, targets: [Float])? = nil, weights: [Float]? = nil) -> Result {
        self.train(schema: schema, train: train, targets: targets, validation: validation, weights: weights, check: {})
    }

    /// The same, with `check` run before every round: what it throws (a cancellation) stops the training.
    public func train(schema: TabularSchema, train: FeatureMatrix, targets: [Float],
                      validation: (matrix: FeatureMatrix, targets: [Float])? = nil, weights: [Float]? = nil,
                      check: () throws -> Void) rethrows -> Result {
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

        let base = Self.baseScores(schema.objective, k: k, targets: targets, weights: weights, loss: p.regressionLoss)
        var ensemble = TreeEnsemble(objective: schema.objective, target: schema.target, labels: schema.labels,
                                    features: features, baseScores: base)
        var scores = [Float](repeating: 0, count: n * k)
        for r in 0..<n { for j in 0..<k { scores[r * k + j] = base[j] } }
        var vScores = validation.map { v in (0..<(v.matrix.rowCount * k)).map { base[$0 % k] } } ?? []
        var g = [Float](repeating: 0, count: n * k), h = g
        var losses: [Double] = [], best = Double.infinity, bestRound = 0
        var nodeGains: [Double] = []
        var growers = RoundGrowers(parameters: p, objective: schema.objective, bins: bins, binned: binned, rowCount: n,
                                   offsets: offsets, threads: threads, trees: k)
        var sampler = Sampler(seed: p.seed, rows: n, features: features.count, rowFraction: p.rowFraction, featureFraction: p.featureFraction)
        for round in 0..<p.iterations {
            try check()
            Self.gradients(schema.objective, k: k, scores: scores, targets: targets, g: &g, h: &h,
                           loss: p.regressionLoss, delta: Float(p.huberDelta))
            if let weights {
                for r in 0..<n { for j in 0..<k { g[r * k + j] *= weights[r]; h[r * k + j] *= weights[r] } }
            }
            let sample = sampler.rows()
            let masks = (0..<k).map { _ in sampler.features() }
            let first = ensemble.treeCount
            let grown = growers.grow(g: g, h: h, sample: sample, masks: masks, targets: targets, weights: weights,
                                     scores: &scores)
            for nodes in grown {
                ensemble.append(nodes, features: features)
                nodeGains += nodes.map(\.gain)
            }
            // Rows out of the sample are scored by the trees as prediction would.
            if sample != nil { ensemble.addTrees(first..<ensemble.treeCount, train, to: &scores, threads: threads) }
            guard let v = validation else { continue }
            ensemble.addTrees(first..<ensemble.treeCount, v.matrix, to: &vScores, threads: threads)
            let loss = Self.loss(schema.objective, k: k, scores: vScores, targets: v.targets, regression: p.regressionLoss,
                                 delta: p.huberDelta)
            losses.append(loss)
            if loss < best { best = loss; bestRound = round + 1 } else if round + 1 - bestRound >= p.earlyStopping { break }
        }
        let rounds = validation == nil ? ensemble.treeCount / k : bestRound
        ensemble.truncate(trees: rounds * k)
        Self.recordImportance(&ensemble, nodeGains: nodeGains)
        return Result(ensemble: ensemble, rounds: rounds, validationLoss: losses)
    }

    /// Starting scores: the log-odds of the positive class, the log prior of each class, or the mean (the median for
    /// absolute error), each row weighted by `weights`.
    static func baseScores(_ objective: TabularSchema.Objective, k: Int, targets: [Float], weights: [Float]?,
                           loss: BoostedTreeParameters.RegressionLoss) -> [Float] {
        var base = [Float](repeating: 0, count: k)
        let weight = { (r: Int) -> Double in weights.map { Double($0[r]) } ?? 1 }
        let total = max(targets.indices.reduce(0.0) { $0 + weight($1) }, .leastNormalMagnitude)
        switch objective {
        case .regression where loss == .absolute:
            base[0] = Self.median(targets.indices.map { (targets[$0], Float(weight($0))) })
        case .regression: base[0] = Float(targets.indices.reduce(0.0) { $0 + Double(targets[$1]) * weight($1) } / total)
        case .binary:
            let pos = targets.indices.reduce(0.0) { $0 + (targets[$1] == 1 ? weight($1) : 0) } / total
            base[0] = Float(log(max(pos, 1e-15) / max(1 - pos, 1e-15)))
        case .multiclass:
            var counts = [Double](repeating: 0, count: k)
            for (r, t) in targets.enumerated() { counts[Int(t)] += weight(r) }
            for j in 0..<k { base[j] = Float(log(max(counts[j] / total, 1e-15))) }
        }
        return base
    }

    /// Each feature's importance (summed gain and split count) over the nodes of the trees kept; `nodeGains` holds
    /// every grown node's gain in the order the ensemble stores them.
    static func recordImportance(_ ensemble: inout TreeEnsemble, nodeGains: [Double]) {
        let count = ensemble.features.count
        var gains = [Double](repeating: 0, count: count), splits = [Int](repeating: 0, count: count)
        for (i, gain) in nodeGains.prefix(ensemble.values.count).enumerated() {
            let f = Int(ensemble.nodes[i * 5])
            if f >= 0 { gains[f] += gain; splits[f] += 1 }
        }
        for f in 0..<count { ensemble.features[f].gain = gains[f]; ensemble.features[f].splits = splits[f] }
    }

    /// Per row (and class): the loss's first and second derivatives at the current scores.
    static func gradients(_ objective: TabularSchema.Objective, k: Int, scores: [Float], targets: [Float],
                          g: inout [Float], h: inout [Float], loss: BoostedTreeParameters.RegressionLoss = .squared,
                          delta: Float = 0.9) {
        switch objective {
        case .regression:
            for r in targets.indices {
                let d = scores[r] - targets[r]
                switch loss {
                case .squared: g[r] = d
                case .absolute: g[r] = d > 0 ? 1 : d < 0 ? -1 : 0
                case .huber: g[r] = min(max(d, -delta), delta)
                }
                h[r] = 1
            }
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

    /// Mean log-loss (classification), or the regression's loss (squared, absolute or Huber's error), of `scores`.
    static func loss(_ objective: TabularSchema.Objective, k: Int, scores: [Float], targets: [Float],
                     regression: BoostedTreeParameters.RegressionLoss = .squared, delta: Double = 0.9) -> Double {
        var sum = 0.0
        let p = TreeEnsemble.transform(scores, objective: objective, classes: objective == .binary ? 2 : k)
        for (r, t) in targets.enumerated() {
            switch objective {
            case .regression:
                let d = abs(Double(p[r]) - Double(t))
                switch regression {
                case .squared: sum += d * d
                case .absolute: sum += d
                case .huber: sum += d <= delta ? d * d / 2 : delta * (d - delta / 2)
                }
            case .binary: sum -= log(max(Double(p[2 * r + Int(t)]), 1e-15))
            case .multiclass: sum -= log(max(Double(p[r * k + Int(t)]), 1e-15))
            }
        }
        return sum / Double(max(targets.count, 1))
    }

    /// The weighted median of (value, weight > 0) pairs: the smallest value whose cumulative weight reaches half
    /// the total (LightGBM's weighted percentile at 0.5 without interpolation); 0 when empty.
    static func median(_ pairs: [(Float, Float)]) -> Float {
        let sorted = pairs.sorted { $0.0 < $1.0 }
        let half = sorted.reduce(0.0) { $0 + Double($1.1) } / 2
        var sum = 0.0
        for (v, w) in sorted {
            sum += Double(w)
            if sum >= half { return v }
        }
        return sorted.last?.0 ?? 0
    }
}

/// The rows of a round and the features of a tree, drawn without replacement from one seeded generator (the same
/// draws for any thread count). nil when the fraction is 1.
struct Sampler {
    var rng: SplitMix64
    let rowCount: Int, featureCount: Int, rowFraction: Double, featureFraction: Double

    init(seed: UInt64, rows: Int, features: Int, rowFraction: Double, featureFraction: Double) {
        rng = SplitMix64(seed: seed)
        rowCount = rows; featureCount = features; self.rowFraction = rowFraction; self.featureFraction = featureFraction
    }

    /// `count` of 0..<n, ascending.
    mutating func draw(_ count: Int, of n: Int) -> [Int] {
        var pool = Array(0..<n)
        for i in 0..<count { pool.swapAt(i, i + Int(rng.next() % UInt64(n - i))) }
        return pool.prefix(count).sorted()
    }

    mutating func rows() -> [Int32]? {
        guard rowFraction < 1 else { return nil }
        return draw(max(1, Int((Double(rowCount) * rowFraction).rounded())), of: rowCount).map(Int32.init)
    }

    mutating func features() -> [Bool]? {
        guard featureFraction < 1 else { return nil }
        var mask = [Bool](repeating: false, count: featureCount)
        for f in draw(max(1, Int((Double(featureCount) * featureFraction).rounded())), of: featureCount) { mask[f] = true }
        return mask
    }
}
