/// Where a split sends a node's rows, as both tree growers (`TreeGrower`, `ForestGrower`) find it: numeric bins
/// 1…`bin` go left, or for a categorical feature the bins `leftBins`; missing values (bin 0) go left iff `missingLeft`.
struct SplitRule {
    var feature = -1
    var bin = 0
    var leftBins: [Int] = []
    var missingLeft = false
    var categorical = false

    /// Per bin (0 the missing one): whether a row in it goes left.
    var goesLeft: [Bool] {
        var goes = [Bool](repeating: false, count: 256)
        for b in categorical ? leftBins : Array(1...bin) { goes[b] = true }
        goes[0] = missingLeft
        return goes
    }

    /// The tree node this split makes, its children at `left` and `right` (thresholds and categories from `bins`).
    func node(left: Int, right: Int, gain: Double, bins: FeatureBins) -> TreeGrower.Node {
        var node = TreeGrower.Node(feature: feature, left: left, right: right, missingLeft: missingLeft,
                                   categorical: categorical, gain: gain)
        if categorical {
            node.categories = leftBins.map { $0 - 1 }
        } else if let bounds = bins.bounds[feature] {
            node.threshold = bounds[bin - 1]
        }
        return node
    }

    /// Stable partition of `order[start..<start + count]` by this split's column of `binned` (`n` rows a column):
    /// rows going left first, through `scratch`. Returns how many go left.
    func partition(_ order: inout [Int32], _ scratch: inout [Int32], binned: [UInt8], n: Int, start: Int, count: Int) -> Int {
        let goes = goesLeft, column = feature * n
        var l = start, r = 0
        for i in start..<(start + count) {
            let row = order[i]
            if goes[Int(binned[column + Int(row)])] { order[l] = row; l += 1 } else { scratch[r] = row; r += 1 }
        }
        for i in 0..<r { order[l + i] = scratch[i] }
        return l - start
    }
}
