import CMLToolKernels
import Foundation

/// A conv whose output feeds only a depthwise conv, run band by band: the first conv fills a few rows of its output
/// into a buffer in the scratch, the depthwise conv reads them from there while they are in cache, and the full
/// tensor between them is never written out and read back. Two kinds of first conv: an "expand" 1×1 conv (the first
/// half of an inverted residual block: 4.8 MB at 112×112×96), a GEMM over the band's pixels; and a stem (a
/// network's first conv, few input channels: `Fast.isStem`; 1.6 MB at 112×112×32 in EfficientNet-Lite0), by
/// `mlk_conv_rows` over the band's rows. Rows shared by two bands are kept, not recomputed. Each value is computed
/// by the same kernel call on the same inputs as unfused, so outputs are identical.
enum Fused {
    /// Depthwise output rows per band.
    static let bandRows = 4

    /// Whether `e` then `d` can run fused (the plan also checks that `d` is the only reader of `e`'s output).
    static func fusable(_ e: Step, _ ex: [Int], _ d: Step, _ dx: [Int]) -> Bool {
        // int8 weights only when packed: kept indices (`QuantizedWeights.kept`) would be decoded for every band.
        // Nor a dynamic quantization's codes: their pair comes from the whole input, which a band does not see.
        let expand = (e.packed != nil || e.qweights?.packed != nil || e.palette != nil) && Fast.readsInputDirectly(e)
            && e.qweights?.readsDynamicCodes != true && e.qweights?.readsStoredCodes != true
        let stem = (e.packed != nil || e.palette != nil) && e.qweights == nil && e.winograd == nil && Fast.isStem(e, ex)
        return e.op == .conv && e.groups == 1 && ex.count == 4 && (expand || stem) &&
            d.op == .conv && d.inputs == [e.output] && dx.count == 4 && Fast.isDepthwise(d, dx) &&
            d.dilations == [1, 1] && d.weight != nil &&
            // Only where the tensor between them is too big to stay in cache anyway.
            dx[1] &* dx[2] &* dx[3] >= 256 * 1024
    }

    /// Floats of scratch one thread's band buffer takes (and, with int8 weights, its quantized input rows; for a
    /// stem, the im2col rows of one output row).
    static func bandFloats(_ e: Step, _ d: Step, _ dx: [Int]) -> Int {
        let rows = (bandRows - 1) &* d.strides[0] &+ d.weightShape[0]
        let q = e.qweights.map { $0.scratchFloats(rows: rows &* dx[2]) } ?? 0
        let cols = Fast.readsInputDirectly(e) ? 0 : dx[2] &* e.weightShape[0] &* e.weightShape[1] &* e.weightShape[2]
        return rows &* dx[2] &* dx[3] &+ q &+ cols
    }

    // x (N, XH, XW, Cin) → e's output (N, H, W, C), never stored whole (es: its shape) → y (N, OH, OW, C)
    static func run(_ e: Step, _ d: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ es: [Int],
                    _ y: UnsafeMutablePointer<Float>, _ ys: [Int], scratch: UnsafeMutablePointer<Float>, threads: Int) {
        let (batch, h, w, c) = (es[0], es[1], es[2], es[3])
        let (xh, xw, cin) = (xs[1], xs[2], xs[3])
        let (kh, kw) = (d.weightShape[0], d.weightShape[1])
        let (oh, ow) = (ys[1], ys[2])
        let (sh, pt) = (d.strides[0], d.pads[0])
        let rowFloats = w &* c, band = bandFloats(e, d, es)
        let bandRowsIn = (bandRows - 1) &* d.strides[0] &+ kh
        let qw = e.qweights, ldq = Int(mlk_qrow_bytes(Int64(cin)))
        let stem = !Fast.readsInputDirectly(e)
        let (ekh, ekw) = (e.weightShape[0], e.weightShape[1])
        let (est, edl, epd) = (e.strides, e.dilations, e.pads)
        let work = h &* w &* ekh &* ekw &* cin &* c &+ oh &* ow &* c &* kh &* kw
        let parts = work >= Fast.parallelThreshold ? max(1, min(threads, oh / bandRows)) : 1
        if let palette = e.palette, let decoded = e.packed { palette.unpack(into: decoded.pointer, threads: threads) }
        nonisolated(unsafe) let packed = e.packed.map { UnsafePointer($0.pointer) }
        nonisolated(unsafe) let dwt = UnsafePointer(d.weight!.pointer)
        nonisolated(unsafe) let (eb, db) = (e.bias.map { UnsafePointer($0.pointer) }, d.bias.map { UnsafePointer($0.pointer) })
        nonisolated(unsafe) let scratch = scratch
        let (ea, da, st, dl, pd) = (e.act, d.act, d.strides, d.dilations, d.pads)
        for b in 0..<batch {
            nonisolated(unsafe) let xb = x + b &* xh &* xw &* cin, yb = y + b &* oh &* ow &* c
            let per = (oh + parts - 1) / parts
            let part: @Sendable (Int) -> Void = { i in
                let buf = scratch + i &* band
                var have0 = 0, have1 = 0   // expanded rows [have0, have1) are in buf, row r at (r − have0)·rowFloats
                var oy0 = i &* per
                let end = min(oh, oy0 &+ per)
                while oy0 < end {
                    let oy1 = min(oy0 &+ bandRows, end)
                    let r0 = max(0, oy0 &* sh &- pt), r1 = min(h, (oy1 &- 1) &* sh &- pt &+ kh)
                    var start = r0
                    if r0 >= have0 && r0 < have1 {
                        // Rows this band shares with the last one: moved to the front.
                        memmove(buf, buf + (r0 &- have0) &* rowFloats, (have1 &- r0) &* rowFloats &* 4)
                        start = have1
                    }
                    if start < r1, stem {
                        // A stem: its output rows [start, r1), a row of pixels at a time (im2col rows after the band).
                        mlk_conv_rows(xb, Int64(xh), Int64(xw), Int64(cin), Int64(ekh), Int64(ekw), packed!, Int64(c),
                                      Int64(w), Int64(start &* w), Int64(r1 &* w), Int64(est[0]), Int64(est[1]),
                                      Int64(edl[0]), Int64(edl[1]), Int64(epd[0]), Int64(epd[1]), eb,
                                      buf - r0 &* rowFloats, buf + bandRowsIn &* rowFloats, ea.code, ea.p0, ea.p1)
                    } else if start < r1, let qw {
                        // int8 weights: the band's input rows quantized per row (as unfused), after the band buffer.
                        let rows = (r1 &- start) &* w
                        let raw = UnsafeMutableRawPointer(buf + bandRowsIn &* rowFloats)
                        let q = raw.assumingMemoryBound(to: UInt8.self)
                        let scaleOffset = (bandRowsIn &* w &* ldq &+ 63) / 64 &* 64
                        let scales = (raw + scaleOffset).assumingMemoryBound(to: Float.self)
                        let zps = (raw + (scaleOffset &+ bandRowsIn &* w &* 4)).assumingMemoryBound(to: Int32.self)
                        qw.quantizeRows(xb + start &* w &* cin, lda: cin, rows: rows, q, ldq: ldq, scales, zps)
                        mlk_qgemm(q, Int64(ldq), scales, zps, qw.packed, qw.colsum, qw.scales, 0, Int64(rows), Int64(c),
                                  Int64(cin), eb, nil, buf + (start &- r0) &* rowFloats, Int64(c), ea.code, ea.p0, ea.p1,
                                  qw.wide)
                    } else if start < r1 {
                        mlk_gemm_packed(xb + start &* w &* cin, Int64(cin), packed!, 0, Int64((r1 &- start) &* w), Int64(c),
                                        Int64(cin), eb, buf + (start &- r0) &* rowFloats, Int64(c), ea.code, ea.p0, ea.p1)
                    }
                    (have0, have1) = (r0, max(start, r1))
                    // The buffer seen as the whole expanded image: the depthwise conv reads only rows [r0, r1).
                    mlk_depthwise(buf - r0 &* rowFloats, Int64(h), Int64(w), Int64(c), dwt, Int64(kh), Int64(kw), db,
                                  yb, Int64(oy0), Int64(oy1), Int64(ow), Int64(st[0]), Int64(st[1]), Int64(dl[0]),
                                  Int64(dl[1]), Int64(pd[0]), Int64(pd[1]), da.code, da.p0, da.p1)
                    oy0 = oy1
                }
            }
            if parts == 1 { part(0) } else { WorkerPool.shared(helpers: threads - 1).run(parts, part) }
        }
    }
}

/// A 1×1 conv or a dense layer (dense, matMul on constant weights) without activation whose output only the next step
/// reads, an add of a value of the same shape (a residual block's projection and its skip connection; a transformer's
/// attention output or MLP projection and the residual stream): one GEMM adds that value in its epilogue
/// (`mlk_gemm_packed_res`; `mlk_qgemm` for int8 weights), so the layer's output is never written and read back and the
/// add is not a step of its own. Each output is (Σ + bias) + r, then the add's activation: the bits of the two steps.
enum FusedResidual {
    /// The add's activations whose vector and scalar forms agree bit for bit (the GEMM epilogue and `mlk_add_act`
    /// may apply them at different widths).
    static let exactActivations: Set<Int32> = [Int32(MLK_ACT_NONE), Int32(MLK_ACT_RELU), Int32(MLK_ACT_CLIP),
                                               Int32(MLK_ACT_LEAKY)]

    /// The index in `a.inputs` of the value added to `c`'s output when the two fuse; nil when they do not.
    static func otherInput(_ c: Step, _ cx: [Int], _ a: Step, _ ax: [[Int]?]) -> Int? {
        guard isProjection(c, cx), c.act.isNone, c.packed != nil || c.palette != nil || c.qweights != nil,
              a.op == .add, a.inputs.count == 2, a.inputs[0] != a.inputs[1], exactActivations.contains(a.act.code),
              ax.count == 2, let s0 = ax[0], s0 == ax[1] else { return nil }
        if a.inputs[0] == c.output { return 1 }
        if a.inputs[1] == c.output { return 0 }
        return nil
    }

    /// A step that multiplies the rows of its input (its last axis) by a weight matrix read in place: a 1×1 conv on
    /// NHWC (not Winograd, not a depthwise one on float weights) or a dense layer.
    static func isProjection(_ c: Step, _ cx: [Int]) -> Bool {
        switch c.op {
        case .conv:
            return c.groups == 1 && Fast.readsInputDirectly(c) && cx.count == 4 && c.winograd == nil
                && !(Fast.isDepthwise(c, cx) && c.weight != nil)
        case .dense, .matMul: return Fast.runsOnGemm(c) && cx.count >= 2 && c.weightShape.first == cx.last
        default: return false
        }
    }

    /// y = act(c(x) + r): every row of x (all axes but the last: the whole batch's pixels, or its tokens) as the rows
    /// of one GEMM reading x in place; int8 weights quantize those rows into `scratch` (`Fast.scratchCount` of c).
    static func run(_ c: Step, _ x: UnsafePointer<Float>, _ xs: [Int], residual r: UnsafePointer<Float>,
                    _ y: UnsafeMutablePointer<Float>, _ ys: [Int], act: Act, scratch: UnsafeMutablePointer<Float>,
                    threads: Int) {
        let rows = xs.dropLast().reduce(1, &*), k = xs[xs.count - 1]
        if rows == 0 { return }
        let bias = c.bias.map { UnsafePointer($0.pointer) }
        if let q = c.qweights {
            Fast.quantizedGemm(x, lda: k, q, rows: rows, bias: bias, y, act: act, scratch: scratch,
                               threads: threads, residual: r, dynamic: q.dynamicCodes(x, count: rows &* k))
            return
        }
        guard let packed = c.packed else { preconditionFailure("conv '\(c.name)': no packed weights (Program.compile)") }
        Fast.packedGemm(x, lda: k, packed.pointer, rows: rows, n: ys[ys.count - 1], k: k, bias: bias, y, act: act,
                        threads: threads, palette: c.palette, residual: r)
    }
}
