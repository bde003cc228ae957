import Foundation
import MLToolCore
import Synchronization

/// The K trees of one boosting round (one per class; K = 1 for a regression or a binary target), grown side by side.
/// Given the round's gradients the K trees are independent, so workers take them in turn, each with a grower of its
/// own (its row order and scratch). Each tree is grown exactly as a lone grower would grow it (a histogram's sums do
/// not depend on its thread count), so the model is the same for any number of threads.
struct RoundGrowers {
    let trees: RoundTrees
    var growers: [TreeGrower]

    init(parameters p: BoostedTreeParameters, objective: TabularSchema.Objective, bins: FeatureBins, binned: [UInt8],
         rowCount n: Int, offsets: [Int], threads: Int, trees k: Int) {
        trees = RoundTrees(k: k, medianLeaves: objective == .regression && p.regressionLoss == .absolute,
                           learningRate: p.learningRate)
        // A grower holds up to `leaves` histograms of every bin (20 bytes a bin: Fashion-MNIST's 784 pixels make
        // ~124 MB a tree), so the trees grown at once are kept within ~1 GB. A round of several trees gives each
        // worker a tree and its histograms one thread; a lone tree builds its histograms on every thread.
        let perTree = max(1, p.leaves * offsets[offsets.count - 1] * 20)
        let workers = max(1, min(threads, k, (1 << 30) / perTree))
        growers = (0..<workers).map { _ in
            TreeGrower(parameters: p, bins: bins, binned: binned, rowCount: n, offsets: offsets, threads: max(1, threads / workers))
        }
    }

    /// Grows the round's trees on the gradients and hessians `g`, `h` ([row · K + j]) of `sample` (nil: every row),
    /// tree j allowed the features `masks[j]`. A tree grown on every row adds its leaves' values to its column of the
    /// training `scores` here (the rows of a sample's trees are scored by the caller). Returns the trees' nodes in
    /// class order.
    mutating func grow(g: [Float], h: [Float], sample: [Int32]?, masks: [[Bool]?], targets: [Float],
                       weights: [Float]?, scores: inout [Float]) -> [[TreeGrower.Node]] {
        let k = trees.k, trees = self.trees
        precondition(masks.count == k && g.count == h.count && g.count == scores.count, "RoundGrowers: tables disagree")
        let grown = Slots<[TreeGrower.Node]>(count: k), next = Atomic<Int>(0), workers = growers.count
        growers.withUnsafeMutableBufferPointer { gp in
            scores.withUnsafeMutableBufferPointer { sp in
                let all = SharedPointer(p: gp.baseAddress!), s = SharedPointer(p: sp.baseAddress!)
                DispatchQueue.concurrentPerform(iterations: workers) { w in
                    while true {
                        let j = next.add(1, ordering: .relaxed).oldValue
                        if j >= k { return }
                        grown.set(j, trees.tree(j, with: &all.p[w], g: g, h: h, sample: sample, mask: masks[j], targets: targets,
                                          weights: weights, scores: s.p))
                    }
                }
            }
        }
        return grown.values
    }
}

/// What every tree of a round is grown with besides its grower.
struct RoundTrees: Sendable {
    let k: Int
    /// A regression on absolute error: each leaf's value becomes the median of its rows' residuals.
    let medianLeaves: Bool
    let learningRate: Float

    /// Tree j of the round, grown by `grower` (see `grow`); adds its values to column j of `scores` when it was grown
    /// on every row. Only tree j's column is written, so the workers' trees never share a score.
    func tree(_ j: Int, with grower: inout TreeGrower, g: [Float], h: [Float], sample: [Int32]?, mask: [Bool]?,
                      targets: [Float], weights: [Float]?, scores: UnsafeMutablePointer<Float>) -> [TreeGrower.Node] {
        let k = self.k, n = g.count / k
        let gj = k == 1 ? g : (0..<n).map { g[$0 * k + j] }, hj = k == 1 ? h : (0..<n).map { h[$0 * k + j] }
        grower.features = mask
        var tree = grower.grow(g: gj, h: hj, rows: sample)
        if medianLeaves {
            // LightGBM's RenewTreeOutput: a leaf's value is the (weighted) median of its rows' residuals (K = 1).
            for (leaf, rows) in tree.leafRows {
                let residuals = rows.map { (targets[Int($0)] - scores[Int($0)], weights?[Int($0)] ?? 1) }
                tree.nodes[leaf].value = BoostedTreeTrainer.median(residuals) * learningRate
            }
        }
        if sample == nil {
            for (leaf, rows) in tree.leafRows { for r in rows { scores[Int(r) &* k &+ j] += tree.nodes[leaf].value } }
        }
        return tree.nodes
    }
}
