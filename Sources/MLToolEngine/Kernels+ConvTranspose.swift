import CMLToolKernels
import MLToolCore

// Transposed convolution (ONNX ConvTranspose): x (N,H,W,C), w (C,KH,KW,OC/groups), b? (OC) → y (N,OH,OW,OC).
// Input pixel (iy, ix) of channel c in group g adds x·w[c, ky, kx, o] to output pixel
// (iy·sh − top + ky·dh, ix·sw − left + kx·dw), channel g·OC/groups + o, when that pixel is inside the output.

extension Reference {
    /// The scatter definition: every input pixel's contribution added where it lands, then the activation.
    static func convTranspose(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let (h, w, c) = (xs[1], xs[2], xs[3])
        let (kh, kw, ocg) = (s.weightShape[1], s.weightShape[2], s.weightShape[3])
        let (oh, ow, oc) = (ys[1], ys[2], ys[3])
        let cg = c / s.groups
        let wt = s.weight!.pointer
        for b in 0..<ys[0] {
            for p in 0..<(oh * ow) {
                for o in 0..<oc { y[(b * oh * ow + p) * oc + o] = s.bias?.pointer[o] ?? 0 }
            }
            for iy in 0..<h {
                for ix in 0..<w {
                    for ci in 0..<c {
                        let g = ci / cg
                        let v = x[((b * h + iy) * w + ix) * c + ci]
                        for ky in 0..<kh {
                            let oy = iy * s.strides[0] - s.pads[0] + ky * s.dilations[0]
                            if oy < 0 || oy >= oh { continue }
                            for kx in 0..<kw {
                                let ox = ix * s.strides[1] - s.pads[1] + kx * s.dilations[1]
                                if ox < 0 || ox >= ow { continue }
                                for o in 0..<ocg {
                                    y[((b * oh + oy) * ow + ox) * oc + g * ocg + o] += v * wt[((ci * kh + ky) * kw + kx) * ocg + o]
                                }
                            }
                        }
                    }
                }
            }
        }
        for i in 0..<ys.reduce(1, *) { y[i] = s.act.apply(y[i]) }
    }
}

extension Fast {
    /// Floats of column scratch a convTranspose step needs: `convTransposeBlockRows` input rows of one group.
    static func convTransposeScratch(_ s: Step, _ xs: [Int]) -> Int {
        guard xs.count == 4 else { return 0 }
        let n = s.weightShape[1] &* s.weightShape[2] &* s.weightShape[3]
        return convTransposeBlockRows(s, xs) &* xs[2] &* n
    }

    /// Input rows whose columns are computed at once: as many as fit in 2M floats (8 MB), at least one.
    static func convTransposeBlockRows(_ s: Step, _ xs: [Int]) -> Int {
        let perRow = max(1, xs[2] &* s.weightShape[1] &* s.weightShape[2] &* s.weightShape[3])
        return max(1, min(xs[1], (1 << 21) / perRow))
    }

    /// A GEMM of a block of input rows with every group's weights into columns (pixels × (KH·KW·OC/groups)), then
    /// col2im: each output row gathers what lands on it from the block's columns, output rows split across threads.
    /// Blocks and groups run in a fixed order, so an output's sum does not depend on the split.
    static func convTranspose(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                              _ scratch: UnsafeMutablePointer<Float>, _ threads: Int) {
        let (batch, h, w, c) = (xs[0], xs[1], xs[2], xs[3])
        let (kh, kw, ocg) = (s.weightShape[1], s.weightShape[2], s.weightShape[3])
        let (oh, ow, oc) = (ys[1], ys[2], ys[3])
        let groups = s.groups, cg = c / groups, n = kh &* kw &* ocg
        let (sh, sw, dh, dw, pt, pl) = (s.strides[0], s.strides[1], s.dilations[0], s.dilations[1], s.pads[0], s.pads[1])
        let block = convTransposeBlockRows(s, xs)
        nonisolated(unsafe) let cols = scratch
        for b in 0..<batch {
            nonisolated(unsafe) let xb = x + b &* h &* w &* c, yb = y + b &* oh &* ow &* oc
            for p in 0..<(oh &* ow) {
                let row = yb + p &* oc
                if let bias = s.bias { row.update(from: bias.pointer, count: oc) } else { row.initialize(repeating: 0, count: oc) }
            }
            var r0 = 0
            while r0 < h {
                let r1 = min(h, r0 &+ block), rows = (r1 &- r0) &* w
                for g in 0..<groups {
                    let a = xb + (r0 &* w &* c &+ g &* cg)
                    if let packed = s.packed {
                        packedGemm(a, lda: c, packed.pointer, rows: rows, n: n, k: c, bias: nil, cols, act: .none, threads: threads)
                    } else if let wt = s.weight {
                        sgemm(rows, n, cg, a, c, wt.pointer + g &* cg &* n, n, cols, n)
                    } else {
                        preconditionFailure("convTranspose '\(s.name)': neither packed nor loaded weights (Program.compile)")
                    }
                    // Output rows this block reaches.
                    let lo = max(0, r0 &* sh &- pt), hi = min(oh, (r1 &- 1) &* sh &- pt &+ (kh &- 1) &* dh &+ 1)
                    if lo >= hi { continue }
                    let parts = (hi &- lo) &* ow &* kh &* kw &* ocg >= copyParallelThreshold ? threads : 1
                    let (rowStart, channel) = (r0, g &* ocg)
                    parallel(hi &- lo, parts: parts) { l, e in
                        for oy in (lo &+ l)..<(lo &+ e) {
                            for ky in 0..<kh {
                                let t = oy &+ pt &- ky &* dh
                                guard t >= 0, t % sh == 0 else { continue }
                                let iy = t / sh
                                guard iy >= rowStart, iy < r1 else { continue }
                                let colRow = cols + ((iy &- rowStart) &* w &* n &+ ky &* kw &* ocg)
                                for ox in 0..<ow {
                                    let out = yb + ((oy &* ow &+ ox) &* oc &+ channel)
                                    for kx in 0..<kw {
                                        let u = ox &+ pl &- kx &* dw
                                        guard u >= 0, u % sw == 0 else { continue }
                                        let ix = u / sw
                                        guard ix < w else { continue }
                                        let src = colRow + (ix &* n &+ kx &* ocg)
                                        for o in 0..<ocg { out[o] += src[o] }
                                    }
                                }
                            }
                        }
                    }
                }
                r0 = r1
            }
        }
        if !s.act.isNone {
            mlk_bias_act(y, Int64(batch &* oh &* ow), Int64(oc), nil, s.act.code, s.act.p0, s.act.p1)
        }
    }
}
