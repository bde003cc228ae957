import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing

/// `quantize` and `dequantize` (ONNX QuantizeLinear / DequantizeLinear on computed tensors): the fast path
/// (`mlk_quantize_linear`) gives the reference kernel's bits, at known points (ties to even, saturation, NaN), per
/// tensor and per channel; an int8 layer reading a QDQ pair's output as its codes gives the exact integer products.
/// onnxruntime's outputs for the same ops are checked by ONNXQuantizedTests and ONNXConformanceTests.
@Suite struct QuantizeOpTests {
    func bothModesAgree(_ model: Model, _ feeds: [String: Tensor], _ y: String) throws -> Tensor {
        let fast = try #require(try Engine(model: model, threads: 2, mode: .fast).run(feeds, outputs: [y])[y])
        let ref = try #require(try Engine(model: model, threads: 1, mode: .reference).run(feeds, outputs: [y])[y])
        #expect(fast.shape == ref.shape)
        #expect(fast.data.map(\.bitPattern) == ref.data.map(\.bitPattern), "fast and reference bits differ")
        return ref
    }

    static func attributes(_ scales: [Float], _ zeroPoints: [Int], axis: Int? = nil, range: ClosedRange<Int>? = nil,
                           mode: String? = nil) -> Attributes {
        var a = Attributes(axis: axis, min: range.map { Float($0.lowerBound) }, max: range.map { Float($0.upperBound) }, mode: mode)
        a.quantScales = scales
        a.quantZeroPoints = zeroPoints
        return a
    }

    @Test func perTensorAtKnownPoints() throws {
        var b = GraphBuilder(seed: 3, input: [-1, 3, 4, 5])
        let q = b.node(.quantize, ["x"], Self.attributes([1], [10], range: 0...255))
        let model = b.model(outputs: [q])
        var x = b.input([2, 3, 4, 5])
        for (i, v) in [0.5, 1.5, 2.5, -0.5, -1.5, 300, -100, 3.5, .nan].enumerated() { x.data[i] = Float(v) }
        let got = try bothModesAgree(model, ["x": x], q)
        #expect(Array(got.data.prefix(9)) == [10, 12, 12, 10, 8, 255, 0, 14, 10])
    }

    @Test(arguments: [nil, "values"])
    func perChannelFastMatchesReference(_ mode: String?) throws {
        var b = GraphBuilder(seed: 5, input: [-1, 6, 7, 3])
        // Along the last (NHWC channel) axis and along axis 1; int8 codes.
        let q1 = b.node(.quantize, ["x"], Self.attributes([0.01, 0.1, 0.003], [-3, 0, 7], axis: 3, range: -128...127, mode: mode))
        let q2 = b.node(.quantize, [q1], Self.attributes((0..<6).map { 0.02 * Float($0 + 1) }, [0, 1, 2, 3, 4, 5], axis: 1,
                                                         range: -128...127, mode: mode))
        let d = b.node(.dequantize, [q2], Self.attributes([0.5, 0.25, 2], [1, 0, -1], axis: -1))
        let model = b.model(outputs: [d])
        let x = b.input([3, 6, 7, 3])
        let got = try bothModesAgree(model, ["x": x], d)
        #expect(got.shape == [3, 6, 7, 3])
    }

    /// x → QDQ pair (uint8, scale 0.05, zero point 3) → dense with int8 weights in −64…64: the int8 kernel reads the
    /// codes, so the output is Σ 0.05·(q − 3)·wscale·w + bias computed exactly, up to float32's last bits.
    @Test func int8LayerReadsTheCodes() throws {
        var b = GraphBuilder(seed: 9, input: [-1, 96])
        let xq = b.node(.quantize, ["x"], Self.attributes([0.05], [3], range: 0...255, mode: "values"))
        let (k, n) = (96, 40)
        let codes = (0..<(k * n)).map { Int8(($0 * 37) % 129 - 64) }
        let wscale = (0..<n).map { 0.001 * Float($0 + 1) }
        b.tensors.append(StoredTensor(name: "w", dtype: .int8, shape: [k, n], quant: QuantParams(axis: 1, scales: wscale),
                                      bytes: TensorBytes(copying: codes.map { UInt8(bitPattern: $0) })))
        let y = b.node(.dense, [xq, "w"])
        let model = b.model(outputs: [y])
        let x = b.input([5, k])
        let got = try #require(try Engine(model: model, threads: 1, int8Compute: .all).run(["x": x], outputs: [y])[y])
        var want = [Double](repeating: 0, count: 5 * n)
        for r in 0..<5 {
            for c in 0..<n {
                var acc = 0
                for t in 0..<k {
                    let q = max(0, min(255, Int((x.data[r * k + t] / 0.05).rounded(.toNearestOrEven)) + 3))
                    acc += (q - 3) * Int(codes[t * n + c])
                }
                want[r * n + c] = Double(acc) * 0.05 * Double(wscale[c])
            }
        }
        assertClose(got.data, want, rtol: 1e-6, atol: 1e-6, "int8 dense on the QDQ codes")
    }

    /// mode "dynamic" (ONNX DynamicQuantizeLinear → DequantizeLinear): one scale and zero point from the whole tensor
    /// (range widened to 0: scale 3/255, zero point round(1 / (3/255)) = 85 for −1…2), the same bits on both paths.
    @Test func dynamicAtKnownPoints() throws {
        var b = GraphBuilder(seed: 4, input: [-1, 2, 2, 1])
        var a = Attributes(min: 0, max: 255, mode: "dynamic")
        a.axis = nil
        let q = b.node(.quantize, ["x"], a)
        let model = b.model(outputs: [q])
        var x = b.input([2, 2, 2, 1])
        x.data = [-1, 2, 0, 0.5, 0.0117, -0.5, 1.99, .nan]
        let got = try bothModesAgree(model, ["x": x], q)
        let s = Float(3) / 255
        let codes: [Float] = [0, 255, 85, 85 + 42, 86, 85 - 42, 254, 85]   // 0.5 / s = 42.5 → 42 (even); NaN → z
        #expect(got.data == codes.map { ($0 - 85) * s })
        // All positive (a ReLU's output): zero point 0; all zero: scale 1.
        x.data = [0, 1, 2, 3, 4, 5, 6, 255]
        #expect(try bothModesAgree(model, ["x": x], q).data == x.data)
        x.data = [Float](repeating: 0, count: 8)
        #expect(try bothModesAgree(model, ["x": x], q).data == x.data)
    }

    /// x → dynamic quantize → dense on int8 weights in −127…127 (not −64…64): the fast path reads the codes with
    /// exact (`wide`) sums at every CPU level; the reference path multiplies the dequantized codes and weights in
    /// float. Both are the integer definition Σ (q − z)·w · s·wscale to float rounding; codes of 255 against weights
    /// of 127 in the first row and column, where saturating int16 pair sums (vpmaddubsw alone) would be off.
    @Test func int8LayerReadsDynamicCodesExactly() throws {
        var b = GraphBuilder(seed: 11, input: [-1, 200])
        let xq = b.node(.quantize, ["x"], Attributes(min: 0, max: 255, mode: "dynamic"))
        let (k, n, rows) = (200, 40, 6)
        var codes = (0..<(k * n)).map { Int8(($0 * 53) % 255 - 127) }
        for t in 0..<k { codes[t * n] = 127 }
        let wscale = (0..<n).map { 0.002 * Float($0 + 1) }
        b.tensors.append(StoredTensor(name: "w", dtype: .int8, shape: [k, n], quant: QuantParams(axis: 1, scales: wscale),
                                      bytes: TensorBytes(copying: codes.map { UInt8(bitPattern: $0) })))
        let y = b.node(.dense, [xq, "w"])
        let model = b.model(outputs: [y])
        var x = b.input([rows, k])
        for t in 0..<k { x.data[t] = 10 }   // the tensor's maximum: code 255 all along the first row
        let (lo, hi) = (min(0, x.data.min() ?? 0), max(0, x.data.max() ?? 0))
        let s = (hi - lo) / 255, z = Int((0 - lo / s).rounded(.toNearestOrEven))
        var want = [Double](repeating: 0, count: rows * n)
        for r in 0..<rows {
            for c in 0..<n {
                var acc = 0
                for t in 0..<k {
                    let q = max(0, min(255, Int((x.data[r * k + t] / s).rounded(.toNearestOrEven)) + z))
                    acc += (q - z) * Int(codes[t * n + c])
                }
                want[r * n + c] = Double(acc) * Double(s) * Double(wscale[c])
            }
        }
        let levels = try forEachCPULevel { level in
            for mode in [Engine.Mode.fast, .reference] {
                let got = try #require(try Engine(model: model, threads: 1, mode: mode, int8Compute: .all).run(["x": x], outputs: [y])[y])
                // Measured: the fast path's exact sums within 1e-7 (relative); the reference's float sums of 200
                // products up to 1.1e-6 relative and 8.9e-6 absolute (a value of 1.3 that sums terms of ±100).
                let (rtol, atol) = mode == .fast ? (1e-7, 1e-7) : (2e-6, 1.2e-5)
                assertClose(got.data, want, rtol: rtol, atol: atol, "dynamic int8 dense, \(mode) at level \(level)")
            }
        }
        #expect(!levels.isEmpty)
    }
}
