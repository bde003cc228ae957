import CMLToolCPU
import CMLToolKernels
import Foundation
import MLToolCore
import Testing
@testable import MLToolEngine
import MLToolTestSupport

/// Plain scalar reference of the int8 path: rows of `a` (m, k) quantized to 7 bits, an exact int32 dot product with the
/// int8 weights w (k, n), and the documented epilogue.
struct Int8Reference {
    static func quantize(_ row: ArraySlice<Float>) -> (q: [UInt8], scale: Float, zp: Int32) {
        let lo = min(0, row.min() ?? 0), hi = max(0, row.max() ?? 0)
        var s = (hi - lo) / 127, r = 1 / s
        if !(s > 0) || !r.isFinite { s = 1; r = 1 }
        let z = Int32(max(0, min(127, (-lo * r).rounded(.toNearestOrEven))))
        let q = row.map { UInt8(max(0, min(127, Int32((($0 * r).rounded(.toNearestOrEven))) + z))) }
        return (q, s, z)
    }

    /// y (m, n) = act(fma(Σ q·w − zp·colsum, ascale·wscale, bias)).
    static func gemm(_ a: [Float], m: Int, k: Int, _ w: [Int8], n: Int, wscale: [Float], bias: [Float]?,
                     act: (Float) -> Float) -> [Float] {
        var y = [Float](repeating: 0, count: m * n)
        for i in 0..<m {
            let (q, s, z) = quantize(a[i * k..<(i + 1) * k])
            for j in 0..<n {
                var acc: Int32 = 0, cs: Int32 = 0
                for t in 0..<k { acc += Int32(q[t]) * Int32(w[t * n + j]); cs += Int32(w[t * n + j]) }
                y[i * n + j] = act((bias?[j] ?? 0).addingProduct(Float(acc - z * cs), s * wscale[j]))
            }
        }
        return y
    }
}

/// Symmetric per-output-channel int8 (what `mltool quantize --bits 8` writes), done here so the engine tests do not
/// depend on MLToolQuant: scale[c] = max|w[…, c]| / 127, q = round(w / scale).
func int8Weights(_ t: StoredTensor) throws -> StoredTensor {
    let w = try t.floats()
    let n = t.shape.last!
    var scales = [Float](repeating: 0, count: n)
    for (i, v) in w.enumerated() { scales[i % n] = max(scales[i % n], abs(v)) }
    scales = scales.map { $0 > 0 ? $0 / 127 : 1 }
    let q = w.enumerated().map { UInt8(bitPattern: Int8(max(-127, min(127, ($0.element / scales[$0.offset % n]).rounded())))) }
    return StoredTensor(name: t.name, dtype: .int8, shape: t.shape, quant: QuantParams(axis: t.shape.count - 1, scales: scales),
                        bytes: TensorBytes(copying: q))
}

/// `t` as a 4-bit palette (one table for the tensor: 16 values evenly spread over its range, each weight its nearest).
func palette4Weights(_ t: StoredTensor) throws -> StoredTensor {
    let w = try t.floats()
    let lo = w.min() ?? 0, hi = w.max() ?? 0
    let lut = (0..<16).map { lo + (hi - lo) * Float($0) / 15 }
    let indices = w.map { v in lut.indices.min(by: { abs(lut[$0] - v) < abs(lut[$1] - v) }) ?? 0 }
    return StoredTensor(name: t.name, dtype: .palette4, shape: t.shape, quant: QuantParams(lut: lut),
                        bytes: TensorBytes(copying: PackedBits.pack(indices, bits: 4)))
}

/// A small network whose stem (3×3 stride 2), 1×1 convs and dense layer have int8 weights; the depthwise conv
/// stays float.
func int8Network() throws -> Model {
    var g = GraphBuilder(seed: 31, input: [-1, 15, 13, 3])
    var x = g.conv("x", cin: 3, cout: 16, k: (3, 3), stride: 2, pads: [1, 1, 1, 1], act: .relu6)
    x = g.conv(x, cin: 16, cout: 40, k: (1, 1), act: .relu6)
    x = g.conv(x, cin: 40, cout: 40, k: (3, 3), pads: [1, 1, 1, 1], groups: 40, act: .relu6)
    x = g.conv(x, cin: 40, cout: 24, k: (1, 1))
    x = g.conv(x, cin: 24, cout: 100, k: (1, 1), act: Activation(op: .hardSwish))
    let pooled = g.node(.flatten, [g.node(.globalAvgPool, [x])], name: "features")
    let logits = g.dense(pooled, 100, 7)
    var model = g.model(outputs: [logits])
    let weights = Set(model.metadata.graph!.nodes.filter { $0.op == .dense || ($0.op == .conv && $0.attributes.groups ?? 1 == 1) }.map { $0.inputs[1] })
    model.tensors = try model.tensors.map { weights.contains($0.name) ? try int8Weights($0) : $0 }
    return model
}

@Suite(.serialized) struct Int8Tests {
    static let shapes: [(m: Int, n: Int, k: Int)] = [(1, 10, 1280), (13, 17, 5), (9, 33, 27), (50, 49, 3), (8, 48, 64),
                                                     (3, 1, 1), (17, 100, 130), (70, 16, 24)]

    @Test func everyInt8LevelMatchesTheScalarReferenceExactly() throws {
        do {
            try forEachCPULevel { level in
                for (si, (m, n, k)) in Self.shapes.enumerated() {
                    var g = GraphBuilder(seed: UInt64(si + 1), input: [])
                    // Rows shifted by their index: all-positive, all-negative and mixed rows.
                    let a = g.values(m * k, -2, 2).enumerated().map { $0.element + Float($0.offset / k % 5) - 2 }
                    let w = (0..<(k * n)).map { _ in Int8(Int(g.rng.nextUnit() * 255) - 127) }
                    let ws = g.values(n, 0.001, 0.02), bias = g.values(n)
                    try check(a, m: m, k: k, w, n: n, ws: ws, bias: bias, level: level)
                }
            }
        }
    }

    func check(_ a: [Float], m: Int, k: Int, _ w: [Int8], n: Int, ws: [Float], bias: [Float], level: Int32) throws {
        let panels = (n + 15) / 16
        var packed = [Int8](repeating: 0, count: panels * Int(mlk_qpanel_bytes(Int64(k))))
        var colsum = [Int32](repeating: 0, count: panels * 16)
        var wscale = [Float](repeating: 0, count: panels * 16)
        for j in 0..<n { wscale[j] = ws[j] }
        mlk_qpack(w, Int64(k), Int64(n), &packed, &colsum)
        let ldq = Int(mlk_qrow_bytes(Int64(k)))
        var q = [UInt8](repeating: 7, count: m * ldq), scale = [Float](repeating: 0, count: m), zp = [Int32](repeating: 0, count: m)
        mlk_quantize_rows(a, Int64(k), 0, Int64(m), Int64(k), &q, Int64(ldq), &scale, &zp)
        for i in 0..<m {
            let r = Int8Reference.quantize(a[i * k..<(i + 1) * k])
            #expect(Array(q[i * ldq..<i * ldq + k]) == r.q && scale[i] == r.scale && zp[i] == r.zp,
                    "level \(level): row \(i) of \(m)×\(k) quantized differently")
            #expect(q[i * ldq + k..<(i + 1) * ldq].allSatisfy { $0 == 0 }, "level \(level): padding bytes not zeroed")
        }
        let acts: [((code: Int32, p0: Float, p1: Float), (Float) -> Float)] = [
            ((Int32(MLK_ACT_NONE), 0, 0), { $0 }),
            ((Int32(MLK_ACT_RELU), 0, 0), { $0 > 0 ? $0 : 0 }),
            ((Int32(MLK_ACT_CLIP), 0, 6), { min(max($0, 0), 6) }),
            ((Int32(MLK_ACT_LEAKY), 0.1, 0), { $0 < 0 ? 0.1 * $0 : $0 }),
            // The epilogue's GELU is mlk_gelu's, bit for bit.
            ((Int32(MLK_ACT_GELU), 0, 0), { x in var y: Float = 0; mlk_gelu([x], &y, 1); return y }),
        ]
        for (ai, (act, f)) in acts.enumerated() {
            let withBias = ai != 1
            var y = [Float](repeating: .nan, count: m * n)
            // Two row ranges, as threads would split them.
            let split = Int64(m / 2)
            withBias ? mlk_qgemm(q, Int64(ldq), scale, zp, packed, colsum, wscale, 0, split, Int64(n), Int64(k), bias, nil, &y, Int64(n), act.code, act.p0, act.p1, 0)
                     : mlk_qgemm(q, Int64(ldq), scale, zp, packed, colsum, wscale, 0, split, Int64(n), Int64(k), nil, nil, &y, Int64(n), act.code, act.p0, act.p1, 0)
            withBias ? mlk_qgemm(q, Int64(ldq), scale, zp, packed, colsum, wscale, split, Int64(m), Int64(n), Int64(k), bias, nil, &y, Int64(n), act.code, act.p0, act.p1, 0)
                     : mlk_qgemm(q, Int64(ldq), scale, zp, packed, colsum, wscale, split, Int64(m), Int64(n), Int64(k), nil, nil, &y, Int64(n), act.code, act.p0, act.p1, 0)
            let r = Int8Reference.gemm(a, m: m, k: k, w, n: n, wscale: ws, bias: withBias ? bias : nil, act: f)
            let mismatches = zip(y, r).filter { $0 != $1 }.count
            #expect(mismatches == 0, "level \(level), \(m)×\(n)×\(k), act \(act.code): \(mismatches) values differ")
            // With a residual (a projection and the add after it): the bits of the product without activation, then
            // mlk_add_act; rows of ldy > n, whose columns past n stay as they were.
            let ldy = n + 3
            let res = (0..<(m * ldy)).map { Float(sin(Double($0) * 0.71)) * 2 }
            var fused = [Float](repeating: 777, count: m * ldy), twoSteps = fused
            mlk_qgemm(q, Int64(ldq), scale, zp, packed, colsum, wscale, 0, split, Int64(n), Int64(k), withBias ? bias : nil,
                      res, &fused, Int64(ldy), act.code, act.p0, act.p1, 0)
            mlk_qgemm(q, Int64(ldq), scale, zp, packed, colsum, wscale, split, Int64(m), Int64(n), Int64(k),
                      withBias ? bias : nil, res, &fused, Int64(ldy), act.code, act.p0, act.p1, 0)
            mlk_qgemm(q, Int64(ldq), scale, zp, packed, colsum, wscale, 0, Int64(m), Int64(n), Int64(k), withBias ? bias : nil,
                      nil, &twoSteps, Int64(ldy), Int32(MLK_ACT_NONE), 0, 0, 0)
            twoSteps.withUnsafeMutableBufferPointer { t in
                res.withUnsafeBufferPointer { rb in
                    for i in 0..<m {
                        mlk_add_act(t.baseAddress! + i * ldy, rb.baseAddress! + i * ldy, t.baseAddress! + i * ldy, Int64(n),
                                    act.code, act.p0, act.p1)
                    }
                }
            }
            let differ = zip(fused, twoSteps).filter { $0.bitPattern != $1.bitPattern }.count
            #expect(differ == 0, "level \(level), \(m)×\(n)×\(k), act \(act.code), residual: \(differ) values differ")
            #expect((0..<m).allSatisfy { i in fused[(i * ldy + n)..<((i + 1) * ldy)].allSatisfy { $0 == 777 } },
                    "level \(level), \(m)×\(n)×\(k), residual: a value written past column n")
            // And the int8 result is close to the float product it approximates.
            if ai == 0 {
                var float = [Float](repeating: 0, count: m * n)
                for i in 0..<m {
                    for j in 0..<n {
                        var e = bias[j]
                        for t in 0..<k { e += a[i * k + t] * Float(w[t * n + j]) * ws[j] }
                        float[i * n + j] = e
                    }
                }
                let top = Double(float.map(abs).max() ?? 0)
                assertClose(y, float, atol: 0.02 * max(top, 1), "level \(level), \(m)×\(n)×\(k) vs the float product")
            }
        }
    }

    /// Rows holding NaN or infinities (a diverged layer, a hostile input) quantize to the same bytes, scales and zero
    /// points at every level, every length from 1 to 40 (each of AVX2's tails) and a few longer: the AVX2 and AVX-512
    /// range passes once let a NaN lane replace the other values of its lane, so their rows differed from the
    /// portable level's (which ignores NaN).
    @Test func everyLevelQuantizesNaNAndInfinitiesAsThePortableLevel() throws {
        let specials: [Float] = [.nan, .infinity, -.infinity, -0.0, .greatestFiniteMagnitude, -.leastNonzeroMagnitude]
        for k in Array(1...40) + [63, 64, 65, 130, 300] {
            var g = GraphBuilder(seed: UInt64(k), input: [])
            // Row 0 finite; then one special value per row at each position (a sample of them past 40), with the
            // row's extremes 16 and 32 places away (the same lane of a vector: where a NaN hid them); the last row
            // all NaN.
            var rows: [[Float]] = [g.values(k, -3, 3)]
            let positions = k <= 40 ? Array(0..<k) : [0, 1, 7, 8, 15, 16, 31, 32, k / 2, k - 17, k - 16, k - 9, k - 2, k - 1]
            for v in specials {
                for at in positions {
                    var r = g.values(k, -1, 1)
                    let low = at >= 16 ? at - 16 : at + 16, high = at >= 32 ? at - 32 : at + 32
                    if low < k { r[low] = -5 }
                    if high < k && high != low { r[high] = 5 }
                    r[at] = v
                    rows.append(r)
                }
            }
            rows.append([Float](repeating: .nan, count: k))
            let a = rows.flatMap { $0 }, m = rows.count, ldq = Int(mlk_qrow_bytes(Int64(k)))
            var portable: (q: [UInt8], scale: [UInt32], zp: [Int32])?
            _ = forEachCPULevel { level in
                var q = [UInt8](repeating: 0xA5, count: m * ldq + 1), scale = [Float](repeating: 0, count: m)
                var zp = [Int32](repeating: -1, count: m)
                mlk_quantize_rows(a, Int64(k), 0, Int64(m), Int64(k), &q, Int64(ldq), &scale, &zp)
                #expect(q[m * ldq] == 0xA5, "level \(level), k = \(k): a byte written past the last row")
                let got = (Array(q[0..<(m * ldq)]), scale.map(\.bitPattern), zp)
                guard let want = portable else { portable = got; return }
                for i in 0..<m where Array(got.0[(i * ldq)..<((i + 1) * ldq)]) != Array(want.q[(i * ldq)..<((i + 1) * ldq)])
                    || got.1[i] != want.scale[i] || got.2[i] != want.zp[i] {
                    Issue.record("level \(level), k = \(k), row \(i) (\(rows[i].filter { !$0.isFinite || $0 == 0 })): quantized unlike the portable level")
                }
            }
        }
    }

    /// Whether /proc/cpuinfo lists AVX-VNNI (the 256-bit vpdpbusd), independently of the engine's detection.
    static let cpuHasAVXVNNI: Bool = {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let flags = info.split(separator: "\n").first { $0.hasPrefix("flags") } ?? ""
        return flags.split(separator: " ").contains("avx_vnni")
    }()

    @Test func int8NetworkIsCloseToFloatAndIdenticalAcrossLevelsAndThreads() throws {
        let model = try int8Network()
        var g = GraphBuilder(seed: 8, input: [])
        let input = g.input([3, 15, 13, 3])
        do {
            let float = try #require(try Engine(model: model, threads: 1, int8Compute: .off).run(["x": input]).values.first)
            let ref = try #require(try Engine(model: model, threads: 1, mode: .reference).run(["x": input]).values.first)
            assertClose(float, ref, rtol: fastTolerance, atol: fastTolerance, "int8 weights, float compute")
            var first: Tensor?
            try forEachCPULevel { level in
                // `.auto` keeps the small layers in float; the 24 → 100 conv (k = 24) runs on int8 kernels only where
                // the CPU has VNNI (`QuantizedWeights.autoMinimumKWithoutVNNI`): between the two there, float without.
                // VNNI at a level: AVX-512's from the avx512-vnni level, AVX-VNNI's (256-bit) from avx2-vnni up — on a
                // CPU that has it (an Intel Xeon with avx_vnni runs its avx512 level's int8 GEMM on AVX-VNNI; a Zen 4 has
                // none), read from /proc/cpuinfo, not from the engine's own detection.
                let vnni = level >= Int32(MLK_CPU_AVX512_VNNI) || (level >= Int32(MLK_CPU_AVX2_VNNI) && Self.cpuHasAVXVNNI)
                #expect(Engine.int8Minimum(.auto) == Program.Int8Minimum(weights: QuantizedWeights.autoMinimum,
                                                                        k: vnni ? 1 : QuantizedWeights.autoMinimumKWithoutVNNI))
                let run = { (c: Engine.Int8Compute) in try #require(try Engine(model: model, threads: 1, int8Compute: c).run(["x": input]).values.first) }
                let (off, auto, all) = (try run(.off), try run(.auto), try run(.all))
                if vnni { #expect(auto.data != off.data && auto.data != all.data, "level \(level): .auto") }
                else { #expect(auto.data == off.data, "level \(level): .auto ran the k = 24 conv on int8 kernels") }
                for threads in [1, 2] {
                    let engine = try Engine(model: model, threads: threads, int8Compute: .all)
                    let y = try #require(try engine.run(["x": input]).values.first)
                    #expect(y.shape == [3, 7])
                    let scale = Double(float.data.map(abs).max() ?? 1)
                    assertClose(y, float, atol: 0.03 * scale, "level \(level), \(threads) threads: int8 vs float compute")
                    #expect(y.data != float.data, "int8 compute left the float path's output unchanged")
                    if let f = first { #expect(y.data == f.data, "level \(level), \(threads) threads: not bit-identical") }
                    first = first ?? y
                    // One image at a time gives the batch's rows exactly.
                    let one = Tensor(shape: [1, 15, 13, 3], data: Array(input.data[(15 * 13 * 3)..<(2 * 15 * 13 * 3)]))
                    let y1 = try #require(try engine.run(["x": one]).values.first)
                    #expect(y1.data == Array(y.data[7..<14]))
                }
            }
        }
    }

    /// Palettized weights run on the int8 kernels (rounded per column to int8 at load) under `.all`: close to the
    /// palette's float dequantization (`.off`, and `.auto`, which keeps palettes in float), not equal to it, and
    /// identical at every SIMD level.
    @Test func paletteWeightsRunOnTheInt8Kernels() throws {
        var model = try int8Network()
        let float = try int8Network()
        // The same weights as float, then as 4-bit palettes.
        model.tensors = try float.tensors.map { t in t.dtype == .int8 ? try palette4Weights(StoredTensor(name: t.name, tensor: t.tensor())) : t }
        #expect(model.tensors.filter { $0.dtype == .palette4 }.count == 5)
        var g = GraphBuilder(seed: 9, input: [])
        let input = g.input([2, 15, 13, 3])
        do {
            let off = try #require(try Engine(model: model, threads: 1, int8Compute: .off).run(["x": input]).values.first)
            let auto = try #require(try Engine(model: model, threads: 1, int8Compute: .auto).run(["x": input]).values.first)
            #expect(auto.data == off.data, ".auto ran a palettized layer on the int8 kernels")
            let scale = Double(off.data.map(abs).max() ?? 1)
            var first: Tensor?
            try forEachCPULevel { level in
                let y = try #require(try Engine(model: model, threads: 2, int8Compute: .all).run(["x": input]).values.first)
                assertClose(y, off, atol: 0.03 * scale, "level \(level): palette on int8 kernels vs its float dequantization")
                #expect(y.data != off.data, "level \(level): the palette layers did not run on the int8 kernels")
                // Identical at every SIMD level (the portable depthwise kernel rounds its float sums differently,
                // which can move a 7-bit activation of the next layer by one step).
                guard level > 0 else { return }
                if let f = first { #expect(y.data == f.data, "level \(level): not bit-identical") }
                first = first ?? y
            }
        }
    }

    /// Palettes whose tables are int8 (`mltool quantize --lut int8`) run on the int8 kernels as exactly the int8
    /// weights they stand for: bit for bit the outputs of those values stored as linear int8 with the same scales,
    /// at every level and for every `Int8Compute`; a table off the integers by one entry takes the rounding path.
    @Test func int8TablePalettesRunAsTheirExactInt8Weights() throws {
        let base = try int8Network()
        // 6-bit palettes with per-channel scales and one table per 2 output channels, 64 integers each, every
        // weight its nearest entry; and the same values as linear int8.
        var palettes = base, linear = base, offGrid = base
        for (i, t) in base.tensors.enumerated() where t.dtype == .int8 {
            let q = try #require(t.quant), scales = try #require(q.scales)
            let n = t.shape.last!, groups = (n + 1) / 2
            let table = { (g: Int) in (0..<64).map { j in Float(max(-127, min(127, (-127 + Float(j) * 254 / 63).rounded() + Float(g % 3 - 1)))) } }
            let lut = (0..<groups).flatMap(table)
            let stored = t.bytes.buffer.map { Int8(bitPattern: $0) }
            var indices = [Int](), values = [Int8]()
            for (e, v) in stored.enumerated() {
                let g = (e % n) / 2, entries = lut[(g * 64)..<(g * 64 + 64)]
                let j = entries.indices.min { abs(entries[$0] - Float(v)) < abs(entries[$1] - Float(v)) }! - g * 64
                indices.append(j)
                values.append(Int8(lut[g * 64 + j]))
            }
            let quant = QuantParams(axis: t.shape.count - 1, scales: scales, groupSize: 2, lut: lut)
            palettes.tensors[i] = StoredTensor(name: t.name, dtype: .palette6, shape: t.shape, quant: quant,
                                               bytes: TensorBytes(copying: PackedBits.pack(indices, bits: 6)))
            linear.tensors[i] = StoredTensor(name: t.name, dtype: .int8, shape: t.shape, quant: QuantParams(axis: t.shape.count - 1, scales: scales),
                                             bytes: TensorBytes(copying: values.map { UInt8(bitPattern: $0) }))
            var half = quant
            half.lut![63] += 0.5   // one entry off the integers: the rounding path (`.all`) instead
            offGrid.tensors[i] = StoredTensor(name: t.name, dtype: .palette6, shape: t.shape, quant: half,
                                              bytes: TensorBytes(copying: PackedBits.pack(indices, bits: 6)))
        }
        #expect(palettes.tensors.filter { $0.dtype == .palette6 }.count == 5)
        var g = GraphBuilder(seed: 10, input: [])
        let input = g.input([2, 15, 13, 3])
        let run = { (m: Model, c: Engine.Int8Compute) in try #require(try Engine(model: m, threads: 2, int8Compute: c).run(["x": input]).values.first) }
        do {
            try forEachCPULevel { level in
                for c in [Engine.Int8Compute.off, .auto, .all] {
                    #expect(try run(palettes, c).data == run(linear, c).data, "level \(level), \(c): int8 table ≠ its int8 values")
                }
                let all = try run(palettes, .all), off = try run(palettes, .off)
                #expect(all.data != off.data, "level \(level): the int8-table palettes did not run on the int8 kernels")
                #expect(try run(offGrid, .all).data != all.data, "level \(level): a table off the integers ran as int8 values")
            }
        }
    }

    /// `mlk_qpalette_unpack` at every level gives exactly the bytes `mlk_qpack` writes for the values the indices
    /// stand for (each looked up in its panel's table, computed here from the packed bit stream), padding included,
    /// for whole layers and for panel ranges; `mlk_qpalette_pack` refuses other widths and short streams.
    @Test func keptIndicesDecodeToTheQpackOfTheirValues() throws {
        var g = GraphBuilder(seed: 41, input: [])
        for bits in [4, 6] {
            for (k, n) in [(1, 1), (3, 17), (27, 32), (64, 100), (130, 16), (5, 33), (1152, 49)] {
                let entries = 1 << bits, panels = (n + 15) / 16
                let indices = (0..<(k * n)).map { _ in Int(g.rng.nextUnit() * Float(entries)) % entries }
                let stream = PackedBits.pack(indices, bits: bits)
                let tables = (0..<(panels * entries)).map { _ in Int8(Int(g.rng.nextUnit() * 255) - 127) }
                var values = [Int8](repeating: 0, count: k * n)
                for i in 0..<(k * n) { values[i] = tables[(i % n / 16) * entries + indices[i]] }
                let panelBytes = Int(mlk_qpanel_bytes(Int64(k)))
                var expected = [Int8](repeating: 0, count: panels * panelBytes), colsum = [Int32](repeating: 0, count: panels * 16)
                mlk_qpack(values, Int64(k), Int64(n), &expected, &colsum)
                // Column sums of the panels (what QuantizedWeights computes for kept indices): each column's values
                // added up here, 0 past n.
                var sums = [Int32](repeating: 0, count: panels * 16)
                for i in 0..<(k * n) { sums[i % n] += Int32(values[i]) }
                var fromPanels = [Int32](repeating: 7, count: panels * 16)
                mlk_qpanel_colsum(expected, Int64(k), Int64(panels), &fromPanels)
                #expect(fromPanels == sums && colsum == sums, "\(bits) bits, \(k)×\(n): column sums differ")
                var kept = [UInt8](repeating: 0xAA, count: panels * Int(mlk_qpalette_panel_bytes(Int64(k), Int32(bits))))
                #expect(mlk_qpalette_pack(stream, Int64(stream.count), Int32(bits), Int64(k), Int64(n), &kept) == 1)
                #expect(mlk_qpalette_pack(stream, Int64(stream.count - 1), Int32(bits), Int64(k), Int64(n), &kept) == 0,
                        "a stream one byte short was taken")
                #expect(mlk_qpalette_pack(stream, Int64(stream.count), 5, Int64(k), Int64(n), &kept) == 0)
                let levels = forEachCPULevel { level in
                    var whole = [Int8](repeating: 99, count: expected.count)
                    mlk_qpalette_unpack(kept, Int32(bits), Int64(k), Int64(n), tables, 0, Int64(panels), &whole)
                    #expect(whole == expected, "level \(level), \(bits) bits, \(k)×\(n): decoded panels ≠ mlk_qpack's")
                    // The last panels alone, as a part of the columns decodes them.
                    let p0 = panels / 2
                    var part = [Int8](repeating: 99, count: (panels - p0) * panelBytes)
                    mlk_qpalette_unpack(kept, Int32(bits), Int64(k), Int64(n), tables, Int64(p0), Int64(panels), &part)
                    #expect(part[...] == expected[(p0 * panelBytes)...], "level \(level), \(bits) bits, \(k)×\(n): panels \(p0)…")
                }
                #expect(levels.count >= 1)
            }
        }
    }

    /// 4- and 6-bit palettes with one int8 table per tensor keep their indices where the CPU decodes them
    /// (`QuantizedWeights.kept`: layers of at least `keepMinimum` weights), and compute bit for bit what the same
    /// values stored as linear int8 do: at every level, on 1 and 2 threads, with many rows (2 images of 7 × 7:
    /// indices decoded whole) and few (1 image: a block of columns at a time per part; the dense layer); without
    /// AVX2 they are packed as int8 instead, and so is the small first conv.
    @Test func keptIndicesComputeTheBitsOfTheirInt8Values() throws {
        var b = GraphBuilder(seed: 33, input: [-1, 7, 7, 3])
        // Activations with negative values, so that every row's zero point (and with it each column's sum) counts.
        var x = b.conv("x", cin: 3, cout: 128, k: (3, 3), pads: [1, 1, 1, 1])
        x = b.conv(x, cin: 128, cout: 130, k: (1, 1), act: Activation(op: .hardSwish))
        x = b.conv(x, cin: 130, cout: 127, k: (1, 1), act: Activation(op: .hardSwish))
        let pooled = b.node(.flatten, [b.node(.globalAvgPool, [x])], name: "features")
        let logits = b.dense(pooled, 127, 130)
        var base = b.model(outputs: [logits])
        let gemmWeights = Set(base.metadata.graph!.nodes.filter { $0.op == .dense || $0.op == .conv }.map { $0.inputs[1] })
        base.tensors = try base.tensors.map { gemmWeights.contains($0.name) ? try int8Weights($0) : $0 }
        for bits in [4, 6] {
            var palettes = base, linear = base
            for (i, t) in base.tensors.enumerated() where t.dtype == .int8 {
                let q = try #require(t.quant), scales = try #require(q.scales)
                let n = t.shape.last!, entries = 1 << bits
                let lut = (0..<entries).map { j in Float((-127 + Float(j) * 254 / Float(entries - 1)).rounded()) }
                var indices = [Int](), values = [Int8]()
                for b in t.bytes.buffer {
                    let v = Float(Int8(bitPattern: b))
                    let j = lut.indices.min { abs(lut[$0] - v) < abs(lut[$1] - v) }!
                    indices.append(j)
                    values.append(Int8(lut[j]))
                }
                palettes.tensors[i] = StoredTensor(name: t.name, dtype: bits == 4 ? .palette4 : .palette6, shape: t.shape,
                                                   quant: QuantParams(axis: t.shape.count - 1, scales: scales, groupSize: n, lut: lut),
                                                   bytes: TensorBytes(copying: PackedBits.pack(indices, bits: bits)))
                linear.tensors[i] = StoredTensor(name: t.name, dtype: .int8, shape: t.shape, quant: QuantParams(axis: t.shape.count - 1, scales: scales),
                                                 bytes: TensorBytes(copying: values.map { UInt8(bitPattern: $0) }))
            }
            var g = GraphBuilder(seed: 12, input: [])
            let inputs = [g.input([2, 7, 7, 3]), g.input([1, 7, 7, 3])]
            try forEachCPULevel { level in
                let optimized = try GraphPasses.optimize(palettes)
                let p = try Program(graph: try #require(optimized.metadata.graph), tensors: optimized.tensorsByName,
                                    int8Minimum: Engine.int8Minimum(.all))
                let kept = p.steps.filter { $0.qweights?.kept != nil }.count
                let avx2 = mlk_cpu_has(Int32(MLK_CPU_AVX2)) != 0
                #expect(avx2 ? kept == 3 : kept == 0, "level \(level), \(bits) bits: \(kept) layers kept their indices")
                for threads in [1, 2] {
                    for input in inputs {
                        let run = { (m: Model) in
                            try #require(try Engine(model: m, threads: threads, int8Compute: .all).run(["x": input]).values.first)
                        }
                        #expect(try run(palettes).data == run(linear).data,
                                "level \(level), \(bits) bits, \(threads) threads, batch \(input.shape[0]): kept ≠ int8 values")
                    }
                }
            }
        }
    }

    @Test func weightsNotSymmetricPerChannelFallBackToFloat() throws {
        var model = try int8Network()
        // Asymmetric zero points: the int8 kernels cannot take them; the engine must dequantize instead.
        model.tensors = model.tensors.map { t in
            guard t.dtype == .int8, var q = t.quant else { return t }
            q.zeroPoints = Array(repeating: 3, count: q.scales?.count ?? 0)
            return StoredTensor(name: t.name, dtype: t.dtype, shape: t.shape, quant: q, bytes: t.bytes)
        }
        var g = GraphBuilder(seed: 9, input: [])
        let input = g.input([2, 15, 13, 3])
        let a = try #require(try Engine(model: model, threads: 1, int8Compute: .all).run(["x": input]).values.first)
        let b = try #require(try Engine(model: model, threads: 1, mode: .reference).run(["x": input]).values.first)
        assertClose(a, b, rtol: fastTolerance, atol: fastTolerance, "asymmetric int8 weights, dequantized")
    }
}
