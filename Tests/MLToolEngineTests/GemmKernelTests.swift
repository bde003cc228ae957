import CMLToolKernels
import Foundation
import Testing
import MLToolTestSupport
@testable import MLToolEngine

/// `mlk_gemm_packed` itself, at every SIMD level this CPU has, against a scalar reference in double precision: the
/// shapes that take the edge paths (a lone row — a dense layer on one image, the 49th row of a 7 × 7 map —, a last
/// panel of 1–15 columns, a last panel of ≤ 8 columns after 0–5 whole ones (the 8-lane half tiles), N ≤ 8, K = 1,
/// every activation), and each row computed alone gives the same bits as in the
/// whole call, whichever tile computed it (the contract that makes thread splits bit-identical).
@Suite(.serialized) struct GemmKernelTests {
    static let acts: [(code: Int32, p0: Float, p1: Float)] = [
        (Int32(MLK_ACT_NONE), 0, 0), (Int32(MLK_ACT_RELU), 0, 0), (Int32(MLK_ACT_CLIP), -0.25, 0.5),
        (Int32(MLK_ACT_LEAKY), 0.1, 0), (Int32(MLK_ACT_SIGMOID), 0, 0),
        (Int32(MLK_ACT_HARDSIGMOID), 0.2, 0.5), (Int32(MLK_ACT_HARDSWISH), 0, 0),
        (Int32(MLK_ACT_SWISH), 0, 0), (Int32(MLK_ACT_TANH), 0, 0), (Int32(MLK_ACT_GELU), 0, 0),
    ]

    static func activation(_ v: Double, _ act: (code: Int32, p0: Float, p1: Float)) -> Double {
        let (p0, p1) = (Double(act.p0), Double(act.p1))
        switch act.code {
        case Int32(MLK_ACT_RELU): return max(v, 0)
        case Int32(MLK_ACT_CLIP): return min(max(v, p0), p1)
        case Int32(MLK_ACT_LEAKY): return v < 0 ? p0 * v : v
        case Int32(MLK_ACT_SIGMOID): return 1 / (1 + exp(-v))
        case Int32(MLK_ACT_HARDSIGMOID): return min(1, max(0, p0 * v + p1))
        case Int32(MLK_ACT_HARDSWISH): return v * min(6, max(0, v + 3)) / 6
        case Int32(MLK_ACT_SWISH): return v / (1 + exp(-v))
        case Int32(MLK_ACT_TANH): return tanh(v)
        case Int32(MLK_ACT_GELU): return 0.5 * v * (1 + erf(v / 2.0.squareRoot()))
        default: return v
        }
    }

    /// w (k, n) packed by `mlk_pack` into memory aligned as the engine aligns packed weights (the kernels' aligned
    /// loads rely on it), NaN wherever packing writes nothing. Free with `UnsafeMutableRawPointer(p).deallocate()`.
    static func packed(_ w: [Float], k: Int, n: Int) -> UnsafeMutablePointer<Float> {
        let count = Int(mlk_packed_count(Int64(k), Int64(n)))
        let raw = UnsafeMutableRawPointer.allocate(byteCount: count * 4, alignment: 64)
        let packed = raw.initializeMemory(as: Float.self, repeating: .nan, count: count)
        mlk_pack(w, Int64(k), Int64(n), packed)
        return packed
    }

    @Test func everyLevelMatchesTheScalarReferenceAndRowsAloneGiveTheSameBits() throws {
        var checked = 0
        let levels = try forEachCPULevel { level in
            for (m, k, n) in [(1, 1280, 1000), (1, 37, 24), (49, 64, 40), (7, 3, 8), (13, 1, 17), (2, 16, 5),
                              (25, 19, 96), (6, 33, 15), (8, 20, 9), (50, 9, 130),
                              (11, 21, 56), (9, 13, 72), (19, 7, 88), (23, 30, 40)] {
                for (i, act) in Self.acts.enumerated() where (i + m + n) % 3 == 0 || m * k * n < 200_000 {
                    try check(m: m, k: k, n: n, act: act, bias: (i + k) % 2 == 0, level: level)
                    checked += 1
                }
            }
        }
        #expect(!levels.isEmpty && checked >= 30 * levels.count, "\(checked) cases on levels \(levels)")
    }

    func check(m: Int, k: Int, n: Int, act: (code: Int32, p0: Float, p1: Float), bias useBias: Bool, level: Int32) throws {
        let a = (0..<(m * k)).map { Float(sin(Double($0) * 0.37)) }
        let w = (0..<(k * n)).map { Float(cos(Double($0) * 0.11)) / Float(k).squareRoot() }
        let bias = (0..<n).map { Float($0 % 7) * 0.25 - 0.75 }
        let packed = Self.packed(w, k: k, n: n)
        defer { UnsafeMutableRawPointer(packed).deallocate() }
        let ldy = n + 3   // a gap after each row: nothing may be written there
        func run(_ m0: Int, _ m1: Int, into y: inout [Float]) {
            y.withUnsafeMutableBufferPointer { yp in
                useBias ? mlk_gemm_packed(a, Int64(k), packed, Int64(m0), Int64(m1), Int64(n), Int64(k), bias, yp.baseAddress,
                                          Int64(ldy), act.code, act.p0, act.p1)
                        : mlk_gemm_packed(a, Int64(k), packed, Int64(m0), Int64(m1), Int64(n), Int64(k), nil, yp.baseAddress,
                                          Int64(ldy), act.code, act.p0, act.p1)
            }
        }
        var whole = [Float](repeating: 777, count: m * ldy)
        run(0, m, into: &whole)
        var alone = [Float](repeating: 777, count: m * ldy)
        for r in 0..<m { run(r, r + 1, into: &alone) }
        let place = "level \(level), m \(m) k \(k) n \(n), act \(act.code), bias \(useBias)"
        let differ = zip(whole, alone).filter { $0.bitPattern != $1.bitPattern }.count
        #expect(differ == 0, "\(differ) values differ when rows are computed alone: \(place)")
        // Each output's bound is 1e-5 of the sum of its terms' magnitudes, plus 1e-6: compared in units of that
        // bound (got / bound against want / bound with atol 1).
        var got = [Double](), want = [Double]()
        for r in 0..<m {
            for j in 0..<ldy {
                let value = Double(whole[r * ldy + j])
                if j >= n { #expect(value == 777, "wrote past column \(n) in row \(r): \(place)"); continue }
                var s = useBias ? Double(bias[j]) : 0
                var mag = abs(s)
                for t in 0..<k { s += Double(a[r * k + t]) * Double(w[t * n + j]); mag += abs(Double(a[r * k + t]) * Double(w[t * n + j])) }
                let bound = 1e-5 * mag + 1e-6
                got.append(value / bound)
                want.append(Self.activation(s, act) / bound)
            }
        }
        assertClose(got, want, atol: 1, "outputs in units of their bound: \(place)")
    }

    /// Every activation gives the same bits at every level for NaN, infinities and signed zeros, and keeps NaN (as
    /// ONNX's do): through `mlk_add_act` (every length 1…40: vector bodies and tails), and in the GEMM epilogues (the
    /// 6-row tiles' specialised ReLU6 store among them) a NaN in an input row makes that row's outputs NaN, and only
    /// those.
    /// AVX2's and AVX-512's ReLU and clip used to turn NaN into 0 or the clip's floor (vector max and min return their
    /// second operand where either is NaN), where the portable level kept it.
    @Test func activationsGiveTheSameBitsForNaNAtEveryLevel() throws {
        let specials: [Float] = [.nan, .infinity, -.infinity, -0.0, 0, 3, -3, .leastNormalMagnitude / 4, 7]
        for act in Self.acts + [(Int32(MLK_ACT_CLIP), 0, 6)] {
            for n in 1...40 {
                let a = (0..<n).map { specials[($0 &* 5 &+ n) % specials.count] }
                let b = [Float](repeating: -0.0, count: n)   // a + (−0) is a, −0 included
                var portable: [UInt32]?
                _ = forEachCPULevel { level in
                    var y = [Float](repeating: 1, count: n)
                    mlk_add_act(a, b, &y, Int64(n), act.code, act.p0, act.p1)
                    for i in 0..<n where a[i].isNaN {
                        #expect(y[i].isNaN, "level \(level), act \(act.code): NaN became \(y[i])")
                    }
                    let bits = y.map(\.bitPattern)
                    guard let want = portable else { portable = bits; return }
                    #expect(bits == want, "level \(level), act \(act.code), n = \(n): \(zip(bits, want).filter { $0 != $1 }.count) values differ from the portable level")
                }
            }
            // Six rows × three whole panels, row 2 with a NaN input.
            let (m, k, n) = (6, 5, 48)
            var g = GraphBuilder(seed: 3, input: [])
            var x = g.values(m * k, -2, 2)
            x[2 * k + 3] = .nan
            let w = g.values(k * n), bias = g.values(n)
            let p = Self.packed(w, k: k, n: n)
            defer { UnsafeMutableRawPointer(p).deallocate() }
            // (Levels sum in their own order, so only NaN-ness is compared here.)
            _ = forEachCPULevel { level in
                var y = [Float](repeating: 1, count: m * n)
                mlk_gemm_packed(x, Int64(k), p, 0, Int64(m), Int64(n), Int64(k), bias, &y, Int64(n), act.code, act.p0, act.p1)
                let nanRows = (0..<m).filter { r in y[(r * n)..<((r + 1) * n)].allSatisfy { $0.isNaN } }
                let anyNaN = (0..<m).filter { r in y[(r * n)..<((r + 1) * n)].contains { $0.isNaN } }
                #expect(nanRows == [2] && anyNaN == [2], "level \(level), act \(act.code): rows \(anyNaN) hold NaN, \(nanRows) all NaN; only row 2 had a NaN input")
            }
        }
    }

    /// `mlk_gemm_packed_res` (a projection conv and the add after it as one GEMM) gives the bits of the GEMM without
    /// activation followed by `mlk_add_act`, at every level and through every tile (narrow, 8 × 48, lone row, a
    /// last partial panel), writes nothing past a row's columns, and without a residual is `mlk_gemm_packed`.
    @Test func residualEpilogueGivesTheBitsOfGemmThenAdd() throws {
        var checked = 0
        let levels = try forEachCPULevel { level in
            for (m, k, n) in [(1, 200, 1000), (49, 96, 192), (57, 24, 24), (40, 32, 16), (23, 48, 80), (9, 40, 96),
                              (33, 20, 130), (7, 5, 9), (13, 30, 88)] {
                for act in Self.acts where FusedResidual.exactActivations.contains(act.code) {
                    try checkResidual(m: m, k: k, n: n, act: act, level: level)
                    checked += 1
                }
            }
        }
        #expect(!levels.isEmpty && checked == 36 * levels.count, "\(checked) cases on levels \(levels)")
    }

    func checkResidual(m: Int, k: Int, n: Int, act: (code: Int32, p0: Float, p1: Float), level: Int32) throws {
        let a = (0..<(m * k)).map { Float(sin(Double($0) * 0.29)) }
        let w = (0..<(k * n)).map { Float(cos(Double($0) * 0.13)) / Float(k).squareRoot() }
        let bias = (0..<n).map { Float($0 % 5) * 0.5 - 1 }
        let ldy = n + 5
        let res = (0..<(m * ldy)).map { Float(sin(Double($0) * 0.71)) * 2 }
        let packed = Self.packed(w, k: k, n: n)
        defer { UnsafeMutableRawPointer(packed).deallocate() }
        var fused = [Float](repeating: 777, count: m * ldy), twoSteps = fused, plain = fused, noResidual = fused
        fused.withUnsafeMutableBufferPointer {
            mlk_gemm_packed_res(a, Int64(k), packed, 0, Int64(m), Int64(n), Int64(k), bias, res, $0.baseAddress, Int64(ldy),
                                act.code, act.p0, act.p1)
        }
        twoSteps.withUnsafeMutableBufferPointer { y in
            mlk_gemm_packed(a, Int64(k), packed, 0, Int64(m), Int64(n), Int64(k), bias, y.baseAddress, Int64(ldy),
                            Int32(MLK_ACT_NONE), 0, 0)
            for r in 0..<m {
                let row = y.baseAddress! + r * ldy
                res.withUnsafeBufferPointer { mlk_add_act(row, $0.baseAddress! + r * ldy, row, Int64(n), act.code, act.p0, act.p1) }
            }
        }
        plain.withUnsafeMutableBufferPointer {
            mlk_gemm_packed(a, Int64(k), packed, 0, Int64(m), Int64(n), Int64(k), bias, $0.baseAddress, Int64(ldy),
                            act.code, act.p0, act.p1)
        }
        noResidual.withUnsafeMutableBufferPointer {
            mlk_gemm_packed_res(a, Int64(k), packed, 0, Int64(m), Int64(n), Int64(k), bias, nil, $0.baseAddress, Int64(ldy),
                                act.code, act.p0, act.p1)
        }
        let place = "level \(level), m \(m) k \(k) n \(n), act \(act.code)"
        let differ = zip(fused, twoSteps).filter { $0.bitPattern != $1.bitPattern }.count
        #expect(differ == 0, "\(differ) values differ from GEMM then add: \(place)")
        #expect(zip(plain, noResidual).allSatisfy { $0.bitPattern == $1.bitPattern }, "no residual ≠ mlk_gemm_packed: \(place)")
        #expect(fused != plain, "the residual was not added: \(place)")
        #expect((0..<m).allSatisfy { r in (n..<ldy).allSatisfy { fused[r * ldy + $0] == 777 } }, "wrote past column \(n): \(place)")
    }

    /// `mlk_conv_rows` (a stem: interior pixels read in place, borders through im2col rows) gives the bits of
    /// `mlk_im2col_rows` + `mlk_gemm_packed` at every level: the usual 3 × 3 stride-2 stem with 16, 24 and 32 outputs
    /// (its 12- and 8-pixel tiles and the tails), a 7 × 7 stride-2 and a one-channel 3 × 3 stride-1 one.
    @Test func stemRowsGiveTheBitsOfIm2colAndGemm() {
        var checked = 0
        let levels = forEachCPULevel { level in
            for (h, w, c, k, s, n, act) in [(37, 61, 3, 3, 2, 32, Int32(MLK_ACT_CLIP)), (29, 50, 3, 3, 2, 24, Int32(MLK_ACT_SWISH)),
                                            (33, 47, 3, 3, 2, 16, Int32(MLK_ACT_NONE)), (40, 45, 3, 7, 2, 32, Int32(MLK_ACT_RELU)),
                                            (21, 30, 1, 3, 1, 8, Int32(MLK_ACT_CLIP))] {
                let pad = k / 2
                let oh = (h + 2 * pad - k) / s + 1, ow = (w + 2 * pad - k) / s + 1, kk = k * k * c
                let x = (0..<(h * w * c)).map { Float(sin(Double($0) * 0.21)) }
                let wt = (0..<(kk * n)).map { Float(cos(Double($0) * 0.17)) / Float(kk).squareRoot() }
                let bias = (0..<n).map { Float($0 % 3) * 0.2 - 0.2 }
                let packed = Self.packed(wt, k: kk, n: n)
                defer { UnsafeMutableRawPointer(packed).deallocate() }
                var direct = [Float](repeating: .nan, count: oh * ow * n), twoSteps = direct
                var cols = [Float](repeating: 0, count: oh * ow * kk)
                direct.withUnsafeMutableBufferPointer { y in
                    cols.withUnsafeMutableBufferPointer { colp in
                        mlk_conv_rows(x, Int64(h), Int64(w), Int64(c), Int64(k), Int64(k), packed, Int64(n), Int64(ow), 0,
                                      Int64(oh * ow), Int64(s), Int64(s), 1, 1, Int64(pad), Int64(pad), bias, y.baseAddress,
                                      colp.baseAddress, act, 0, 6)
                    }
                }
                cols.withUnsafeMutableBufferPointer { colp in
                    mlk_im2col_rows(x, Int64(h), Int64(w), Int64(c), Int64(k), Int64(k), colp.baseAddress, Int64(ow), 0,
                                    Int64(oh * ow), Int64(s), Int64(s), 1, 1, Int64(pad), Int64(pad))
                    twoSteps.withUnsafeMutableBufferPointer { y in
                        mlk_gemm_packed(colp.baseAddress, Int64(kk), packed, 0, Int64(oh * ow), Int64(n), Int64(kk), bias,
                                        y.baseAddress, Int64(n), act, 0, 6)
                    }
                }
                let differ = zip(direct, twoSteps).filter { $0.bitPattern != $1.bitPattern }.count
                #expect(differ == 0, "level \(level), \(h)×\(w)×\(c) k\(k) s\(s) n\(n): \(differ) values differ")
                checked += 1
            }
        }
        #expect(!levels.isEmpty && checked == 5 * levels.count)
    }
}
