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

    /// The scalar reference of `partition`: the plain loop.
    func referencePartition(_ order: inout [Int32], binned: [UInt8], n: Int, start: Int, count: Int) -> Int {
        let goes = goesLeft, rows = order[start..<(start + count)]
        let left = rows.filter { goes[Int(binned[feature * n + Int($0)])] }, right = rows.filter { !goes[Int(binned[feature * n + Int($0)])] }
        order.replaceSubrange(start..<(start + count), with: left + right)
        return left.count
    }

    /// Stable partition of `order[start..<start + count]` by this split's column of `binned` (`n` rows a column):
    /// rows going left first, through `scratch`. Returns how many go left. Each row is written both ways and the
    /// side it goes to advances (no branch on the bin: a leaf's rows go left and right at random).
    func partition(_ order: inout [Int32], _ scratch: inout [Int32], binned: [UInt8], n: Int, start: Int, count: Int) -> Int {
        // The edge: the range is in `order`, the scratch holds it, the column is in `binned`; each row is checked
        // below n as it is read. Inside, writes go to order[l] with l ≤ i (never past what is still to be read).
        precondition(start >= 0 && count >= 0 && start + count <= order.count && count <= scratch.count
                     && feature >= 0 && (feature + 1) * n <= binned.count, "partition: range or column out of bounds")
        var table = [UInt8](repeating: 0, count: 256)
        for (b, left) in goesLeft.enumerated() where left { table[b] = 1 }
        return order.withUnsafeMutableBufferPointer { op in
            scratch.withUnsafeMutableBufferPointer { sp in
                binned.withUnsafeBufferPointer { bp in
                    table.withUnsafeBufferPointer { tp in
                        let o = op.baseAddress!, s = sp.baseAddress!, column = bp.baseAddress! + feature * n, goes = tp.baseAddress!
                        var l = start, r = 0
                        for i in start..<(start + count) {
                            let row = o[i]
                            precondition(UInt(bitPattern: Int(row)) < UInt(n), "partition: row \(row) outside 0..<\(n)")
                            let left = Int(goes[Int(column[Int(row)])])
                            o[l] = row; s[r] = row
                            l &+= left; r &+= 1 &- left
                        }
                        (o + l).update(from: s, count: r)
                        return l - start
                    }
                }
            }
        }
    }
}
