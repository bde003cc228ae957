import MLToolCore

/// One sliced axis of a `slice` step: `count` elements from `start`, `step` apart.
struct SliceAxis: Sendable, Equatable {
    var axis: Int
    var start: Int
    var step: Int
    var count: Int
}

extension Reference {
    /// y = x with each sliced axis a reduced to x[start + i·step] for i < count; one element at a time.
    static func slice(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        var start = [Int](repeating: 0, count: xs.count), step = [Int](repeating: 1, count: xs.count)
        for a in s.slices {
            let ax = a.axis < 0 ? a.axis + xs.count : a.axis
            start[ax] = a.start; step[ax] = a.step
        }
        let st = strides(xs)
        for i in 0..<ys.reduce(1, *) {
            let idx = unravel(i, ys)
            var src = 0
            for d in 0..<xs.count { src += (start[d] + idx[d] * step[d]) * st[d] }
            y[i] = x[src]
        }
    }
}

extension Fast {
    /// The slice row by row: input offsets kept by addition (`forEachRow`), the last axis copied as one run when
    /// its step is 1.
    static func slice(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                      threads: Int) {
        guard let inner = ys.last, inner > 0 else { return }
        let r = xs.count
        var start = [Int](repeating: 0, count: r), step = [Int](repeating: 1, count: r)
        for a in s.slices {
            let ax = a.axis < 0 ? a.axis + r : a.axis
            start[ax] = a.start; step[ax] = a.step
        }
        let st = Reference.strides(xs)
        var base = 0
        for d in 0..<r { base &+= start[d] &* st[d] }
        let strides = (0..<r).map { st[$0] &* step[$0] }
        let innerStride = strides[r - 1]
        nonisolated(unsafe) let x0 = x + base, y = y
        let rows = ys.dropLast().reduce(1, *)
        rowsInParallel(rows, elements: rows &* inner, threads: threads) { lo, hi in
            forEachRow(ys, [strides], rows: lo..<hi) { k, off in
                let yp = y + k &* inner, xp = x0 + off[0]
                if innerStride == 1 {
                    yp.update(from: xp, count: inner)
                } else {
                    for j in 0..<inner { yp[j] = xp[j &* innerStride] }
                }
            }
        }
    }

    /// Concat along the step's axis: per outer index, each input's contiguous run copied in one block (the reference
    /// copies element by element). Shapes are checked by shape inference before a plan exists.
    static func concat(_ s: Step, _ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                       threads: Int) {
        guard let ax = try? Program.axis(s.axis ?? 0, rank: ys.count, s) else { return }
        let outer = ys[..<ax].reduce(1, &*), inner = ys[(ax + 1)...].reduce(1, &*)
        let rowOut = ys[ax] &* inner
        let runs = xs.map { $0[ax] &* inner }
        nonisolated(unsafe) let (x, y) = (x, y)
        rowsInParallel(outer, elements: outer &* rowOut, threads: threads) { lo, hi in
            for o in lo..<hi {
                var out = y + o &* rowOut
                for (p, run) in zip(x, runs) {
                    out.update(from: p + o &* run, count: run)
                    out += run
                }
            }
        }
    }
}
