import MLToolCore

/// One tree of a random forest (or a single decision tree), grown depth-first on binned data to purity, to
/// `maxDepth`, or until a leaf holds fewer than 2 · minDataInLeaf rows. A split maximises Σ_k G_k² / H over both
/// children less the parent's, G_k the weighted count of class k (the Gini decrease times the node's weight) or the
/// weighted sum of residuals (the squared-error decrease), H the weight: scikit-learn's criteria. A leaf's K values are
/// its class proportions or its mean.
struct ForestGrower {
    /// A leaf's best split and its left child's K + 1 sums.
    struct Split {
        var gain = 0.0
        var rule = SplitRule()
        var left: [Double] = []
    }

    struct Pending {
        var node: Int, depth: Int
        var start: Int, count: Int
        var sums: [Double]
        var hist: ForestHistogram
    }

    let p: ForestParameters
    let bins: FeatureBins
    let binned: [UInt8]
    let n: Int, k: Int
    let offsets: [Int]
    let threads: Int
    /// Features drawn per split.
    let draw: Int
    var order: [Int32], scratch: [Int32]
    var rng: SplitMix64

    init(parameters: ForestParameters, bins: FeatureBins, binned: [UInt8], rowCount: Int, channels: Int, offsets: [Int],
         threads: Int, draw: Int) {
        p = parameters; self.bins = bins; self.binned = binned; n = rowCount; k = channels; self.offsets = offsets
        self.threads = threads; self.draw = draw
        order = (0..<Int32(rowCount)).map { $0 }; scratch = order
        rng = SplitMix64(seed: parameters.seed)
    }

    /// Grows a tree on `rows` (ascending, distinct) with each row's channel (class, or 0), value (its weight, or its
    /// weighted residual) and weight; the features at each split drawn from `seed`. Returns the nodes (the leaves'
    /// `value` unset) and each node's K leaf values (empty for a split).
    mutating func grow(rows: [Int32], channel: [Int32], value: [Double], weight: [Double],
                       seed: UInt64) -> (nodes: [TreeGrower.Node], values: [[Double]]) {
        rng = SplitMix64(seed: seed)
        let m = rows.count, stride = k + 1
        for i in 0..<m { order[i] = rows[i] }
        var hist = ForestHistogram(bins: offsets[offsets.count - 1], channels: k)
        hist.add(bins: binned, rowCount: n, offsets: offsets, k: k, rows: order[0..<m], channel: channel, value: value,
                 weight: weight, threads: threads)
        var sums = [Double](repeating: 0, count: stride)
        for r in rows { sums[Int(channel[Int(r)])] += value[Int(r)]; sums[k] += weight[Int(r)] }
        var nodes = [TreeGrower.Node()], values: [[Double]] = [[]]
        var stack = [Pending(node: 0, depth: 0, start: 0, count: m, sums: sums, hist: hist)]
        while var leaf = stack.popLast() {
            guard let s = bestSplit(leaf) else {
                values[leaf.node] = (0..<k).map { leaf.sums[$0] / leaf.sums[k] }
                continue
            }
            let leftCount = s.rule.partition(&order, &scratch, binned: binned, n: n, start: leaf.start, count: leaf.count)
            let l = nodes.count, r = l + 1
            nodes[leaf.node] = s.rule.node(left: l, right: r, gain: s.gain, bins: bins)
            nodes += [TreeGrower.Node(), TreeGrower.Node()]
            values += [[], []]
            let rightCount = leaf.count - leftCount, leftSmaller = leftCount <= rightCount
            let smallStart = leftSmaller ? leaf.start : leaf.start + leftCount
            var small = ForestHistogram(bins: offsets[offsets.count - 1], channels: k), large = leaf.hist
            // The parent's histogram becomes the larger child's in place: the parent lets go of it first, so
            // `subtract` does not copy it (a copy was 7 % of a letter forest's training, perf).
            leaf.hist = ForestHistogram(bins: 0, channels: k)
            small.add(bins: binned, rowCount: n, offsets: offsets, k: k, rows: order[smallStart..<(smallStart + (leftSmaller ? leftCount : rightCount))],
                      channel: channel, value: value, weight: weight, threads: threads)
            large.subtract(small)
            let rightSums = (0..<stride).map { leaf.sums[$0] - s.left[$0] }
            // Right pushed first: the left subtree is grown first.
            stack.append(Pending(node: r, depth: leaf.depth + 1, start: leaf.start + leftCount, count: rightCount, sums: rightSums,
                                 hist: leftSmaller ? large : small))
            stack.append(Pending(node: l, depth: leaf.depth + 1, start: leaf.start, count: leftCount, sums: s.left,
                                 hist: leftSmaller ? small : large))
        }
        return (nodes, values)
    }

    /// Σ_k s_k² / s_K of K + 1 sums (0 without weight).
    static func score(_ s: UnsafePointer<Double>, _ k: Int) -> Double {
        guard s[k] > 0 else { return 0 }
        var sum = 0.0
        for j in 0..<k { sum += s[j] * s[j] }
        return sum / s[k]
    }

    /// The best split of a leaf over `draw` features drawn for it (the first of equal gains), if it gains more than
    /// rounding can (a relative 1e-10 of the parent's score, so a pure leaf is never split).
    mutating func bestSplit(_ leaf: Pending) -> Split? {
        guard leaf.count >= 2 * p.minDataInLeaf, leaf.depth < (p.maxDepth ?? .max) else { return nil }
        let features = offsets.count - 1
        var pool = Array(0..<features)
        for i in 0..<draw { pool.swapAt(i, i + Int(rng.next() % UInt64(features - i))) }
        let parent = leaf.sums.withUnsafeBufferPointer { Self.score($0.baseAddress!, k) }
        var best = Split()
        for f in pool.prefix(draw).sorted() { search(leaf, f, parent, &best) }
        return best.rule.feature >= 0 && best.gain > 1e-10 * abs(parent) ? best : nil
    }

    /// Considers feature f's splits: numeric thresholds with missing values on either side, or for categories the
    /// prefixes of their order by mean (one channel: the best subset, Breiman's rule) or each category against the
    /// rest (classes).
    func search(_ leaf: Pending, _ f: Int, _ parent: Double, _ best: inout Split) {
        let stride = k + 1, o = offsets[f], count = bins.counts[f], total = Int32(leaf.count)
        var acc = [Double](repeating: 0, count: stride), right = acc
        leaf.hist.sums.withUnsafeBufferPointer { hp in
            let h = hp.baseAddress!
            func consider(_ lc: Int32, _ bin: Int, _ leftBins: [Int], _ missingLeft: Bool) {
                let rc = total - lc
                guard Int(lc) >= p.minDataInLeaf, Int(rc) >= p.minDataInLeaf else { return }
                for j in 0..<stride { right[j] = leaf.sums[j] - acc[j] }
                guard acc[k] > 0, right[k] > 0 else { return }
                let gain = acc.withUnsafeBufferPointer { Self.score($0.baseAddress!, k) }
                    + right.withUnsafeBufferPointer { Self.score($0.baseAddress!, k) } - parent
                if gain > best.gain {
                    let rule = SplitRule(feature: f, bin: bin, leftBins: leftBins, missingLeft: missingLeft,
                                         categorical: bins.bounds[f] == nil)
                    best = Split(gain: gain, rule: rule, left: acc)
                }
            }
            func add(_ b: Int) { for j in 0..<stride { acc[j] += h[(o + b) * stride + j] } }
            if bins.bounds[f] != nil {
                for missingLeft in leaf.hist.counts[o] > 0 ? [false, true] : [false] {
                    for j in 0..<stride { acc[j] = 0 }
                    var lc: Int32 = 0
                    if missingLeft { add(0); lc = leaf.hist.counts[o] }
                    for b in 1..<max(count - 1, 1) {
                        add(b); lc += leaf.hist.counts[o + b]
                        consider(lc, b, [], missingLeft)
                    }
                }
                return
            }
            let used = (1..<max(count, 1)).filter { leaf.hist.counts[o + $0] > 0 }
            guard used.count >= 2 else { return }
            if k == 1 {
                let sorted = used.sorted { a, b in
                    let x = h[(o + a) * 2] / h[(o + a) * 2 + 1], y = h[(o + b) * 2] / h[(o + b) * 2 + 1]
                    return x != y ? x < y : a < b
                }
                for j in 0..<stride { acc[j] = 0 }
                var lc: Int32 = 0
                for m in 0..<(sorted.count - 1) {
                    add(sorted[m]); lc += leaf.hist.counts[o + sorted[m]]
                    consider(lc, 0, Array(sorted.prefix(m + 1)).sorted(), false)
                }
            } else {
                for b in used {
                    for j in 0..<stride { acc[j] = 0 }
                    add(b)
                    consider(leaf.hist.counts[o + b], 0, [b], false)
                }
            }
        }
    }
}
