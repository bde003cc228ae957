/// Convolution and its gradients written as their definitions, one tap at a time: the scalar reference that the
/// fast kernels (`ConvKernels`) are tested against, generic so the tests also run it in Double for central
/// differences. Layouts as `ConvGeometry` gives them; sums run in a fixed order.
///
///     y[n,oy,ox,o] = b[o] + Σ_{ky,kx,i} x[n, oy·sh − top + ky·dh, ox·sw − left + kx·dw, g·Cg + i] · w[ky,kx,i,o]
///     dx = Σ over the same taps of dy · w,  dw = Σ dy · x,  db[o] = Σ_{n,oy,ox} dy[n,oy,ox,o]
/// where g = o / OCg is the output channel's group and taps outside the input read zero.
public enum ConvReference {
    public static func forward<T: BinaryFloatingPoint>(_ g: ConvGeometry, x: [T], w: [T], bias: [T]?) throws -> [T] {
        try check(g, x: x.count, w: w.count, y: nil, bias: bias?.count)
        var y = [T](repeating: 0, count: g.outputCount)
        if let bias {
            for p in 0..<(g.outputCount / g.outChannels) {
                for o in 0..<g.outChannels { y[p * g.outChannels + o] = bias[o] }
            }
        }
        forEachProduct(g) { yi, xi, wi in y[yi] += x[xi] * w[wi] }
        return y
    }

    /// The gradients of Σ y·dy with respect to x, w and the bias.
    public static func backward<T: BinaryFloatingPoint>(_ g: ConvGeometry, x: [T], w: [T], dy: [T]) throws
        -> (dx: [T], dw: [T], db: [T]) {
        try check(g, x: x.count, w: w.count, y: dy.count, bias: nil)
        var dx = [T](repeating: 0, count: g.inputCount)
        var dw = [T](repeating: 0, count: g.weightCount)
        var db = [T](repeating: 0, count: g.outChannels)
        for p in 0..<(g.outputCount / g.outChannels) {
            for o in 0..<g.outChannels { db[o] += dy[p * g.outChannels + o] }
        }
        forEachProduct(g) { yi, xi, wi in
            dx[xi] += dy[yi] * w[wi]
            dw[wi] += dy[yi] * x[xi]
        }
        return (dx, dw, db)
    }

    /// Every product of the definition, tap by tap (`ConvGeometry.forEachTap`), then output channel, then input channel
    /// of its group: `body(yi, xi, wi)` for y[yi] += x[xi] · w[wi].
    static func forEachProduct(_ g: ConvGeometry, _ body: (Int, Int, Int) -> Void) {
        g.forEachTap { n, oy, ox, ky, kx, iy, ix in
            let yRow = ((n * g.outHeight + oy) * g.outWidth + ox) * g.outChannels
            let xRow = ((n * g.height + iy) * g.width + ix) * g.channels
            let wTap = (ky * g.kernelWidth + kx) * g.groupChannels
            for o in 0..<g.outChannels {
                let c0 = (o / g.groupOutChannels) * g.groupChannels
                for i in 0..<g.groupChannels { body(yRow + o, xRow + c0 + i, (wTap + i) * g.outChannels + o) }
            }
        }
    }

    /// Throws unless the arrays have the sizes the geometry needs (nil: not passed).
    static func check(_ g: ConvGeometry, x: Int, w: Int, y: Int?, bias: Int?) throws {
        let sizes = [("x", x, g.inputCount), ("w", w, g.weightCount), ("dy", y ?? g.outputCount, g.outputCount),
                     ("bias", bias ?? g.outChannels, g.outChannels)]
        for (name, actual, expected) in sizes where actual != expected {
            throw TrainError.shapeMismatch(what: "\(g): \(name)", expected: "\(expected) elements",
                                           actual: "\(actual)")
        }
    }
}
