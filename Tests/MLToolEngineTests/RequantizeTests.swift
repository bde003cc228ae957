import CMLToolCPU
import CMLToolKernels
import Foundation
import MLToolCore
import Testing
@testable import MLToolEngine
import MLToolTestSupport

/// onnxruntime's QLinearConv arithmetic on a QDQ file's layers: the int8 GEMM's requantizing epilogue
/// (`mlk_qgemm_requant`) and the per-channel requantization of a depthwise conv's integer sums
/// (`mlk_requantize_channels`) at every CPU level against their scalar definition, and an engine running a
/// QuantizeLinear → DequantizeLinear → conv (groups 1 and depthwise) / dense → QuantizeLinear chain giving the integer
/// definition's bits: code = clamp(round_half_even(float(Σ (x − x_zp)·w + bias) · (x_scale · w_scale / y_scale)) + y_zp).
@Suite struct RequantizeTests {
    /// The definition for one sum: the code less the zero point, clamped and rounded, times the output scale.
    static func requantized(_ acc: Int, _ mult: Float, lo: Float, hi: Float, scale: Float) -> Float {
        min(max(Float(acc) * mult, lo), hi).rounded(.toNearestOrEven) * scale
    }

    /// Weights in −64…64 (plain sums), and in −127…127 with `wide` sums: every code 255 against every weight 127
    /// in the first rows and columns, where AVX2's vpmaddubsw would saturate a pair (2 · 255 · 127 > 32,767). Rows
    /// with zero points of their own, and rows that share one (a QDQ tensor's: AVX-512 VNNI's register tiles).
    @Test(arguments: [false, true])
    func qgemmRequantGivesTheDefinitionAtEveryLevel(wide: Bool) throws {
        var rng = SplitMix64(seed: wide ? 45 : 41)
        for (m, k, n, sameZp) in [(13, 70, 37, false), (4, 8, 16, false), (9, 131, 50, false), (1, 27, 5, false),
                                  (19, 16, 96, true), (11, 72, 37, true)] {
            var codes = (0..<(m * k)).map { _ in UInt8(rng.next() % 256) }
            let bound = wide ? 127 : 64
            var w = (0..<(k * n)).map { _ in Int8(Int(rng.next() % UInt64(2 * bound + 1)) - bound) }
            if wide {
                for t in 0..<k { codes[t] = 255; w[t * n] = 127; w[t * n + n - 1] = -127 }
            }
            let zp = (0..<m).map { _ in sameZp ? 97 : Int32(rng.next() % 256) }
            let padded = (n + 15) / 16 * 16
            var bias = [Int32](repeating: 0, count: padded), mult = [Float](repeating: 0, count: padded)
            for j in 0..<n {
                bias[j] = Int32(Int(rng.next() % 40_001) - 20_000)
                mult[j] = Float(rng.next() % 1000 + 1) * 1e-6
            }
            let (lo, hi, scale): (Float, Float, Float) = (-100, 155, 0.05)
            let ldq = Int(mlk_qrow_bytes(Int64(k)))
            var q = [UInt8](repeating: 0, count: m * ldq)
            for r in 0..<m { for t in 0..<k { q[r * ldq + t] = codes[r * k + t] } }
            var packed = [Int8](repeating: 0, count: (n + 15) / 16 * Int(mlk_qpanel_bytes(Int64(k))))
            var colsum = [Int32](repeating: 0, count: padded)
            mlk_qpack(w, Int64(k), Int64(n), &packed, &colsum)
            var want = [Float](repeating: 0, count: m * n)
            for r in 0..<m {
                for j in 0..<n {
                    var acc = Int(bias[j])
                    for t in 0..<k { acc += (Int(codes[r * k + t]) - Int(zp[r])) * Int(w[t * n + j]) }
                    want[r * n + j] = Self.requantized(acc, mult[j], lo: lo, hi: hi, scale: scale)
                }
            }
            // Plain, and with a residual and ReLU after it (a projection fused with its skip connection's add).
            let res = (0..<(m * n)).map { _ in Float(Int(rng.next() % 2001) - 1000) * 0.005 }
            let wantResidual = zip(want, res).map { max(0, $0 + $1) }
            let levels = forEachCPULevel { level in
                for residual in [false, true] {
                    var y = [Float](repeating: .nan, count: m * n)
                    let act = residual ? Act(code: Int32(MLK_ACT_RELU)) : Act.none
                    bias.withUnsafeBufferPointer { b in
                        mult.withUnsafeBufferPointer { mu in
                            res.withUnsafeBufferPointer { r in
                                var rq = mlk_qrequant(bias: b.baseAddress, mult: mu.baseAddress, lo: lo, hi: hi, scale: scale, codes: nil, ldc: 0)
                                let rp = residual ? r.baseAddress : nil
                                // Two calls over a split of the rows, as the engine's parts make them.
                                mlk_qgemm_requant(q, Int64(ldq), zp, packed, colsum, 0, Int64(m / 2), Int64(n), Int64(k), &rq,
                                                  rp, &y, Int64(n), act.code, act.p0, act.p1, wide ? 1 : 0)
                                mlk_qgemm_requant(q, Int64(ldq), zp, packed, colsum, Int64(m / 2), Int64(m), Int64(n), Int64(k),
                                                  &rq, rp, &y, Int64(n), act.code, act.p0, act.p1, wide ? 1 : 0)
                            }
                        }
                    }
                    assertClose(y, residual ? wantResidual : want, atol: 0,
                                "mlk_qgemm_requant m \(m) k \(k) n \(n) wide \(wide) residual \(residual) at level \(level)")
                }
            }
            #expect(!levels.isEmpty)
        }
    }

    /// The codes a requantizing GEMM stores as bytes (`mlk_qrequant.codes`, a tensor stored as codes) at every level:
    /// clamp(round_half_even(float(acc) · mult), lo, hi) − lo, for rows whose zero points all agree (a QDQ tensor's) and
    /// rows whose differ (the tile recomputes its offsets), a last panel of fewer than 16 and 8 columns, plain and
    /// wide sums, an output range of 256 codes (0…255 stored) and a narrower one; the floats are not written.
    @Test(arguments: [false, true])
    func qgemmRequantStoresTheDefinitionsCodesAtEveryLevel(wide: Bool) throws {
        var rng = SplitMix64(seed: wide ? 61 : 59)
        for (m, k, n, sameZp) in [(13, 72, 37, true), (6, 16, 96, true), (9, 132, 50, false), (1, 24, 5, false), (17, 40, 24, true)] {
            var codes = (0..<(m * k)).map { _ in UInt8(rng.next() % 256) }
            let bound = wide ? 127 : 64
            var w = (0..<(k * n)).map { _ in Int8(Int(rng.next() % UInt64(2 * bound + 1)) - bound) }
            if wide {
                for t in 0..<k { codes[t] = 255; w[t * n] = 127; w[t * n + n - 1] = -127 }
            }
            let zp = (0..<m).map { _ in sameZp ? 131 : Int32(rng.next() % 256) }
            let padded = (n + 15) / 16 * 16
            var bias = [Int32](repeating: 0, count: padded), mult = [Float](repeating: 0, count: padded)
            for j in 0..<n {
                bias[j] = Int32(Int(rng.next() % 40_001) - 20_000)
                mult[j] = Float(rng.next() % 1000 + 1) * 1e-6
            }
            mult[0] = 0.5   // ties
            var packed = [Int8](repeating: 0, count: (n + 15) / 16 * Int(mlk_qpanel_bytes(Int64(k))))
            var colsum = [Int32](repeating: 0, count: padded)
            mlk_qpack(w, Int64(k), Int64(n), &packed, &colsum)
            for (lo, hi): (Float, Float) in [(-128, 127), (-100, 120)] {
                var want = [UInt8](repeating: 0, count: m * n)
                for r in 0..<m {
                    for j in 0..<n {
                        var acc = Int(bias[j])
                        for t in 0..<k { acc += (Int(codes[r * k + t]) - Int(zp[r])) * Int(w[t * n + j]) }
                        want[r * n + j] = UInt8(min(max(Float(acc) * mult[j], lo), hi).rounded(.toNearestOrEven) - lo)
                    }
                }
                let levels = forEachCPULevel { level in
                    var got = [UInt8](repeating: 0xAA, count: m * n)
                    var y = [Float](repeating: .nan, count: m * n)
                    got.withUnsafeMutableBufferPointer { g in
                        bias.withUnsafeBufferPointer { b in
                            mult.withUnsafeBufferPointer { mu in
                                var rq = mlk_qrequant(bias: b.baseAddress, mult: mu.baseAddress, lo: lo, hi: hi, scale: 0.05,
                                                      codes: g.baseAddress, ldc: Int64(n))
                                // Two calls over a split of the rows, as the engine's parts make them.
                                mlk_qgemm_requant(codes, Int64(k), zp, packed, colsum, 0, Int64(m / 2), Int64(n), Int64(k), &rq,
                                                  nil, &y, Int64(n), Act.none.code, 0, 0, wide ? 1 : 0)
                                mlk_qgemm_requant(codes, Int64(k), zp, packed, colsum, Int64(m / 2), Int64(m), Int64(n), Int64(k),
                                                  &rq, nil, &y, Int64(n), Act.none.code, 0, 0, wide ? 1 : 0)
                            }
                        }
                    }
                    #expect(got == want, "codes m \(m) k \(k) n \(n) wide \(wide) range \(lo)…\(hi) at level \(level)")
                    #expect(y.allSatisfy { $0.isNaN }, "no float written at level \(level)")
                }
                #expect(!levels.isEmpty)
            }
        }
    }

    /// `mlk_requantize_channels_codes` stores `mlk_requantize_channels`' codes less lo as bytes, and
    /// `mlk_codes_centred` gives float(code − zp), at every level.
    @Test func requantizeChannelsCodesAndCentredCodesGiveTheDefinitionAtEveryLevel() throws {
        var rng = SplitMix64(seed: 67)
        let (rows, c) = (11, 37)
        let sums = (0..<(rows * c)).map { _ in Float(Int(rng.next() % 200_001) - 100_000) }
        var m = (0..<c).map { _ in Float(rng.next() % 1000 + 1) * 2e-5 }
        m[0] = 0.5
        let bias = (0..<c).map { _ in Int32(Int(rng.next() % 60_001) - 30_000) }
        let want = (0..<(rows * c)).map {
            UInt8(min(max(Float(Int(sums[$0]) + Int(bias[$0 % c])) * m[$0 % c], -20), 235).rounded(.toNearestOrEven) + 20)
        }
        let bytes = (0..<300).map { UInt8($0 % 256) }
        let centred = bytes.map { Float(Int($0) - 77) }
        _ = forEachCPULevel { level in
            var out = [UInt8](repeating: 0, count: rows * c)
            mlk_requantize_channels_codes(sums, Int64(rows), Int64(c), bias, m, -20, 235, &out)
            #expect(out == want, "mlk_requantize_channels_codes at level \(level)")
            var y = [Float](repeating: .nan, count: bytes.count)
            mlk_codes_centred(bytes, &y, Int64(bytes.count), 77)
            assertClose(y, centred, atol: 0, "mlk_codes_centred at level \(level)")
        }
    }

    /// `mlk_qdepthwise_codes` (a strided depthwise conv from codes to codes) gives the integer definition at every
    /// level: borders (a tap in the padding adds 0), 32-channel blocks, 8-channel vectors and a scalar tail (C = 45),
    /// stride 2 and 1, dilation 2, a band of rows at a time, runs of 4 pixels and single ones (3×3 and 5×5, stride 1
    /// and 2, with 16-, 8- and 1-channel tails), a 7×7 map whose every pixel reads the padding, and dilation 2 with
    /// 16 + 8 + 3 channels.
    @Test func qdepthwiseCodesGiveTheIntegerDefinitionAtEveryLevel() throws {
        var rng = SplitMix64(seed: 79)
        for (h, w, c, k, stride, dilation, pad) in [(9, 8, 45, 3, 2, 1, 1), (7, 7, 16, 3, 1, 2, 2), (6, 5, 5, 5, 2, 1, 2),
                                                    (6, 13, 21, 3, 1, 1, 1), (8, 11, 16, 5, 1, 1, 2),
                                                    (12, 14, 40, 5, 2, 1, 2), (7, 7, 48, 5, 1, 1, 2), (9, 10, 27, 3, 1, 2, 2)] {
            let oh = (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1, ow = (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1
            let x = (0..<(h * w * c)).map { _ in UInt8(rng.next() % 256) }
            let wt = (0..<(k * k * c)).map { _ in Float(Int(rng.next() % 255) - 127) }
            let bias = (0..<c).map { _ in Int32(Int(rng.next() % 40_001) - 20_000) }
            var mult = (0..<c).map { _ in Float(rng.next() % 1000 + 1) * 1e-5 }
            mult[0] = 0.5
            let zp: Int32 = 113
            let (lo, hi): (Float, Float) = (-113, 142)
            var want = [UInt8](repeating: 0, count: oh * ow * c)
            for oy in 0..<oh {
                for ox in 0..<ow {
                    for ch in 0..<c {
                        var acc = Int(bias[ch])
                        for ky in 0..<k {
                            for kx in 0..<k {
                                let (iy, ix) = (oy * stride - pad + ky * dilation, ox * stride - pad + kx * dilation)
                                guard iy >= 0, iy < h, ix >= 0, ix < w else { continue }
                                acc += (Int(x[(iy * w + ix) * c + ch]) - Int(zp)) * Int(wt[(ky * k + kx) * c + ch])
                            }
                        }
                        want[(oy * ow + ox) * c + ch] = UInt8(min(max(Float(acc) * mult[ch], lo), hi).rounded(.toNearestOrEven) - lo)
                    }
                }
            }
            let levels = forEachCPULevel { level in
                // Split by rows, then by channels (at 16 and at an odd place: vector blocks and tails).
                for split in [[(0, oh / 2, 0, c), (oh / 2, oh, 0, c)], [(0, oh, 0, 16), (0, oh, 16, 23), (0, oh, 23, c)]] {
                    var y = [UInt8](repeating: 0xAA, count: oh * ow * c)
                    for (r0, r1, c0, c1) in split {
                        mlk_qdepthwise_codes(x, Int64(h), Int64(w), Int64(c), zp, wt, Int64(k), Int64(k), bias, mult, lo, hi,
                                             &y, Int64(r0), Int64(r1), Int64(ow), Int64(stride), Int64(stride),
                                             Int64(dilation), Int64(dilation), Int64(pad), Int64(pad), Int64(c0), Int64(c1))
                    }
                    #expect(y == want, "mlk_qdepthwise_codes \(h)×\(w)×\(c) k \(k) stride \(stride) \(split) at level \(level)")
                }
            }
            #expect(!levels.isEmpty)
        }
    }

    /// `mlk_qgemm` (scaled float outputs, a dynamically quantized layer's) gives its definition at every level:
    /// `mlk_dynamic_quant_params` (DynamicQuantizeLinear's scale and zero point): the range of the values and 0 (NaN
    /// skipped), scale (max − min) / 255 (1 for an all-zero range), zero point round(−min / scale) in 0…255; at every
    /// level, on lengths around the vector blocks (8, 32 and 64 values) with NaN, ±∞ and −0 first or last.
    @Test func dynamicParametersAtEveryLevel() throws {
        var rng = SplitMix64(seed: 97)
        var cases: [[Float]] = []
        for n in [1, 7, 9, 31, 33, 63, 64, 65, 130, 1000] {
            let x = (0..<n).map { _ in Float.random(in: -3...5, using: &rng) }
            cases += [x, x.map { abs($0) }, [.nan] + x + [-0.0], [-0.0] + x.map { -abs($0) } + [.nan], x + [.infinity],
                      [-.infinity] + x.map { abs($0) }, [Float](repeating: 0, count: n)]
        }
        for x in cases {
            let finite = x.filter { !$0.isNaN }
            let lo = min(0, finite.min() ?? 0), hi = max(0, finite.max() ?? 0)
            let s: Float = hi == lo ? 1 : (hi - lo) / 255
            let z = Int32(min(255, max(0, 0 - lo / s)).rounded(.toNearestOrEven))
            _ = forEachCPULevel { level in
                var scale: Float = 0, zp: Int32 = -1
                mlk_dynamic_quant_params(x, Int64(x.count), &scale, &zp)
                #expect(scale.bitPattern == s.bitPattern && zp == z, "\(x.count) values, level \(level)")
            }
        }
    }

    /// y = fma(float(Σ q·w − zp·colsum), ascale · wscale, bias), + res, then ReLU — for rows with zero points and scales
    /// of their own and rows that share both (a per-tensor DynamicQuantizeLinear's: AVX-512 VNNI's register tiles),
    /// 7-bit rows against weights in −127…127 (exact at every level without `wide`).
    @Test func qgemmScaledGivesTheDefinitionAtEveryLevel() throws {
        var rng = SplitMix64(seed: 53)
        for (m, k, n, shared) in [(13, 70, 37, false), (19, 64, 96, true), (9, 256, 50, true), (1, 27, 5, true)] {
            let ldq = Int(mlk_qrow_bytes(Int64(k))), padded = (n + 15) / 16 * 16
            var q = [UInt8](repeating: 0, count: m * ldq)
            for r in 0..<m { for t in 0..<k { q[r * ldq + t] = UInt8(rng.next() % 128) } }
            let w = (0..<(k * n)).map { _ in Int8(Int(rng.next() % 255) - 127) }
            let zp = (0..<m).map { _ in shared ? 61 : Int32(rng.next() % 128) }
            let ascale = (0..<m).map { _ in shared ? Float(0.0173) : Float(rng.next() % 100 + 1) * 1e-3 }
            var wscale = [Float](repeating: 0, count: padded)
            for j in 0..<n { wscale[j] = Float(rng.next() % 100 + 1) * 1e-3 }
            let bias = (0..<n).map { _ in Float(Int(rng.next() % 2001) - 1000) * 0.01 }
            let res = (0..<(m * n)).map { _ in Float(Int(rng.next() % 2001) - 1000) * 0.005 }
            var packed = [Int8](repeating: 0, count: (n + 15) / 16 * Int(mlk_qpanel_bytes(Int64(k))))
            var colsum = [Int32](repeating: 0, count: padded)
            mlk_qpack(w, Int64(k), Int64(n), &packed, &colsum)
            for residual in [false, true] {
                var want = [Float](repeating: 0, count: m * n)
                for r in 0..<m {
                    for j in 0..<n {
                        var acc: Int32 = 0
                        for t in 0..<k { acc &+= Int32(q[r * ldq + t]) &* Int32(w[t * n + j]) }
                        let v = bias[j].addingProduct(Float(acc &- zp[r] &* colsum[j]), ascale[r] * wscale[j])
                        want[r * n + j] = residual ? max(0, v + res[r * n + j]) : v
                    }
                }
                let act = residual ? Act(code: Int32(MLK_ACT_RELU)) : Act.none
                let levels = forEachCPULevel { level in
                    var y = [Float](repeating: .nan, count: m * n)
                    for (r0, r1) in [(0, m / 2), (m / 2, m)] {
                        mlk_qgemm(q, Int64(ldq), ascale, zp, packed, colsum, wscale, Int64(r0), Int64(r1), Int64(n), Int64(k),
                                  bias, residual ? res : nil, &y, Int64(n), act.code, act.p0, act.p1, 0)
                    }
                    assertClose(y, want, atol: 0, "mlk_qgemm m \(m) k \(k) n \(n) shared \(shared) residual \(residual) at level \(level)")
                }
                #expect(!levels.isEmpty)
            }
        }
    }

    /// `mlk_quantize_rows_fixed` and `mlk_quantize_rows_divided` give their definitions at every level: rows back to
    /// back (K = 24: quantized as one flat row) and padded ones (K = 13: bytes past K zeroed), in two calls over a
    /// split of the rows; NaN (the zero point), infinities, huge values and a tie (2.5 steps) among the values.
    @Test func quantizeRowsWithKnownParametersGiveTheDefinitionAtEveryLevel() throws {
        var rng = SplitMix64(seed: 47)
        let (s, z): (Float, Int32) = (0.0411, 117)
        for k in [24, 13] {
            let m = 9, ldq = Int(mlk_qrow_bytes(Int64(k)))
            var a = (0..<(m * k)).map { _ in Float(Int(rng.next() % 4001) - 2000) * 0.0137 }
            (a[3], a[4], a[5], a[6], a[7]) = (.nan, .infinity, -.infinity, 1e30, s * 2.5)
            for divided in [false, true] {
                var want = [UInt8](repeating: 0, count: m * ldq)
                for r in 0..<m {
                    for t in 0..<k {
                        let v = divided ? a[r * k + t] / s : a[r * k + t] * (1 / s)
                        want[r * ldq + t] = v.isNaN ? UInt8(z)
                            : UInt8(min(max(v, Float(-z)), Float(255 - z)).rounded(.toNearestOrEven) + Float(z))
                    }
                }
                let rows = divided ? mlk_quantize_rows_divided : mlk_quantize_rows_fixed
                let levels = forEachCPULevel { level in
                    var q = [UInt8](repeating: 0xAA, count: m * ldq)
                    var (scale, zp) = ([Float](repeating: 0, count: m), [Int32](repeating: 0, count: m))
                    for (r0, r1) in [(0, 4), (4, m)] {
                        rows(a, Int64(k), Int64(r0), Int64(r1), Int64(k), &q, Int64(ldq), &scale, &zp, s, z)
                    }
                    #expect(q == want, "k \(k) divided \(divided) at level \(level)")
                    #expect(scale.allSatisfy { $0 == s } && zp.allSatisfy { $0 == z }, "k \(k) at level \(level)")
                }
                #expect(!levels.isEmpty)
            }
        }
    }

    @Test func requantizeChannelsGivesTheDefinitionAtEveryLevel() throws {
        var rng = SplitMix64(seed: 43)
        let (rows, c) = (11, 37)
        let sums = (0..<(rows * c)).map { _ in Float(Int(rng.next() % 200_001) - 100_000) }
        let mult = (0..<c).map { _ in Float(rng.next() % 1000 + 1) * 2e-6 }
        // Ties: sums that land on a half exactly (mult 0.5, odd sums).
        var m = mult
        m[0] = 0.5
        // Biases beyond 2^24 too: float(sum + bias) rounds once, as onnxruntime's conversion of its int32 sum.
        let bias = (0..<c).map { _ in Int32(Int(rng.next() % 60_000_001) - 30_000_000) }
        let want = (0..<(rows * c)).map {
            Self.requantized(Int(sums[$0]) + Int(bias[$0 % c]), m[$0 % c], lo: -20, hi: 235, scale: 0.02)
        }
        _ = forEachCPULevel { level in
            var y = sums
            mlk_requantize_channels(&y, Int64(rows), Int64(c), bias, m, -20, 235, 0.02)
            assertClose(y, want, atol: 0, "mlk_requantize_channels at level \(level)")
        }
    }

    /// mlk_grid_codes gives the codes of values on a grid (a QDQ pair's output, (q − z) · s) at every level, and
    /// rounds off-grid values half to even, NaN to 0.
    @Test func gridCodesGiveTheCodesAtEveryLevel() throws {
        let s: Float = 0.0173
        var x = (0..<300).map { Float($0 - 120) * s }
        x += [0.5 * s, 1.5 * s, 2.5 * s, .nan]
        var want = (0..<300).map { Float($0 - 120) }
        want += [0.5, 1.5, 2.5].map { (Float($0) * s * (1 / s)).rounded(.toNearestOrEven) } + [0]
        _ = forEachCPULevel { level in
            var y = [Float](repeating: .nan, count: x.count)
            mlk_grid_codes(x, &y, Int64(x.count), 1 / s)
            assertClose(y, want, atol: 0, "mlk_grid_codes at level \(level)")
        }
    }

    /// The input's codes: x quantized with scale 0.02, zero point 120 (uint8), less the zero point.
    static func centered(_ x: Float) -> Int { max(0, min(255, Int((x / 0.02).rounded(.toNearestOrEven)) + 120)) - 120 }

    /// x (N, H, W, C) → QDQ pair → conv (int8 weights in −64…64, the file's int32 bias dequantized) → QDQ pair, for a
    /// stride-2 3×3 conv (groups 1), a depthwise 3×3 and a 1×1 with few channels (int8 whatever its size, as a QDQ
    /// file's): the engine's bits are the integer definition's, and the plan requantized each layer.
    @Test(arguments: [(1, 16, 2), (8, 8, 1), (1, 12, 1)])
    func qdqConvGivesTheIntegerDefinition(groups: Int, cout: Int, stride: Int) throws {
        let (h, w, c) = (9, 9, 8)
        let kk = cout == 12 ? 1 : 3
        var b = GraphBuilder(seed: 47 + UInt64(groups), input: [-1, h, w, c])
        var rng = SplitMix64(seed: 53)
        let xq = b.node(.quantize, ["x"], QuantizeOpTests.attributes([0.02], [120], range: 0...255, mode: "values"))
        let cg = c / groups
        let codes = (0..<(kk * kk * cg * cout)).map { _ in Int8(Int(rng.next() % 129) - 64) }
        let ws = (0..<cout).map { _ in Float(rng.next() % 100 + 1) * 1e-4 }
        let biasCodes = (0..<cout).map { _ in Int(rng.next() % 4001) - 2000 }
        let bias = (0..<cout).map { Float(biasCodes[$0]) * (Float(0.02) * ws[$0]) }
        b.tensors.append(StoredTensor(name: "w", dtype: .int8, shape: [kk, kk, cg, cout], quant: QuantParams(axis: 3, scales: ws),
                                      bytes: TensorBytes(copying: codes.map { UInt8(bitPattern: $0) })))
        b.tensors.append(StoredTensor(name: "b", tensor: Tensor(shape: [cout], data: bias)))
        let pad = kk == 3 ? 1 : 0
        let conv = b.node(.conv, [xq, "w", "b"], Attributes(strides: [stride, stride], pads: [pad, pad, pad, pad], groups: groups))
        let yq = b.node(.quantize, [conv], QuantizeOpTests.attributes([0.05], [100], range: 0...255, mode: "values"))
        let model = b.model(outputs: [yq])
        let x = b.input([2, h, w, c])
        let got = try #require(try Engine(model: model, threads: 2).run(["x": x], outputs: [yq])[yq])
        let (oh, ow) = ((h + 2 * pad - kk) / stride + 1, (w + 2 * pad - kk) / stride + 1)
        #expect(got.shape == [2, oh, ow, cout])
        var want = [Float](repeating: 0, count: 2 * oh * ow * cout)
        for n in 0..<2 {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    for o in 0..<cout {
                        let g = o / (cout / groups)
                        var acc = biasCodes[o]
                        for ky in 0..<kk {
                            for kx in 0..<kk {
                                let (iy, ix) = (oy * stride + ky - pad, ox * stride + kx - pad)
                                guard iy >= 0, iy < h, ix >= 0, ix < w else { continue }
                                for i in 0..<cg {
                                    let xv = x.data[((n * h + iy) * w + ix) * c + g * cg + i]
                                    acc += Self.centered(xv) * Int(codes[((ky * kk + kx) * cg + i) * cout + o])
                                }
                            }
                        }
                        let mult = Float(0.02) * ws[o] / Float(0.05)
                        want[((n * oh + oy) * ow + ox) * cout + o] = Self.requantized(acc, mult, lo: -100, hi: 155, scale: 0.05)
                    }
                }
            }
        }
        assertClose(got.data, want, atol: 0, "groups \(groups): the integer definition's bits")
        let graph = try #require(model.metadata.graph)
        let p = try Program(graph: graph, tensors: model.tensorsByName, int8Minimum: Engine.int8Minimum(.auto))
        let step = try #require(p.steps.first { $0.op == .conv })
        #expect(groups == 1 ? step.qweights?.requant != nil : step.qdepthwise?.run != nil, "the plan requantizes the conv")
    }
    /// An int8 layer of `cin` → `cout` channels (1×1, or a depthwise 3×3 when `depthwise`) on the QDQ tensor `x` of
    /// input scale `xs`, then its output's QuantizeLinear (scale `ys`, zero point `yzp`).
    static func qdqLayer(_ b: inout GraphBuilder, _ x: String, _ xs: Float, cin: Int, cout: Int, depthwise: Bool, ys: Float,
                         yzp: Int, _ rng: inout SplitMix64, name: String) -> String {
        let shape = depthwise ? [3, 3, 1, cout] : [1, 1, cin, cout]
        let codes = (0..<shape.reduce(1, *)).map { _ in Int8(Int(rng.next() % 255) - 127) }
        let ws = (0..<cout).map { _ in Float(rng.next() % 100 + 1) * 2e-3 }
        let bias = (0..<cout).map { Float(Int(rng.next() % 4001) - 2000) * (xs * ws[$0]) }
        b.tensors.append(StoredTensor(name: name + ".w", dtype: .int8, shape: shape, quant: QuantParams(axis: 3, scales: ws),
                                      bytes: TensorBytes(copying: codes.map { UInt8(bitPattern: $0) })))
        b.tensors.append(StoredTensor(name: name + ".b", tensor: Tensor(shape: [cout], data: bias)))
        let attributes = depthwise ? Attributes(strides: [2, 2], pads: [1, 1, 1, 1], groups: cout) : Attributes()
        let conv = b.node(.conv, [x, name + ".w", name + ".b"], attributes)
        return b.node(.quantize, [conv], QuantizeOpTests.attributes([ys], [yzp], range: 0...255, mode: "values"))
    }

    /// A QDQ chain 1×1 expansion → depthwise (stride 2) → 1×1 projection (k 8, 24 and 24, full-range weights, so
    /// `wide` sums on AVX2): the tensors between the layers are stored as their 8-bit codes (`Program.storeCodes`:
    /// written as bytes by the requantizing layers, read in place), and the output has the bits of the same graph
    /// with those tensors also asked for, which keeps them as floats; at batch 1 and 3 (one image per worker and
    /// a chunk), 1 and 2 threads.
    @Test func tensorsStoredAsCodesGiveTheFloatPathsBits() throws {
        let (h, w, c) = (11, 10, 8)
        var b = GraphBuilder(seed: 71, input: [-1, h, w, c])
        var rng = SplitMix64(seed: 73)
        let xq = b.node(.quantize, ["x"], QuantizeOpTests.attributes([0.02], [120], range: 0...255, mode: "values"))
        let e = Self.qdqLayer(&b, xq, 0.02, cin: c, cout: 24, depthwise: false, ys: 0.05, yzp: 100, &rng, name: "expand")
        let d = Self.qdqLayer(&b, e, 0.05, cin: 24, cout: 24, depthwise: true, ys: 0.04, yzp: 7, &rng, name: "depthwise")
        let p = Self.qdqLayer(&b, d, 0.04, cin: 24, cout: 8, depthwise: false, ys: 0.03, yzp: 110, &rng, name: "project")
        let model = b.model(outputs: [p])
        let graph = try #require(model.metadata.graph)
        let program = try Program(graph: graph, tensors: model.tensorsByName, int8Minimum: Engine.int8Minimum(.auto))
        let convs = program.steps.filter { $0.op == .conv }
        #expect(convs.count == 3)
        #expect(convs.map { $0.qweights?.writesCodes ?? $0.qdepthwise?.writesCodes ?? false } == [true, true, false],
                "the expansion and the depthwise conv write codes")
        #expect(convs.map { $0.qweights?.readsStoredCodes ?? ($0.qdepthwise?.storedInput != nil) } == [false, true, true],
                "the depthwise conv and the projection read them")
        for batch in [1, 3] {
            let x = b.input([batch, h, w, c])
            for threads in [1, 2] {
                let stored = try #require(try Engine(model: model, threads: threads).run(["x": x], outputs: [p])[p])
                let floats = try #require(try Engine(model: model, threads: threads).run(["x": x], outputs: [p, e, d])[p])
                #expect(stored.shape == [batch, 6, 5, 8])
                assertClose(stored.data, floats.data, atol: 0, "batch \(batch), \(threads) threads: the float path's bits")
            }
        }
    }

    /// Codes read by two DequantizeLinear nodes — a residual block's input, read by its first conv and by its add,
    /// each expanded from a QLinear op with its own dequantization — fuse into one `quantize` in mode "values" that
    /// both read (`GraphPasses.fuseQuantizeDequantize`), so the conv (k 8: under the float threshold without VNNI)
    /// reads the file's codes like any QDQ layer: its output has the integer definition's bits. Before, only codes
    /// with one reader fused, and such a conv ran on floats, or with VNNI on inputs quantized again per row
    /// (EfficientNet-Lite0's operator-format file: 29 % of block 2's expansion codes off by up to 10 steps). Asking
    /// for the conv's float output, which the requantizing conv no longer computes, runs the unfused graph.
    @Test func codesReadTwiceFuseAndTheConvReadsThem() throws {
        let (h, w, c) = (5, 6, 8)
        var b = GraphBuilder(seed: 91, input: [-1, h, w, c])
        var rng = SplitMix64(seed: 97)
        let codes = b.node(.quantize, ["x"], QuantizeOpTests.attributes([0.02], [120], range: 0...255, mode: "codes"))
        let toConv = b.node(.dequantize, [codes], QuantizeOpTests.attributes([0.02], [120]))
        let toAdd = b.node(.dequantize, [codes], QuantizeOpTests.attributes([0.02], [120]))
        let y = Self.qdqLayer(&b, toConv, 0.02, cin: c, cout: c, depthwise: false, ys: 0.05, yzp: 100, &rng, name: "expand")
        let sum = b.node(.add, [y, toAdd])
        let model = b.model(outputs: [sum])
        let fused = try #require(try GraphPasses.fuseQuantizeDequantize(model).metadata.graph)
        #expect(!fused.nodes.contains { $0.op == .dequantize }, "both dequantizations fused")
        let q = try #require(fused.nodes.first { $0.op == .quantize && $0.inputs == ["x"] })
        #expect(q.attributes.mode == "values")
        #expect(fused.nodes.filter { $0.inputs.contains(q.outputs[0]) }.map(\.op) == [.conv, .add], "the conv and the add read it")
        let engine = try Engine(model: model, threads: 1, int8Compute: .auto)
        let x = b.input([2, h, w, c])
        let got = try #require(try engine.run(["x": x], outputs: [y])[y])
        let convOutput = try #require(model.metadata.graph?.nodes.first { $0.op == .conv }?.outputs.first)
        let unfused = try engine.run(["x": x], outputs: [y, convOutput])
        #expect(unfused[convOutput]?.shape == [2, h, w, c], "asking for a tensor the plan no longer computes runs the unfused graph")
        assertClose(try #require(unfused[y]).data, got.data, atol: 0.05 + 1e-6, "the unfused graph: within a step")
        var want = [Float]()
        let wq = try #require(model.tensor(named: "expand.w")), bias = try #require(model.tensor(named: "expand.b")).floats()
        let weights = wq.bytes.buffer.map { Int(Int8(bitPattern: $0)) }, ws = try #require(wq.quant?.scales)
        for i in 0..<(2 * h * w) {
            for o in 0..<c {
                var acc = Int((bias[o] / (0.02 * ws[o])).rounded())
                for k in 0..<c { acc += Self.centered(x.data[i * c + k]) * weights[k * c + o] }
                want.append(Self.requantized(acc, Float(0.02) * ws[o] / 0.05, lo: -100, hi: 155, scale: 0.05))
            }
        }
        assertClose(got.data, want, atol: 0, "the integer definition's bits")
    }
}
