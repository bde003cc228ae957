import MLToolCore

/// Reference kernels of the ops that pick elements: `where` and `gather`.
extension Reference {
    /// y = a where the condition is non-zero, else b (all three broadcast to ys).
    static func select(_ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let st = xs.map { Fast.broadcastStrides($0, rank: ys.count) }
        for i in 0..<ys.reduce(1, *) {
            let idx = unravel(i, ys)
            var off = [0, 0, 0]
            for k in 0..<3 { for d in 0..<ys.count { off[k] += idx[d] * st[k][d] } }
            y[i] = x[0][off[0]] != 0 ? x[1][off[1]] : x[2][off[2]]
        }
    }

    /// data (outer, len, inner) and `n` indices → y (outer, n, inner): y[o, j, :] = data[o, indices[j], :]. An index
    /// that is not an integer in -len..<len gives NaN (kernels cannot throw; the values show it).
    static func gather(_ s: Step, _ data: UnsafePointer<Float>, _ ds: [Int], _ indices: UnsafePointer<Float>, n: Int,
                       _ y: UnsafeMutablePointer<Float>) {
        let ax = try! Program.axis(s.axis ?? 0, rank: ds.count, s)   // validated by shape inference
        let outer = ds[..<ax].reduce(1, *), len = ds[ax], inner = ds[(ax + 1)...].reduce(1, *)
        for o in 0..<outer {
            for j in 0..<n {
                let dst = y + (o * n + j) * inner
                guard let i = index(indices[j], count: len) else {
                    dst.update(repeating: .nan, count: inner)
                    continue
                }
                dst.update(from: data + (o * len + i) * inner, count: inner)
            }
        }
    }

    /// A float index as a position in 0..<count (negative ones count from the end), or nil.
    @inline(__always)
    static func index(_ v: Float, count: Int) -> Int? {
        guard v.isFinite, v == v.rounded(.towardZero), abs(v) <= Float(count) else { return nil }
        let i = Int(v) < 0 ? Int(v) + count : Int(v)
        return i >= 0 && i < count ? i : nil
    }
}

extension Fast {
    /// `where` a last-axis row at a time, offsets kept up to date by addition (`forEachRow`).
    static func select(_ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>, _ ys: [Int], threads: Int) {
        guard let inner = ys.last, inner > 0 else { Reference.select(x, xs, y, ys); return }
        let st = xs.map { broadcastStrides($0, rank: ys.count) }
        let (ic, ia, ib) = (st[0][ys.count - 1], st[1][ys.count - 1], st[2][ys.count - 1])
        nonisolated(unsafe) let (c, a, b, y) = (x[0], x[1], x[2], y)
        let rows = ys.dropLast().reduce(1, *)
        rowsInParallel(rows, elements: rows &* inner, threads: threads) { lo, hi in
            forEachRow(ys, st, rows: lo..<hi) { k, off in
                let yp = y + k &* inner, cp = c + off[0], ap = a + off[1], bp = b + off[2]
                for j in 0..<inner { yp[j] = cp[j &* ic] != 0 ? ap[j &* ia] : bp[j &* ib] }
            }
        }
    }
}
