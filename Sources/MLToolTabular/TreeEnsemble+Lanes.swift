extension TreeEnsemble {
    /// The leaf values of the tree whose nodes start at `start` for 8 rows at once (row l's values at
    /// `x + l · width`): the same leaves as `leaf`, found in lock step. Each step moves every row one level down with a
    /// select instead of a branch on the comparison (a row at its leaf stays there), so the 8 walks overlap their loads
    /// and no mispredicted branch stalls them, where a lone walk waits on both at every level.
    @inline(__always)
    static func leaves8(_ start: Int, _ x: UnsafePointer<Float>, _ width: Int, _ t: ScoringTables) -> SIMD8<Float> {
        let i = leafNodes8(start, x, width, t), values = t.values.baseAddress!
        return SIMD8(values[i[0]], values[i[1]], values[i[2]], values[i[3]], values[i[4]], values[i[5]], values[i[6]], values[i[7]])
    }

    /// The leaf nodes (indices in the node table) that `leaves8` reads.
    @inline(__always)
    static func leafNodes8(_ start: Int, _ x: UnsafePointer<Float>, _ width: Int, _ t: ScoringTables) -> SIMD8<Int> {
        let nodes = t.nodes.baseAddress!
        let x1 = x + width, x2 = x1 + width, x3 = x2 + width, x4 = x3 + width, x5 = x4 + width, x6 = x5 + width
        let x7 = x6 + width
        var i0 = start, i1 = start, i2 = start, i3 = start, i4 = start, i5 = start, i6 = start, i7 = start
        while true {
            let f0 = nodes[i0 &* 5], f1 = nodes[i1 &* 5], f2 = nodes[i2 &* 5], f3 = nodes[i3 &* 5]
            let f4 = nodes[i4 &* 5], f5 = nodes[i5 &* 5], f6 = nodes[i6 &* 5], f7 = nodes[i7 &* 5]
            if f0 & f1 & f2 & f3 & f4 & f5 & f6 & f7 < 0 { break }
            i0 = step(i0, f0, start, x, t); i1 = step(i1, f1, start, x1, t)
            i2 = step(i2, f2, start, x2, t); i3 = step(i3, f3, start, x3, t)
            i4 = step(i4, f4, start, x4, t); i5 = step(i5, f5, start, x5, t)
            i6 = step(i6, f6, start, x6, t); i7 = step(i7, f7, start, x7, t)
        }
        return SIMD8(i0, i1, i2, i3, i4, i5, i6, i7)
    }

    /// Node `i`'s child for the row `x` (its feature `f`; a leaf, f < 0, is its own), as `leaf` chooses it.
    @inline(__always)
    static func step(_ i: Int, _ f: Int32, _ start: Int, _ x: UnsafePointer<Float>, _ t: ScoringTables) -> Int {
        let node = t.nodes.baseAddress! + i &* 5
        let v = x[Int(max(f, 0))], flags = node[3], threshold = t.values[i]
        var left = v.isNaN ? flags & 1 != 0 : v <= threshold
        if flags & 2 != 0 && !v.isNaN { left = categoryGoesLeft(v, node, t) }
        let next = start &+ Int(left ? node[1] : node[2])
        return f < 0 ? i : next
    }

    /// Whether category `v` goes left at a categorical node (an unknown one goes where missing values go).
    static func categoryGoesLeft(_ v: Float, _ node: UnsafePointer<Int32>, _ t: ScoringTables) -> Bool {
        let c = Int(v), f = Int(node[0])
        guard c >= 0 && c < Int(t.counts[f]) else { return node[3] & 1 != 0 }
        return t.words[Int(node[4]) &+ c >> 5] >> UInt32(c & 31) & 1 != 0
    }
}
