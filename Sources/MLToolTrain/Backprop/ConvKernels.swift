import COpenBLAS

/// Convolution forward and backward for training, fast: each group through SGEMM on its im2col matrix (1×1 stride-1
/// unpadded convolutions read x itself), depthwise with a channel multiplier of 1 as direct loops over the channels.
/// Tested against `ConvReference`. Sizes are checked once (`ConvReference.check`); inside, the loops index with
/// wrapping arithmetic on buffers the geometry bounds. Single-threaded apart from OpenBLAS, whose products give the
/// same bits for the same thread count.
public enum ConvKernels {
    public static func forward(_ g: ConvGeometry, x: [Float], w: [Float], bias: [Float]?) throws -> [Float] {
        try ConvReference.check(g, x: x.count, w: w.count, y: nil, bias: bias?.count)
        var y = [Float](repeating: 0, count: g.outputCount)
        if let bias { fillRows(&y, with: bias) }
        if g.isPlainDepthwise {
            x.withUnsafeBufferPointer { xb in w.withUnsafeBufferPointer { wb in y.withUnsafeMutableBufferPointer { yb in
                depthwiseForward(g, xb, wb, yb)
            } } }
            return y
        }
        let (ocg, oc) = (Int32(g.groupOutChannels), Int32(g.outChannels))
        w.withUnsafeBufferPointer { wb in y.withUnsafeMutableBufferPointer { yb in
            guard let w0 = wb.baseAddress, let y0 = yb.baseAddress else { return }
            for group in 0..<g.groups {
                let o0 = group &* g.groupOutChannels
                withPatches(g, x, group: group) { p, ldp in
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(g.patchRows), ocg,
                                Int32(g.patchColumns), 1, p, ldp, w0 + o0, oc, 1, y0 + o0, oc)
                }
            }
        } }
        return y
    }

    /// The gradients of Σ y·dy with respect to x, w and the bias, as `ConvReference.backward` defines them.
    public static func backward(_ g: ConvGeometry, x: [Float], w: [Float], dy: [Float]) throws
        -> (dx: [Float], dw: [Float], db: [Float]) {
        try ConvReference.check(g, x: x.count, w: w.count, y: dy.count, bias: nil)
        var dx = [Float](repeating: 0, count: g.inputCount)
        var dw = [Float](repeating: 0, count: g.weightCount)
        let db = columnSums(dy, columns: g.outChannels)
        if g.isPlainDepthwise {
            x.withUnsafeBufferPointer { xb in w.withUnsafeBufferPointer { wb in dy.withUnsafeBufferPointer { yb in
                dx.withUnsafeMutableBufferPointer { dxb in dw.withUnsafeMutableBufferPointer { dwb in
                    depthwiseBackward(g, xb, wb, yb, dxb, dwb)
                } }
            } } }
            return (dx, dw, db)
        }
        let (rows, cols, ocg, oc) = (Int32(g.patchRows), Int32(g.patchColumns), Int32(g.groupOutChannels),
                                     Int32(g.outChannels))
        var dPatches = [Float](repeating: 0, count: g.patchRows &* g.patchColumns)
        w.withUnsafeBufferPointer { wb in dy.withUnsafeBufferPointer { yb in dw.withUnsafeMutableBufferPointer { dwb in
            guard let w0 = wb.baseAddress, let dy0 = yb.baseAddress, let dw0 = dwb.baseAddress else { return }
            for group in 0..<g.groups {
                let o0 = group &* g.groupOutChannels
                // dW_g = P_gᵀ · dY_g
                withPatches(g, x, group: group) { p, ldp in
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cols, ocg, rows, 1, p, ldp, dy0 + o0, oc,
                                0, dw0 + o0, oc)
                }
                // dP_g = dY_g · W_gᵀ, scattered back onto x's taps
                dPatches.withUnsafeMutableBufferPointer { dp in
                    guard let dp0 = dp.baseAddress else { return }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, ocg, 1, dy0 + o0, oc, w0 + o0, oc,
                                0, dp0, cols)
                    dx.withUnsafeMutableBufferPointer { scatterPatches(g, UnsafeBufferPointer(dp), into: $0, group: group) }
                }
            }
        } } }
        return (dx, dw, db)
    }

    /// y's rows (each `row.count` long) set to `row`.
    static func fillRows(_ y: inout [Float], with row: [Float]) {
        let n = row.count
        y.withUnsafeMutableBufferPointer { yb in
            row.withUnsafeBufferPointer { rb in
                guard let y0 = yb.baseAddress, let r0 = rb.baseAddress, n > 0 else { return }
                for p in 0..<(yb.count / n) { (y0 + p &* n).update(from: r0, count: n) }
            }
        }
    }

    /// The sums of the columns of a row-major matrix with `columns` columns, row by row in order.
    static func columnSums(_ m: [Float], columns: Int) -> [Float] {
        var sums = [Float](repeating: 0, count: columns)
        m.withUnsafeBufferPointer { mb in
            sums.withUnsafeMutableBufferPointer { sb in
                for r in 0..<(mb.count / columns) {
                    let row = r &* columns
                    for c in 0..<columns { sb[c] += mb[row &+ c] }
                }
            }
        }
        return sums
    }
}
