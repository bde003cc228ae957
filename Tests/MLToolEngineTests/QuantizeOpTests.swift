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
}
