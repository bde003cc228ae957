import CMLToolKernels
import Foundation
import Testing
import MLToolTestSupport

/// `mlk_depthwise` itself against a scalar reference that computes each output as the kernels document it: from
/// the bias, one fused multiply-add per tap over ky, then kx, in order. At the SIMD levels every path — the six-pixel
/// stride-1 kernels, the four- and eight-pixel ones, border runs of up to eight pixels, border pixels with four or
/// two chains, channel tails — must
/// give exactly those bits; the portable level (no FMA instruction) must be within rounding.
@Suite(.serialized) struct DepthwiseKernelTests {
    struct Shape: CustomStringConvertible {
        let h, w, c, k, stride, dilation: Int
        var description: String { "\(h)×\(w)×\(c) k\(k) s\(stride) d\(dilation)" }
    }

    static let shapes = [
        Shape(h: 7, w: 29, c: 32, k: 3, stride: 1, dilation: 1),    // long rows: six-pixel runs and their ends
        Shape(h: 6, w: 23, c: 48, k: 5, stride: 1, dilation: 1),
        Shape(h: 7, w: 7, c: 200, k: 5, stride: 1, dilation: 1),    // a 7 × 7 map: every pixel a border pixel
        Shape(h: 9, w: 14, c: 72, k: 3, stride: 1, dilation: 1),
        Shape(h: 11, w: 17, c: 24, k: 5, stride: 2, dilation: 1),
        Shape(h: 8, w: 19, c: 40, k: 3, stride: 2, dilation: 1),
        Shape(h: 9, w: 13, c: 16, k: 3, stride: 1, dilation: 2),
        Shape(h: 6, w: 15, c: 19, k: 3, stride: 1, dilation: 1),    // channels not a multiple of 8
        Shape(h: 5, w: 12, c: 8, k: 7, stride: 1, dilation: 1),
        // Border runs of up to eight pixels (AVX-512, stride 1, channels a multiple of 16): a 14-wide row as runs of
        // 8 and 6, a 3 × 3 kernel on rows of at most 8, a 10-wide row; stride 2 onto a 7 × 7 map (pixel by pixel).
        Shape(h: 14, w: 14, c: 96, k: 5, stride: 1, dilation: 1),
        Shape(h: 14, w: 13, c: 64, k: 5, stride: 2, dilation: 1),
        Shape(h: 7, w: 7, c: 48, k: 3, stride: 1, dilation: 1),
        Shape(h: 13, w: 15, c: 32, k: 3, stride: 2, dilation: 1),
        Shape(h: 6, w: 10, c: 16, k: 5, stride: 1, dilation: 1),
        Shape(h: 5, w: 8, c: 24, k: 5, stride: 1, dilation: 1),     // AVX2's border runs (8-lane blocks)
    ]

    @Test func simdLevelsGiveTheDocumentedSumsBitForBit() throws {
        var cases = 0
        let levels = try forEachCPULevel { level in
            for (i, shape) in Self.shapes.enumerated() {
                // No activation, ReLU and clip: the ones whose vector and scalar forms are exact.
                let act = [Int32(MLK_ACT_NONE), Int32(MLK_ACT_RELU), Int32(MLK_ACT_CLIP)][i % 3]
                try check(shape, act: act, bias: i % 2 == 0, exact: level > 0, level: level)
                cases += 1
            }
        }
        #expect(!levels.isEmpty && cases == Self.shapes.count * levels.count)
    }

    func check(_ s: Shape, act: Int32, bias useBias: Bool, exact: Bool, level: Int32) throws {
        let pad = (s.k - 1) * s.dilation / 2
        let oh = (s.h + 2 * pad - (s.k - 1) * s.dilation - 1) / s.stride + 1
        let ow = (s.w + 2 * pad - (s.k - 1) * s.dilation - 1) / s.stride + 1
        let x = (0..<(s.h * s.w * s.c)).map { Float(sin(Double($0) * 0.013)) }
        let w = (0..<(s.k * s.k * s.c)).map { Float(cos(Double($0) * 0.29)) / Float(s.k) }
        let bias = (0..<s.c).map { Float($0 % 5) * 0.3 - 0.6 }
        var y = [Float](repeating: .nan, count: oh * ow * s.c)
        y.withUnsafeMutableBufferPointer { yp in
            mlk_depthwise(x, Int64(s.h), Int64(s.w), Int64(s.c), w, Int64(s.k), Int64(s.k), useBias ? bias : nil,
                          yp.baseAddress, 0, Int64(oh), Int64(ow), Int64(s.stride), Int64(s.stride), Int64(s.dilation),
                          Int64(s.dilation), Int64(pad), Int64(pad), act, 0, 6)
        }
        var want = [Float](repeating: 0, count: y.count)
        for oy in 0..<oh {
            for ox in 0..<ow {
                for c in 0..<s.c {
                    var acc: Float = useBias ? bias[c] : 0
                    for ky in 0..<s.k {
                        let iy = oy * s.stride - pad + ky * s.dilation
                        guard iy >= 0 && iy < s.h else { continue }
                        for kx in 0..<s.k {
                            let ix = ox * s.stride - pad + kx * s.dilation
                            guard ix >= 0 && ix < s.w else { continue }
                            // addingProduct: one fused multiply-add, one rounding (as vfmadd231ps per lane).
                            acc = acc.addingProduct(x[(iy * s.w + ix) * s.c + c], w[(ky * s.k + kx) * s.c + c])
                        }
                    }
                    if act == Int32(MLK_ACT_RELU) { acc = max(acc, 0) }
                    if act == Int32(MLK_ACT_CLIP) { acc = min(max(acc, 0), 6) }
                    want[(oy * ow + ox) * s.c + c] = acc
                }
            }
        }
        // The output starts as NaN: an output the kernel never wrote fails both comparisons.
        if exact {
            let differ = zip(y, want).filter { $0.bitPattern != $1.bitPattern }.count
            let how = Closeness.mismatch(y, want, rtol: 0, atol: 0).map { "\($0)" } ?? ""
            #expect(differ == 0, "\(differ) of \(y.count) outputs differ from the documented sums (\(how)): level \(level), \(s)")
        } else {
            assertClose(y, want, atol: 1e-4, "level \(level), \(s)")
        }
    }
}
