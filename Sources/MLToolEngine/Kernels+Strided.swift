import CMLToolKernels
import Foundation
import MLToolCore

/// Fast paths for the index-mapping ops (broadcast binaries, transpose, constant pad): the output is walked one
/// last-axis row at a time with input offsets kept up to date by addition, so there is no per-element index
/// arithmetic or allocation.
extension Fast {
    /// Calls `row(outputRow, offsets)` for rows [lo, hi) of `shape` (all axes but the last; all rows by default),
    /// where offsets[i] is Σ index[d]·strides[i][d] over those axes.
    @inline(__always)
    static func forEachRow(_ shape: [Int], _ strides: [[Int]], rows range: Range<Int>? = nil,
                           _ row: (Int, [Int]) -> Void) {
        let r = shape.count - 1
        let rows = range ?? 0..<shape.dropLast().reduce(1, *)
        guard !rows.isEmpty else { return }
        // The first row's index and offsets, then kept up to date by addition.
        var idx = [Int](repeating: 0, count: max(r, 0))
        var off = [Int](repeating: 0, count: strides.count)
        var rest = rows.lowerBound
        var d = r - 1
        while d >= 0 && rest > 0 {
            idx[d] = rest % shape[d]
            rest /= shape[d]
            for i in off.indices { off[i] &+= idx[d] &* strides[i][d] }
            d -= 1
        }
        for k in rows {
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

    /// Floats an index-mapping op (copy, slice, concat, transpose, resize, pool, element-wise) or a softmax must
    /// write before its rows are split across threads: below it, a hand-off costs more than it saves.
    static let copyParallelThreshold = 32_768

    /// Runs `body(lo, hi)` over `rows` output rows, split across threads when the output (`elements` floats) is
    /// large. Each row is written by exactly one range, so results do not depend on the split.
    @inline(__always)
    static func rowsInParallel(_ rows: Int, elements: Int, threads: Int, _ body: @escaping @Sendable (Int, Int) -> Void) {
        parallel(rows, parts: elements >= copyParallelThreshold ? threads : 1, body)
    }

    /// Strides of `shape` broadcast to `rank` axes: 0 along axes where it has size 1 (or is missing).
    static func broadcastStrides(_ shape: [Int], rank: Int) -> [Int] {
        let padded = [Int](repeating: 1, count: rank - shape.count) + shape
        let st = Reference.strides(padded)
        return padded.indices.map { padded[$0] == 1 ? 0 : st[$0] }
    }

    static func binary(_ s: Step, _ a: UnsafePointer<Float>, _ aShape: [Int], _ b: UnsafePointer<Float>, _ bShape: [Int],
                       _ y: UnsafeMutablePointer<Float>, _ ys: [Int], threads: Int) {
        guard let last = ys.last, last > 0 else { Reference.run(s, [a, b], [aShape, bShape], y, ys); return }
        // Axes both operands walk as one are merged, so that a short last axis (attention scores in NHWC order:
        // (…, S, S, heads)) divided by a constant runs as long rows.
        let (shape, strides) = mergedAxes(ys, [broadcastStrides(aShape, rank: ys.count), broadcastStrides(bShape, rank: ys.count)])
        let inner = shape.last ?? last
        let (ia, ib) = (strides[0].last ?? 0, strides[1].last ?? 0)
        let op = s.op, act = s.act
        nonisolated(unsafe) let (a, b, y) = (a, b, y)
        let rows = shape.dropLast().reduce(1, *)
        rowsInParallel(rows, elements: rows &* inner, threads: threads) { lo, hi in
        forEachRow(shape, strides, rows: lo..<hi) { k, off in
            let yp = y + k &* inner, ap = a + off[0], bp = b + off[1]
            if ia == 1, ib <= 1, act.isNone, contiguousRow(op, ap, bp, bIsScalar: ib == 0, yp, inner) { return }
            switch op {
            case .add: for j in 0..<inner { yp[j] = ap[j &* ia] + bp[j &* ib] }
            case .sub: for j in 0..<inner { yp[j] = ap[j &* ia] - bp[j &* ib] }
            case .mul: for j in 0..<inner { yp[j] = ap[j &* ia] * bp[j &* ib] }
            case .pow: for j in 0..<inner { yp[j] = Self.power(ap[j &* ia], bp[j &* ib]) }
            case .binary:
                let f = s.binary ?? .max   // compile sets it
                for j in 0..<inner { yp[j] = f.apply(ap[j &* ia], bp[j &* ib]) }
            default: for j in 0..<inner { yp[j] = ap[j &* ia] / bp[j &* ib] }
            }
            if !act.isNone { for j in 0..<inner { yp[j] = act.apply(yp[j]) } }
        }
        }
    }

    /// y = a op b over a row of n values, a contiguous and b contiguous or one value (a transformer's bias adds and
    /// scalings): loops the compiler vectorises, the same operation per element as the strided loop. False (nothing
    /// written) for the ops it leaves to that loop.
    @inline(__always)
    static func contiguousRow(_ op: Op, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, bIsScalar: Bool,
                              _ y: UnsafeMutablePointer<Float>, _ n: Int) -> Bool {
        if bIsScalar {
            let c = b[0]
            switch op {
            case .add: for j in 0..<n { y[j] = a[j] + c }
            case .sub: for j in 0..<n { y[j] = a[j] - c }
            case .mul: for j in 0..<n { y[j] = a[j] * c }
            case .div: for j in 0..<n { y[j] = a[j] / c }
            default: return false
            }
        } else {
            switch op {
            case .add: for j in 0..<n { y[j] = a[j] + b[j] }
            case .sub: for j in 0..<n { y[j] = a[j] - b[j] }
            case .mul: for j in 0..<n { y[j] = a[j] * b[j] }
            case .div: for j in 0..<n { y[j] = a[j] / b[j] }
            default: return false
            }
        }
        return true
    }

    /// `shape` with adjacent axes merged where every operand's strides walk them as one axis (axis d into the axis
    /// after it when strides[d] = strides[d + 1] · shape[d + 1] for each; size-1 axes dropped), and the strides of
    /// the merged axes. The output is contiguous, so its row order is unchanged.
    static func mergedAxes(_ shape: [Int], _ strides: [[Int]]) -> (shape: [Int], strides: [[Int]]) {
        guard let last = shape.last else { return (shape, strides) }
        var outShape = [last], outStrides = strides.map { [$0[$0.count - 1]] }
        for d in stride(from: shape.count - 2, through: 0, by: -1) where shape[d] != 1 {
            if strides.indices.allSatisfy({ strides[$0][d] == outStrides[$0][0] &* outShape[0] }) {
                outShape[0] &*= shape[d]
            } else {
                outShape.insert(shape[d], at: 0)
                for i in outStrides.indices { outStrides[i].insert(strides[i][d], at: 0) }
            }
        }
        return (outShape, outStrides)
    }

    /// x^y, with the exponents detection heads use (2, 1, 0.5) exact and fast.
    @inline(__always)
    static func power(_ x: Float, _ y: Float) -> Float {
        if y == 2 { return x * x }
        return Foundation.pow(x, y)
    }

    static func transpose(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                          threads: Int) {
        guard let inner = ys.last, inner > 0 else { return }
        let perm = s.perm ?? Array((0..<xs.count).reversed())
        let st = Reference.strides(xs)
        let permuted = perm.map { st[$0] }
        let step = permuted[ys.count - 1]
        nonisolated(unsafe) let (x, y) = (x, y)
        if step != 1, let a = permuted.firstIndex(of: 1), a < ys.count - 1, ys[a] >= 8, inner >= 8 {
            transposePlanes(x, permuted, y, ys, axis: a, threads: threads)
            return
        }
        let rows = ys.dropLast().reduce(1, *)
        rowsInParallel(rows, elements: rows &* inner, threads: threads) { lo, hi in
            forEachRow(ys, [permuted], rows: lo..<hi) { k, off in
                let yp = y + k &* inner, xp = x + off[0]
                for j in 0..<inner { yp[j] = xp[j &* step] }
            }
        }
    }

    /// A transpose whose output's innermost axis is not the input's: planes (output axis `axis`, which reads the input's
    /// innermost axis, by the output's innermost), one per index of the other axes, transposed in tiles
    /// (`mlk_transpose_plane`); planes, and strips of 64 columns of a plane, split across threads.
    static func transposePlanes(_ x: UnsafePointer<Float>, _ permuted: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                                axis a: Int, threads: Int) {
        nonisolated(unsafe) let (x, y) = (x, y)
        let last = ys.count - 1, inner = ys[last], step = permuted[last], rows = ys[a], ldy = Reference.strides(ys)[a]
        var outer = ys, xStrides = permuted, yStrides = Reference.strides(ys)
        outer.remove(at: a); xStrides.remove(at: a); yStrides.remove(at: a)
        let planes = outer.dropLast().reduce(1, *), strip = 64, strips = (inner + strip - 1) / strip
        let (outerShape, strides) = (outer, [xStrides, yStrides])
        rowsInParallel(planes &* strips, elements: planes &* rows &* inner, threads: threads) { lo, hi in
            for u in lo..<hi {
                let (plane, k) = u.quotientAndRemainder(dividingBy: strips)
                let j0 = k &* strip, cols = min(strip, inner &- j0)
                forEachRow(outerShape, strides, rows: plane..<(plane &+ 1)) { _, off in
                    mlk_transpose_plane(x + (off[0] &+ j0 &* step), Int64(step), y + (off[1] &+ j0), Int64(ldy), Int64(rows),
                                        Int64(cols))
                }
            }
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

extension Fast {
    // x (N,H,W,C) → y (N,OH,OW,C): whole channel rows at a time (the reference walks one channel at a time).
    static func pool(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                     threads: Int) {
        let (h, w, c) = (xs[1], xs[2], xs[3])
        let isMax = s.op == .maxPool
        nonisolated(unsafe) let (x, y) = (x, y)
        let rows = ys[0] &* ys[1]
        rowsInParallel(rows, elements: ys.reduce(1, &*), threads: threads) { lo, hi in
            for row in lo..<hi {
                let (b, oy) = row.quotientAndRemainder(dividingBy: ys[1])
                for ox in 0..<ys[2] {
                    let y0 = oy &* s.strides[0] &- s.pads[0], x0 = ox &* s.strides[1] &- s.pads[1]
                    let y1 = min(y0 &+ s.kernel[0], h &+ s.pads[2]), x1 = min(x0 &+ s.kernel[1], w &+ s.pads[3])
                    let out = y + ((b &* ys[1] &+ oy) &* ys[2] &+ ox) &* c
                    out.initialize(repeating: isMax ? -.infinity : 0, count: c)
                    var count = 0
                    for iy in max(y0, 0)..<max(min(y1, h), max(y0, 0)) {
                        for ix in max(x0, 0)..<max(min(x1, w), max(x0, 0)) {
                            let p = x + ((b &* h &+ iy) &* w &+ ix) &* c
                            if isMax { for ch in 0..<c { out[ch] = max(out[ch], p[ch]) } }
                            else { for ch in 0..<c { out[ch] += p[ch] } }
                            count &+= 1
                        }
                    }
                    if !isMax {
                        let inv = 1 / Float(s.countIncludePad ? (y1 &- y0) &* (x1 &- x0) : max(count, 1))
                        for ch in 0..<c { out[ch] *= inv }
                    }
                }
            }
        }
    }

    /// y = x · scale + shift along the last axis (an unfolded batchNorm).
    static func batchNorm(_ s: Step, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count n: Int) {
        let c = s.weightShape[0], scale = s.weight!.pointer, shift = s.bias!.pointer
        var i = 0
        while i < n {
            for ch in 0..<c { y[i &+ ch] = x[i &+ ch] * scale[ch] + shift[ch] }
            i &+= c
        }
    }
}
