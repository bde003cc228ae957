import Foundation
import MLToolCore

/// Reference kernels of the reductions along axes: `reduce`, `argMax`, `logSoftmax` and `hardmax`.
extension Reference {
    /// y = x with the reduced axes of size 1, each output the reduction of the input elements that map to it.
    static func reduce(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let f = s.reduce ?? .sum   // compile sets it
        let outStrides = strides(ys)
        var groups = [[Float]](repeating: [], count: ys.reduce(1, *))
        for i in 0..<xs.reduce(1, *) {
            let idx = unravel(i, xs)
            var o = 0
            for d in 0..<xs.count where ys[d] != 1 { o += idx[d] * outStrides[d] }
            groups[o].append(x[i])
        }
        for (o, g) in groups.enumerated() { y[o] = f.reduced(g) }
    }

    /// Along `axis`: the index of the largest (smallest) value, the first or the last of equal ones; NaN is extreme.
    static func argMax(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>) {
        let ax = try! Program.axis(s.axis ?? 0, rank: xs.count, s)   // validated by shape inference
        let outer = xs[..<ax].reduce(1, *), n = xs[ax], inner = xs[(ax + 1)...].reduce(1, *)
        for o in 0..<outer {
            for i in 0..<inner {
                var best = 0
                for j in 1..<n where better(x[(o * n + j) * inner + i], than: x[(o * n + best) * inner + i], s) { best = j }
                y[o * inner + i] = Float(best)
            }
        }
    }

    /// Whether a later value `v` replaces the current extreme `e`.
    @inline(__always)
    static func better(_ v: Float, than e: Float, _ s: Step) -> Bool {
        if e.isNaN { return s.selectLast && v.isNaN }
        if v.isNaN { return true }
        if v == e { return s.selectLast }
        return s.largest ? v > e : v < e
    }

    /// log(softmax(x)) along `axis`, or hardmax: 1 at the first maximum, 0 elsewhere.
    static func logSoftmaxOrHardmax(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>) {
        let ax = try! Program.axis(s.axis ?? -1, rank: xs.count, s)   // validated by shape inference
        let outer = xs[..<ax].reduce(1, *), len = xs[ax], inner = xs[(ax + 1)...].reduce(1, *)
        for o in 0..<outer {
            for i in 0..<inner {
                let at = { (j: Int) in (o * len + j) * inner + i }
                var m = -Float.infinity, first = 0
                for j in 0..<len where x[at(j)] > m || x[at(j)].isNaN && !m.isNaN { m = x[at(j)]; first = j }
                if s.op == .hardmax {
                    for j in 0..<len { y[at(j)] = j == first ? 1 : 0 }
                    continue
                }
                var sum: Double = 0   // as softmax: a float sum loses a long peaked row's small terms
                for j in 0..<len { sum += Double(exp(x[at(j)] - m)) }
                let logSum = log(Float(sum)) + m
                for j in 0..<len { y[at(j)] = x[at(j)] - logSum }
            }
        }
    }
}

extension ReduceFunction {
    /// The reduction of `values` (the definition; an empty set gives the function's identity). Sums accumulate in
    /// double (a float sum over a large feature map, PP-OCR's 57,600-element means, drifts by 1e-4) and round once.
    public func reduced(_ values: [Float]) -> Float {
        func total(_ f: (Float) -> Double) -> Double { values.reduce(0) { $0 + f($1) } }
        switch self {
        case .sum: return Float(total { Double($0) })
        case .mean: return Float(total { Double($0) } / Double(values.count))
        case .max: return values.reduce(-Float.infinity) { $0.isNaN || $1.isNaN ? .nan : Swift.max($0, $1) }
        case .min: return values.reduce(Float.infinity) { $0.isNaN || $1.isNaN ? .nan : Swift.min($0, $1) }
        case .prod: return values.reduce(1, *)
        case .l1: return Float(total { Double(abs($0)) })
        case .l2: return Float(total { Double($0) * Double($0) }.squareRoot())
        case .logSum: return Float(log(total { Double($0) }))
        case .logSumExp:
            let m = ReduceFunction.max.reduced(values)
            guard m.isFinite else { return m }
            return Float(log(total { Double(exp($0 - m)) })) + m
        case .sumSquare: return Float(total { Double($0) * Double($0) })
        }
    }
}

extension Fast {
    /// `reduce` without per-element index arithmetic: the offsets of one output's inputs are listed once (in input
    /// order, so the sums are the reference's, bit for bit), and each output adds its own base offset.
    static func reduce(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                       threads: Int) {
        guard let inner = ys.last, !xs.isEmpty else { Reference.run(s, [x], [xs], y, ys); return }
        let f = s.reduce ?? .sum
        let st = Reference.strides(xs)
        let offsets = xs.indices.filter { ys[$0] == 1 && xs[$0] != 1 }.reduce([0]) { list, d in
            list.flatMap { o in (0..<xs[d]).map { o &+ $0 &* st[d] } }
        }
        let kept = xs.indices.map { ys[$0] == 1 ? 0 : st[$0] }
        let step = kept[ys.count - 1]
        nonisolated(unsafe) let (x, y) = (x, y)
        let rows = ys.dropLast().reduce(1, *)
        rowsInParallel(rows, elements: xs.reduce(1, &*), threads: threads) { lo, hi in
            offsets.withUnsafeBufferPointer { offs in
                forEachRow(ys, [kept], rows: lo..<hi) { k, off in
                    for j in 0..<inner { y[k &* inner &+ j] = f.reduced(x + (off[0] &+ j &* step), offs) }
                }
            }
        }
    }
}

extension ReduceFunction {
    /// The reduction of x[offsets[0]], x[offsets[1]], …, in that order (as `reduced(_:)` of those values).
    @inline(__always)
    func reduced(_ x: UnsafePointer<Float>, _ offsets: UnsafeBufferPointer<Int>) -> Float {
        switch self {
        case .sum, .mean, .logSum:
            var a: Double = 0
            for o in offsets { a += Double(x[o]) }
            return self == .sum ? Float(a) : self == .mean ? Float(a / Double(offsets.count)) : Float(log(a))
        case .max, .min, .logSumExp:
            var m: Float = self == .min ? .infinity : -.infinity
            for o in offsets {
                let v = x[o]
                if v.isNaN || m.isNaN { m = .nan } else { m = self == .min ? Swift.min(m, v) : Swift.max(m, v) }
            }
            guard self == .logSumExp, m.isFinite else { return m }
            var a: Double = 0
            for o in offsets { a += Double(exp(x[o] - m)) }
            return Float(log(a)) + m
        case .prod:
            var a: Float = 1
            for o in offsets { a *= x[o] }
            return a
        case .l1:
            var a: Double = 0
            for o in offsets { a += Double(abs(x[o])) }
            return Float(a)
        case .l2, .sumSquare:
            var a: Double = 0
            for o in offsets { a += Double(x[o]) * Double(x[o]) }
            return Float(self == .l2 ? a.squareRoot() : a)
        }
    }
}
