extension ConvGeometry {
    /// Depthwise with one output channel per input channel: the fast kernels' direct loops.
    var isPlainDepthwise: Bool { isDepthwise && outChannels == channels }
    /// A 1×1, stride-1, unpadded convolution, whose im2col matrix is x itself (row stride C).
    var readsInputDirectly: Bool {
        kernelHeight == 1 && kernelWidth == 1 && strideH == 1 && strideW == 1
            && padTop == 0 && padLeft == 0 && padBottom == 0 && padRight == 0
    }
}

extension ConvKernels {
    /// Calls `body` with group `group`'s im2col matrix — (N·OH·OW) rows of the KH·KW·Cg inputs each output reads,
    /// zero where a tap falls outside x — and its row stride.
    static func withPatches(_ g: ConvGeometry, _ x: [Float], group: Int, _ body: (UnsafePointer<Float>, Int32) -> Void) {
        let c0 = group &* g.groupChannels
        if g.readsInputDirectly {
            x.withUnsafeBufferPointer { xb in
                guard let x0 = xb.baseAddress else { return }
                body(x0 + c0, Int32(g.channels))
            }
            return
        }
        let (cols, cg) = (g.patchColumns, g.groupChannels)
        var patches = [Float](repeating: 0, count: g.patchRows &* cols)
        x.withUnsafeBufferPointer { xb in
            patches.withUnsafeMutableBufferPointer { pb in
                guard let x0 = xb.baseAddress, let p0 = pb.baseAddress else { return }
                g.forEachTap { n, oy, ox, ky, kx, iy, ix in
                    let row = (n &* g.outHeight &+ oy) &* g.outWidth &+ ox
                    let tap = (ky &* g.kernelWidth &+ kx) &* cg
                    let xRow = ((n &* g.height &+ iy) &* g.width &+ ix) &* g.channels
                    let dst: Int = row &* cols &+ tap, src: Int = xRow &+ c0
                    (p0 + dst).update(from: x0 + src, count: cg)
                }
                body(p0, Int32(cols))
            }
        }
    }

    /// dx += the im2col matrix `dp` of group `group` added back onto the inputs each of its entries was read from.
    static func scatterPatches(_ g: ConvGeometry, _ dp: UnsafeBufferPointer<Float>, into dx: UnsafeMutableBufferPointer<Float>,
                               group: Int) {
        let (cols, cg, c0) = (g.patchColumns, g.groupChannels, group &* g.groupChannels)
        g.forEachTap { n, oy, ox, ky, kx, iy, ix in
            let row = (n &* g.outHeight &+ oy) &* g.outWidth &+ ox
            let src = row &* cols &+ (ky &* g.kernelWidth &+ kx) &* cg
            let dst = ((n &* g.height &+ iy) &* g.width &+ ix) &* g.channels &+ c0
            for i in 0..<cg { dx[dst &+ i] += dp[src &+ i] }
        }
    }

    /// y += the depthwise convolution of x (y holds the bias): every tap a pass over the channels.
    static func depthwiseForward(_ g: ConvGeometry, _ x: UnsafeBufferPointer<Float>, _ w: UnsafeBufferPointer<Float>,
                                 _ y: UnsafeMutableBufferPointer<Float>) {
        let c = g.channels
        g.forEachTap { n, oy, ox, ky, kx, iy, ix in
            let yRow = ((n &* g.outHeight &+ oy) &* g.outWidth &+ ox) &* c
            let xRow = ((n &* g.height &+ iy) &* g.width &+ ix) &* c
            let wTap = (ky &* g.kernelWidth &+ kx) &* c
            for k in 0..<c { y[yRow &+ k] += x[xRow &+ k] * w[wTap &+ k] }
        }
    }

    /// dx and dw of the depthwise convolution, tap by tap as the forward pass reads them.
    static func depthwiseBackward(_ g: ConvGeometry, _ x: UnsafeBufferPointer<Float>, _ w: UnsafeBufferPointer<Float>,
                                  _ dy: UnsafeBufferPointer<Float>, _ dx: UnsafeMutableBufferPointer<Float>,
                                  _ dw: UnsafeMutableBufferPointer<Float>) {
        let c = g.channels
        g.forEachTap { n, oy, ox, ky, kx, iy, ix in
            let yRow = ((n &* g.outHeight &+ oy) &* g.outWidth &+ ox) &* c
            let xRow = ((n &* g.height &+ iy) &* g.width &+ ix) &* c
            let wTap = (ky &* g.kernelWidth &+ kx) &* c
            for k in 0..<c {
                dx[xRow &+ k] += dy[yRow &+ k] * w[wTap &+ k]
                dw[wTap &+ k] += dy[yRow &+ k] * x[xRow &+ k]
            }
        }
    }
}
