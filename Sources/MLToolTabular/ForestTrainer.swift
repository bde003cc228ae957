import Foundation
import MLToolCore

/// Random forests and single decision trees (scikit-learn's RandomForest… and DecisionTree…, written from their
/// description) on the bins boosted trees use. Each tree is grown on n rows drawn with replacement (bootstrap) and
/// draws its candidate features afresh at every split, as scikit-learn does: per-split draws decorrelate the trees more
/// than one draw per tree, and √F per split is the classic setting for classification. The model averages the trees:
/// each leaf stores its class proportions (one tree per class in the file) or its mean, divided by the tree count,
/// so the sums are the prediction (docs/FORMAT.md 4.5, learner "forest" / "tree"). Deterministic: the same data,
/// parameters and seed give the same trees for any thread count.
public struct ForestTrainer: Sendable {
    public var parameters: ForestParameters

    public init(parameters: ForestParameters = ForestParameters()) { self.parameters = parameters }

    /// Trains on `train` with `targets` (class index, or the value for a regression); `weights` (one per row, > 0)
    /// multiply each row's share as class weights do. Categorical features keep their `maxBins` most frequent
    /// categories (the others read as missing), as boosted trees do.
    public func train(schema: TabularSchema, train: FeatureMatrix, targets: [Float], weights: [Float]? = nil,
                      learner: TreeEnsemble.Learner = .forest) -> TreeEnsemble {
        self.train(schema: schema, train: train, targets: targets, weights: weights, learner: learner, check: {})
    }

    /// The same, with `check` run before every tree: what it throws (a cancellation) stops the training.
    public func train(schema: TabularSchema, train: FeatureMatrix, targets: [Float], weights: [Float]? = nil,
                      learner: TreeEnsemble.Learner = .forest, check: () throws -> Void) rethrows -> TreeEnsemble {
        let p = parameters
        var features = schema.features
        for i in features.indices where features[i].kind == .categorical {
            features[i].categories = Array((features[i].categories ?? []).prefix(p.maxBins))
        }
        let bins = FeatureBins(matrix: train, categorical: features.map { $0.kind == .categorical }, maxBins: p.maxBins)
        var offsets = [0]
        for c in bins.counts { offsets.append(offsets[offsets.count - 1] + c) }
        let n = train.rowCount, classes = schema.objective == .regression ? 1 : schema.labels.count
        // Binary: one tree holding p(labels[1]), grown on both classes' counts.
        let k = schema.objective == .multiclass ? classes : 1
        let threads = p.threads > 0 ? p.threads : ProcessInfo.processInfo.activeProcessorCount
        let all = features.count
        let draw = min(p.featuresPerSplit ?? (schema.objective == .regression ? all : max(1, Int(Double(all).squareRoot()))), all)
        var grower = ForestGrower(parameters: p, bins: bins, binned: bins.binned(train), rowCount: n, channels: classes,
                                  offsets: offsets, threads: threads, draw: draw)
        let w = (0..<n).map { Double(weights?[$0] ?? 1) }
        let mean = schema.objective == .regression ? (0..<n).reduce(0.0) { $0 + w[$1] * Double(targets[$1]) } / max(w.reduce(0, +), .leastNormalMagnitude) : 0
        let channel = schema.objective == .regression ? [Int32](repeating: 0, count: n) : targets.map { Int32($0) }
        var ensemble = TreeEnsemble(objective: schema.objective, target: schema.target, labels: schema.labels, features: features,
                                    baseScores: [Float](repeating: 0, count: k))
        ensemble.learner = learner
        // A multiclass forest's K trees a round differ only in their leaves: each tree is laid out once (its leaves 0)
        // and its leaves' K values kept beside, the shared trees a file stores, never the K copies (letter: 29 MB
        // against 238 MB).
        var shapes = TreeEnsemble(objective: .regression, target: "", labels: [], features: features, baseScores: [0])
        var leaves: [Float] = []
        var gains = [Double](repeating: 0, count: all), splits = [Int](repeating: 0, count: all)
        let trees = max(p.trees, 1)
        for t in 0..<trees {
            try check()
            // Each tree's draws come from its own generator: the seed and the tree's number.
            var rng = SplitMix64(seed: p.seed &+ UInt64(t) &* 0xD1B5_4A32_D192_ED03)
            var times = [Double](repeating: p.bootstrap ? 0 : 1, count: n)
            if p.bootstrap, n > 0 { for _ in 0..<n { times[Int(rng.next() % UInt64(n))] += 1 } }
            let rows = (0..<n).filter { times[$0] > 0 }.map(Int32.init)
            let weight = (0..<n).map { w[$0] * times[$0] }
            let value = (0..<n).map { schema.objective == .regression ? weight[$0] * (Double(targets[$0]) - mean) : weight[$0] }
            let grown = grower.grow(rows: rows, channel: channel, value: value, weight: weight, seed: rng.next())
            for node in grown.nodes where node.feature >= 0 { gains[node.feature] += node.gain; splits[node.feature] += 1 }
            if k > 1 {
                var nodes = grown.nodes
                for i in nodes.indices where nodes[i].feature < 0 { nodes[i].value = 0 }
                shapes.append(nodes, features: features)
                for (i, v) in grown.values.enumerated() where grown.nodes[i].feature < 0 {
                    for j in 0..<k { leaves.append(Float((v[j] + mean) / Double(trees))) }
                }
                continue
            }
            for j in 0..<k {
                var nodes = grown.nodes
                for (i, v) in grown.values.enumerated() where nodes[i].feature < 0 {
                    // Binary: the probability of labels[1]; regression: the mean (residual + the training mean).
                    nodes[i].value = Float((schema.objective == .binary ? v[1] : v[j] + mean) / Double(trees))
                }
                ensemble.append(nodes, features: features)
            }
        }
        for f in 0..<all { ensemble.features[f].gain = gains[f]; ensemble.features[f].splits = splits[f] }
        if k > 1 {
            let shared = TreeEnsemble.SharedTrees(treeStarts: shapes.treeStarts, nodes: shapes.nodes, values: shapes.values,
                                                  categoryWords: shapes.categoryWords, leaves: leaves)
            ensemble.scoringTrees = shared.forScoring()
        }
        return ensemble
    }
}
