import MLToolCore

/// Fast paths for the index-mapping ops (broadcast binaries, transpose, constant pad): the output is walked one
/// last-axis row at a time with input offsets kept up to date by addition, so there is no per-element index
/// arithmetic or allocation.
extension Fast {
    /// Calls `row(outputRow, offsets)` for every row of `shape` (all axes but the last), where offsets[i] is
    /// Σ index[d]·strides[i][d] over those axes.
    @inline(__always)
    static func forEachRow(_ shape: [Int], _ strides: [[Int]], _ row: (Int, [Int]) -> Void) {
        let r = shape.count - 1
        let rows = shape.dropLast().reduce(1, *)
        var idx = [Int](repeating: 0, count: max(r, 0))
        var off = [Int](repeating: 0, count: strides.count)
        for k in 0..<rows {
            row(k, off)
            var d = r - 1
            while d >= 0 {
                idx[d] &+= 1
                for i in off.indices { off[i] &+= strides[i][d] }
                if idx[d] < shape[d] { break }
                for i in off.indices { off[i] &-= strides[i][d] &* shape[d] }
                idx[d] = 0
                d -= 1
            }
        }
    }

    /// Strides of `shape` broadcast to `rank` axes: 0 along axes where it has size 1 (or is missing).
    static func broadcastStrides(_ shape: [Int], rank: Int) -> [Int] {
        let padded = [Int](repeating: 1, count: rank - shape.count) + shape
        let st = Reference.strides(padded)
        return padded.indices.map { padded[$0] == 1 ? 0 : st[$0] }
    }

    static func binary(_ s: Step, _ a: UnsafePointer<Float>, _ aShape: [Int], _ b: UnsafePointer<Float>, _ bShape: [Int],
                       _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        guard let inner = ys.last, inner > 0 else { Reference.run(s, [a, b], [aShape, bShape], y, ys); return }
        let sa = broadcastStrides(aShape, rank: ys.count), sb = broadcastStrides(bShape, rank: ys.count)
        let (ia, ib) = (sa[ys.count - 1], sb[ys.count - 1])
        let op = s.op, act = s.act
        forEachRow(ys, [sa, sb]) { k, off in
            let yp = y + k &* inner, ap = a + off[0], bp = b + off[1]
            switch op {
            case .add: for j in 0..<inner { yp[j] = ap[j &* ia] + bp[j &* ib] }
            case .sub: for j in 0..<inner { yp[j] = ap[j &* ia] - bp[j &* ib] }
            case .mul: for j in 0..<inner { yp[j] = ap[j &* ia] * bp[j &* ib] }
            default: for j in 0..<inner { yp[j] = ap[j &* ia] / bp[j &* ib] }
            }
            if !act.isNone { for j in 0..<inner { yp[j] = act.apply(yp[j]) } }
        }
    }

    static func transpose(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        guard let inner = ys.last, inner > 0 else { return }
        let perm = s.perm ?? Array((0..<xs.count).reversed())
        let st = Reference.strides(xs)
        let permuted = perm.map { st[$0] }
        let step = permuted[ys.count - 1]
        forEachRow(ys, [permuted]) { k, off in
            let yp = y + k &* inner, xp = x + off[0]
            for j in 0..<inner { yp[j] = xp[j &* step] }
        }
    }

    static func pad(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        // Rows of the output that lie inside the input on every leading axis copy the input row's middle and
        // fill its ends; everything else goes through the reference definition.
        guard s.padMode == "constant", let inner = ys.last, inner > 0, xs.count >= 1 else {
            Reference.run(s, [x], [xs], y, ys); return
        }
        let r = xs.count
        let before = s.pads[r - 1], xin = xs[r - 1]
        let st = Reference.strides(xs)
        // Leading indices are tracked directly: a padded row has no input offset.
        let rows = ys.dropLast().reduce(1, *)
        var idx = [Int](repeating: 0, count: r - 1)
        for k in 0..<rows {
            let yp = y + k &* inner
            var src = 0, inside = true
            for d in 0..<(r - 1) {
                let p = idx[d] - s.pads[d]
                if p < 0 || p >= xs[d] { inside = false; break }
                src &+= p &* st[d]
            }
            if inside {
                for j in 0..<inner {
                    let p = j - before
                    yp[j] = p >= 0 && p < xin ? x[src &+ p] : s.value
                }
            } else {
                yp.initialize(repeating: s.value, count: inner)
            }
            var d = r - 2
            while d >= 0 {
                idx[d] += 1
                if idx[d] < ys[d] { break }
                idx[d] = 0
                d -= 1
            }
        }
    }
}
