/// One tree, grown leaf-wise on binned data (see `BoostedTreeTrainer`).
struct TreeGrower {
    /// A node as grown: a split (feature ≥ 0) or a leaf (feature −1).
    struct Node {
        var feature = -1
        var left = -1, right = -1
        var missingLeft = false
        var categorical = false
        var threshold: Float = 0
        /// Categorical splits: the category indices that go left.
        var categories: [Int] = []
        var value: Float = 0
        var gain = 0.0
    }

    /// A leaf's best split and its left child's sums.
    struct Split {
        var gain = 0.0
        var rule = SplitRule()
        var leftG = 0.0, leftH = 0.0, leftC: Int32 = 0
    }

    struct Leaf {
        var node: Int
        var start: Int, count: Int
        var sumG: Double, sumH: Double
        var hist: Histogram
        var split: Split?
    }

    let p: BoostedTreeParameters
    let bins: FeatureBins
    let binned: [UInt8]
    let n: Int
    let offsets: [Int]
    let threads: Int
    var order: [Int32]
    var scratch: [Int32]
    /// Histograms no leaf holds any more, kept for the next ones (a fresh array of every bin faults its pages in; one
    /// reused is cleared from cache).
    var spare: [Histogram] = []
    /// The features this tree may split on (nil: all).
    var features: [Bool]?

    init(parameters: BoostedTreeParameters, bins: FeatureBins, binned: [UInt8], rowCount: Int, offsets: [Int], threads: Int) {
        p = parameters; self.bins = bins; self.binned = binned; n = rowCount; self.offsets = offsets; self.threads = threads
        order = (0..<Int32(rowCount)).map { $0 }; scratch = order
    }

    /// Grows one tree on gradients `g` and hessians `h` of `rows` (ascending; nil: every row): its nodes (root
    /// first, children after their parent) and the rows of each leaf.
    mutating func grow(g: [Float], h: [Float], rows sample: [Int32]? = nil) -> (nodes: [Node], leafRows: [(Int, ArraySlice<Int32>)]) {
        let m = sample?.count ?? n
        if let sample { for i in 0..<m { order[i] = sample[i] } } else { for i in 0..<n { order[i] = Int32(i) } }
        var sumG = 0.0, sumH = 0.0
        for i in 0..<m { sumG += Double(g[Int(order[i])]); sumH += Double(h[Int(order[i])]) }
        var nodes = [Node()]
        var leaves = [Leaf(node: 0, start: 0, count: m, sumG: sumG, sumH: sumH, hist: cleared(), split: nil)]
        HistogramKernel.build(bins: binned, rowCount: n, offsets: offsets, rows: order[0..<m], g: g, h: h, threads: threads,
                              into: &leaves[0].hist)
        settle(&leaves[0])
        while leaves.count < p.leaves {
            var pick = -1
            for (i, l) in leaves.enumerated() {
                guard let s = l.split, s.gain > 0 else { continue }
                if pick < 0 || s.gain > leaves[pick].split!.gain { pick = i }
            }
            guard pick >= 0, let s = leaves[pick].split else { break }
            var parent = leaves[pick]
            leaves[pick].hist = Histogram(bins: 0)
            let leftCount = partition(parent, s)
            let l = nodes.count, r = nodes.count + 1
            nodes[parent.node] = s.rule.node(left: l, right: r, gain: s.gain, bins: bins)
            nodes.append(Node()); nodes.append(Node())
            let rightCount = parent.count - leftCount
            var small = cleared(), large = parent.hist
            parent.hist = Histogram(bins: 0)
            let leftSmaller = leftCount <= rightCount
            let smallStart = leftSmaller ? parent.start : parent.start + leftCount
            let smallCount = leftSmaller ? leftCount : rightCount
            HistogramKernel.build(bins: binned, rowCount: n, offsets: offsets, rows: order[smallStart..<(smallStart + smallCount)],
                                  g: g, h: h, threads: threads, into: &small)
            large.subtract(small)
            var left = Leaf(node: l, start: parent.start, count: leftCount, sumG: s.leftG, sumH: s.leftH,
                            hist: leftSmaller ? small : large, split: nil)
            var right = Leaf(node: r, start: parent.start + leftCount, count: rightCount, sumG: parent.sumG - s.leftG,
                             sumH: parent.sumH - s.leftH, hist: leftSmaller ? large : small, split: nil)
            settle(&left); settle(&right)
            leaves[pick] = left
            leaves.append(right)
        }
        var rows: [(Int, ArraySlice<Int32>)] = []
        for leaf in leaves {
            nodes[leaf.node].value = Float(-Self.threshold(leaf.sumG, p.l1) / (leaf.sumH + p.l2)) * p.learningRate
            rows.append((leaf.node, order[leaf.start..<(leaf.start + leaf.count)]))
            if !leaf.hist.g.isEmpty { spare.append(leaf.hist) }
        }
        return (nodes, rows)
    }

    /// A histogram of every bin, all zero: a spare one cleared, or a new one.
    mutating func cleared() -> Histogram {
        guard var h = spare.popLast() else { return Histogram(bins: offsets[offsets.count - 1]) }
        h.g.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        h.h.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        h.c.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        return h
    }

    /// Finds a new leaf's best split; a leaf that cannot split gives its histogram back (nothing reads it again).
    mutating func settle(_ leaf: inout Leaf) {
        leaf.split = bestSplit(leaf)
        if leaf.split == nil {
            spare.append(leaf.hist)
            leaf.hist = Histogram(bins: 0)
        }
    }

    /// Stable partition of a leaf's rows: those going left first. Returns how many go left.
    mutating func partition(_ leaf: Leaf, _ s: Split) -> Int {
        s.rule.partition(&order, &scratch, binned: binned, n: n, start: leaf.start, count: leaf.count)
    }

    /// sign(g) · max(|g| − l1, 0).
    static func threshold(_ g: Double, _ l1: Double) -> Double {
        l1 == 0 ? g : g > l1 ? g - l1 : g < -l1 ? g + l1 : 0
    }

    func score(_ g: Double, _ h: Double, _ l2: Double) -> Double {
        let t = Self.threshold(g, p.l1)
        return t * t / (h + l2)
    }

    /// The best split of a leaf over every feature (the first of equal gains).
    func bestSplit(_ leaf: Leaf) -> Split? {
        guard leaf.count >= 2 * p.minDataInLeaf else { return nil }
        let hist = leaf.hist, width = offsets[offsets.count - 1]
        precondition(hist.g.count == width && hist.h.count == width && hist.c.count == width, "bestSplit: histogram of \(hist.g.count) bins, not \(width)")
        var best = Split()
        hist.g.withUnsafeBufferPointer { g in
            hist.h.withUnsafeBufferPointer { h in
                hist.c.withUnsafeBufferPointer { c in
                    let sums = (g.baseAddress!, h.baseAddress!, c.baseAddress!)
                    for f in 0..<(offsets.count - 1) where features?[f] ?? true {
                        if bins.bounds[f] == nil { categoricalSplit(leaf, f, &best) } else { numericSplit(leaf, f, sums, &best) }
                    }
                }
            }
        }
        return best.rule.feature >= 0 ? best : nil
    }

    func allowed(_ lc: Int32, _ lh: Double, _ rc: Int32, _ rh: Double) -> Bool {
        Int(lc) >= p.minDataInLeaf && Int(rc) >= p.minDataInLeaf && lh >= p.minHessianInLeaf && rh >= p.minHessianInLeaf
    }

    /// The best threshold of numeric feature f: bins 1…b left for each b below the last, with the missing values
    /// (bin 0) right, then left. `hist` is the leaf's histogram (g, h, c), checked by `bestSplit`.
    func numericSplit(_ leaf: Leaf, _ f: Int, _ hist: (UnsafePointer<Double>, UnsafePointer<Double>, UnsafePointer<Int32>),
                      _ best: inout Split) {
        let (g, h, c) = (hist.0 + offsets[f], hist.1 + offsets[f], hist.2 + offsets[f]), end = max(bins.counts[f] - 1, 1)
        let parentScore = score(leaf.sumG, leaf.sumH, p.l2), total = Int32(leaf.count)
        for pass in 0..<(c[0] > 0 ? 2 : 1) {
            let missingLeft = pass == 1
            var lg = missingLeft ? g[0] : 0, lh = missingLeft ? h[0] : 0, lc = missingLeft ? c[0] : 0
            for b in 1..<end {
                let gb = g[b], hb = h[b], cb = c[b]
                lg += gb; lh += hb; lc += cb
                let rg = leaf.sumG - lg, rh = leaf.sumH - lh, rc = total - lc
                // Counts never grow on the right: once too few rows are left there, no later bin is allowed.
                if Int(rc) < p.minDataInLeaf { break }
                // A bin with no rows and zero sums (a built histogram's empty bin) leaves every sum as it was, so its
                // gain is the previous bin's, which that bin has already offered.
                if b > 1 && cb == 0 && gb == 0 && hb == 0 { continue }
                guard allowed(lc, lh, rc, rh) else { continue }
                let gain = score(lg, lh, p.l2) + score(rg, rh, p.l2) - parentScore
                if gain > best.gain {
                    best = Split(gain: gain, rule: SplitRule(feature: f, bin: b, missingLeft: missingLeft), leftG: lg, leftH: lh, leftC: lc)
                }
            }
        }
    }

    func categoricalSplit(_ leaf: Leaf, _ f: Int, _ best: inout Split) {
        let o = offsets[f], count = bins.counts[f], hist = leaf.hist, total = Int32(leaf.count)
        let used = (1..<max(count, 1)).filter { hist.c[o + $0] > 0 }
        guard used.count >= 2 else { return }
        let l2 = p.l2 + p.catL2, parentScore = score(leaf.sumG, leaf.sumH, l2)
        func consider(_ left: [Int]) {
            var lg = 0.0, lh = 0.0, lc: Int32 = 0
            for b in left { lg += hist.g[o + b]; lh += hist.h[o + b]; lc += hist.c[o + b] }
            let rg = leaf.sumG - lg, rh = leaf.sumH - lh, rc = total - lc
            guard allowed(lc, lh, rc, rh) else { return }
            let gain = score(lg, lh, l2) + score(rg, rh, l2) - parentScore
            if gain > best.gain {
                best = Split(gain: gain, rule: SplitRule(feature: f, leftBins: left.sorted(), categorical: true),
                             leftG: lg, leftH: lh, leftC: lc)
            }
        }
        if used.count <= p.maxCatToOneHot {
            for b in used { consider([b]) }
            return
        }
        let sorted = used.sorted { a, b in
            let x = hist.g[o + a] / (hist.h[o + a] + p.catSmooth), y = hist.g[o + b] / (hist.h[o + b] + p.catSmooth)
            return x != y ? x < y : a < b
        }
        let limit = min(p.maxCatThreshold, sorted.count - 1)
        for direction in [sorted, Array(sorted.reversed())] {
            for m in 1...max(limit, 1) { consider(Array(direction.prefix(m))) }
        }
    }
}
