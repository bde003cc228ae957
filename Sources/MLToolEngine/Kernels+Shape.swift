import MLToolCore

extension Reference {
    /// y = x's dimensions in the order of `perm` (all of them when nil), as floats.
    static func shape(_ s: Step, _ xs: [Int], _ y: UnsafeMutablePointer<Float>) {
        for (i, a) in (s.perm ?? Array(xs.indices)).enumerated() { y[i] = Float(xs[a]) }
    }

    /// y (shape ys) = x (shape xs, aligned to ys's trailing axes) broadcast: each output element reads the input
    /// element at its index, 0 along the axes x has as 1.
    static func expand(_ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let st = Fast.broadcastStrides(xs, rank: ys.count)
        for i in 0..<ys.reduce(1, *) {
            let idx = unravel(i, ys)
            var src = 0
            for d in ys.indices { src += idx[d] * st[d] }
            y[i] = x[src]
        }
    }
}
