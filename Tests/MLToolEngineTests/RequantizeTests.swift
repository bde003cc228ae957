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
    /// in the first rows and columns, where AVX2's vpmaddubsw would saturate a pair (2 · 255 · 127 > 32,767).
    @Test(arguments: [false, true])
    func qgemmRequantGivesTheDefinitionAtEveryLevel(wide: Bool) throws {
        var rng = SplitMix64(seed: wide ? 45 : 41)
        for (m, k, n) in [(13, 70, 37), (4, 8, 16), (9, 131, 50), (1, 27, 5)] {
            var codes = (0..<(m * k)).map { _ in UInt8(rng.next() % 256) }
            let bound = wide ? 127 : 64
            var w = (0..<(k * n)).map { _ in Int8(Int(rng.next() % UInt64(2 * bound + 1)) - bound) }
            if wide {
                for t in 0..<k { codes[t] = 255; w[t * n] = 127; w[t * n + n - 1] = -127 }
            }
            let zp = (0..<m).map { _ in Int32(rng.next() % 256) }
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
                                var rq = mlk_qrequant(bias: b.baseAddress, mult: mu.baseAddress, lo: lo, hi: hi, scale: scale)
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
}
