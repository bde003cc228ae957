import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Quantized ONNX against onnxruntime, on the fixtures Tests/Fixtures/onnx/make_quantized.py writes into
/// .build/onnx-quantized (or $MLTOOL_ONNX_QUANTIZED): one small graph per quantized op, and EfficientNet-Lite0 through
/// onnxruntime's `quantize_static` (QDQ and operator formats) on 1,000 Fashion-MNIST test photos.
@Suite struct ONNXQuantizedTests {
    static let directory: String = ProcessInfo.processInfo.environment["MLTOOL_ONNX_QUANTIZED"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/onnx-quantized").path

    /// Whether `file` exists under `directory`; if not, `Oracles.missing` says why.
    static func available(_ file: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        if FileManager.default.fileExists(atPath: directory + "/" + file) { return true }
        Oracles.missing("ONNXQuantizedTests: no \(directory)/\(file) (python3 Tests/Fixtures/onnx/make_quantized.py)",
                        sourceLocation: sourceLocation)
        return false
    }

    static func floats(_ file: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file))
        return data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
    }

    struct OpCase: Decodable { let inputs: [String: [Int]]; let outputs: [String: [Int]] }

    /// Runs ops/`name`.onnx on its stored inputs; returns each output (ONNX layout) with onnxruntime's.
    static func runOp(_ name: String, _ c: OpCase) throws -> [(String, Tensor, Tensor)] {
        let model = try ONNXImporter.importModel(path: "\(directory)/ops/\(name).onnx", options: ImportOptions())
        let engine = try Engine(model: model, threads: 1)
        var feeds: [String: Tensor] = [:]
        for (input, shape) in c.inputs {
            feeds[input] = ONNXFixtures.toNHWC(Tensor(shape: shape, data: try floats("ops/\(name).in.\(input).f32")))
        }
        let got = try engine.run(feeds, outputs: Array(c.outputs.keys))
        return try c.outputs.sorted { $0.key < $1.key }.map { output, shape in
            let expected = Tensor(shape: shape, data: try floats("ops/\(name).out.\(output).f32"))
            return (output, ONNXFixtures.toNCHW(try #require(got[output])), expected)
        }
    }

    static func opCases() throws -> [String: OpCase]? {
        guard available("ops/manifest.json") else { return nil }
        return try JSONDecoder().decode([String: OpCase].self, from: Data(contentsOf: URL(fileURLWithPath: directory + "/ops/manifest.json")))
    }

    /// QuantizeLinear and DequantizeLinear on computed tensors (per tensor and per channel, uint8 and int8; halves to
    /// even, saturation at both ends) and a QDQ pair: the same codes and values as onnxruntime, bit for bit.
    @Test func quantizeDequantizeMatchOnnxRuntime() throws {
        guard let cases = try Self.opCases() else { return }
        for name in ["quantize_u8", "quantize_i8_axis", "dequantize_u8", "dequantize_i8_axis", "qdq_pair"] {
            let c = try #require(cases[name])
            for (output, got, expected) in try Self.runOp(name, c) {
                assertClose(got, expected, atol: 0, "\(name) \(output)")
            }
        }
        // The ties and saturations the fixture puts first (scale 1, zero point 10, uint8): 0.5 → 0, 1.5 → 2, 2.5 → 2,
        // −0.5 → −0, −1.5 → −2, 100 → 110, −100 → 0 (saturated), 3.5 → 4; plus the zero point.
        let q = try Self.runOp("quantize_u8", try #require(cases["quantize_u8"]))[0].1
        #expect(Array(q.data.prefix(8)) == [10, 12, 12, 10, 8, 110, 0, 14])
    }

    /// The operator forms, each as DequantizeLinear → its float op → QuantizeLinear: codes within one step of
    /// onnxruntime's, and as many equal as measured: all of them, except QLinearAdd's 69 of 72 (onnxruntime adds
    /// (a − za)·(sa / sc) + (b − zb)·(sb / sc), which rounds differently at halves). The weights' codes are 7-bit
    /// (make_quantized.py: onnxruntime's AVX2 kernel saturates with full-range ones).
    @Test func operatorFormsMatchOnnxRuntime() throws {
        guard let cases = try Self.opCases() else { return }
        let ops = ["qlinearconv", "qlinearconv_depthwise", "qlinearmatmul", "qlinearadd", "qlinearmul", "qlinearsigmoid",
                   "qlinearleakyrelu", "qlinearglobalaveragepool", "qlinearconcat", "qgemm_u8"]
        for name in ops {
            let c = try #require(cases[name])
            for (output, got, expected) in try Self.runOp(name, c) {
                assertClose(got, expected, atol: 1, "\(name) \(output): codes within one step")
                let equal = zip(got.data, expected.data).filter { $0 == $1 }.count
                print("ONNXQuantizedTests: \(name): \(equal) of \(expected.data.count) codes equal to onnxruntime's")
                #expect(equal >= expected.data.count - (name == "qlinearadd" ? 3 : 0), "\(name): \(equal) of \(expected.data.count) codes equal")
            }
        }
        // QGemm without y_scale gives floats: bias + A·B dequantized, within float rounding of onnxruntime's.
        for (output, got, expected) in try Self.runOp("qgemm_float", try #require(cases["qgemm_float"])) {
            assertClose(got, expected, rtol: 1e-5, atol: 1e-5, "qgemm_float \(output)")
        }
    }

    // MARK: EfficientNet-Lite0

    static let photos = 1000

    /// The 1,000 test photos as the network's input (N, 224, 224, 3): x / 127.5 − 1 of each grayscale plane in all
    /// three channels.
    static func photoBatch(_ range: Range<Int>) throws -> Tensor {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: directory + "/fashion-test.u8"))
        defer { try? handle.close() }
        let plane = 224 * 224
        try handle.seek(toOffset: UInt64(range.lowerBound * plane))
        let bytes = try #require(try handle.read(upToCount: range.count * plane))
        var data = [Float](repeating: 0, count: bytes.count * 3)
        for (i, b) in bytes.enumerated() {
            let v = Float(b) / 127.5 - 1
            data[3 * i] = v; data[3 * i + 1] = v; data[3 * i + 2] = v
        }
        return Tensor(shape: [range.count, 224, 224, 3], data: data)
    }

    struct Agreement { var top1: Int; var worstOverRange: Double }

    /// mltool's logits for the photos.
    static func logits(_ model: Model) throws -> [Float] {
        let engine = try Engine(model: model, threads: 2)
        var got: [Float] = []
        for start in stride(from: 0, to: photos, by: 50) {
            let out = try engine.run(["input": try photoBatch(start..<min(photos, start + 50))], outputs: ["logits"])
            got += try #require(out["logits"]).data
        }
        return got
    }

    /// `got` against the logits stored by the fixture script: each photo's within `tolerance` of its range, and the
    /// counts.
    static func agreement(_ got: [Float], reference: String, tolerance: Double) throws -> Agreement {
        let expected = try floats(reference)
        #expect(got.count == expected.count)
        var top1 = 0, differences: [Double] = []
        for i in 0..<photos {
            let g = Array(got[(i * 1000)..<((i + 1) * 1000)]), e = Array(expected[(i * 1000)..<((i + 1) * 1000)])
            if g.indices.max(by: { g[$0] < g[$1] }) == e.indices.max(by: { e[$0] < e[$1] }) { top1 += 1 }
            let range = Double((e.max() ?? 0) - (e.min() ?? 0))
            assertClose(g, e, atol: tolerance * range, "photo \(i) vs \(reference): logits within \(tolerance) of their range (\(range))")
            // The largest difference (the worst element at atol 0), relative to the range, for the report.
            if let m = Closeness.mismatch(g, e, rtol: 0, atol: 0), let a = m.actual, let b = m.expected {
                differences.append(abs(a - b) / range)
            }
        }
        return Agreement(top1: top1, worstOverRange: differences.max() ?? 0)
    }

    /// Conv and dense layers and how many of them read int8 weights.
    static func int8Layers(_ m: Model) throws -> (layers: Int, int8: Int) {
        let g = try #require(m.metadata.graph)
        let layers = g.nodes.filter { $0.op == .conv || $0.op == .dense }
        return (layers.count, layers.filter { m.tensor(named: $0.inputs[1])?.dtype == .int8 }.count)
    }

    /// QDQ (per-channel 7-bit weights, uint8 activations): every conv (49) and the dense layer hold int8 weights and
    /// run as onnxruntime's QLinearConv / QGemm (requantized in int32, `QuantizedWeights.requantizeOutput`,
    /// `QuantizedDepthwise`); against onnxruntime's int8 run (its fused kernels) the top-1 class is equal on all 1,000
    /// photos (measured) and every logit within 0.014 of the photo's logit range (measured 0.0137: one step of the
    /// logits' own quantization, about 1/73 of the range); against the arithmetic the file states in float
    /// (onnxruntime with optimizations off) top-1 on 967 and logits within 0.035 (measured 0.0342). onnxruntime's own
    /// two runs agree on fewer: see make_quantized.py's output.
    @Test func efficientNetQDQMatchesOnnxRuntime() throws {
        try Self.checkEfficientNet("qdq", top1: 1000, worst: 0.014, unfusedWorst: 0.035)
    }

    /// The operator format (QLinearConv, QLinearAdd, QLinearGlobalAveragePool, QGemm): the same layers on int8 weights,
    /// each reading the file's codes; top-1 equal to onnxruntime's int8 run on 985 of 1,000 and logits within 0.016 of
    /// the range (measured 0.0156, the same at the avx2 and avx512-vnni levels, Zen 4). A residual block's input is
    /// read by its first conv and by its QLinearAdd, each expanded with its own DequantizeLinear: those two fuse into
    /// one (`GraphPasses.fuseQuantizeDequantize`), so that conv reads the codes too; before they did not, and the
    /// conv ran on floats (971 and 0.042) or, with VNNI, on inputs quantized again per row (961 and 0.047).
    @Test func efficientNetQOperatorMatchesOnnxRuntime() throws {
        try Self.checkEfficientNet("qop", top1: 985, worst: 0.016)
    }

    /// `worst`: the tolerance (of each photo's logit range) against onnxruntime's int8 run; `unfusedWorst` against its
    /// unfused run (the default: the same).
    static func checkEfficientNet(_ name: String, top1: Int, worst: Double, unfusedWorst: Double? = nil) throws {
        guard available("efficientnet-lite0-\(name).onnx"), available("fashion-test.u8"),
              available("efficientnet-lite0-\(name).unfused.logits.f32") else { return }
        let m = try ONNXImporter.importModel(path: directory + "/efficientnet-lite0-\(name).onnx", options: ImportOptions())
        let (layers, int8) = try int8Layers(m)
        #expect(layers == 50 && int8 == 50, "\(int8) of \(layers) conv/dense layers with int8 weights")
        let got = try logits(m)
        let fused = try agreement(got, reference: "efficientnet-lite0-\(name).logits.f32", tolerance: worst)
        let unfused = try agreement(got, reference: "efficientnet-lite0-\(name).unfused.logits.f32", tolerance: unfusedWorst ?? worst)
        print("ONNXQuantizedTests: \(name) EfficientNet-Lite0 vs onnxruntime's int8 run: top-1 equal on \(fused.top1) of \(photos), "
              + "worst logit difference \(fused.worstOverRange) of the range; vs its unfused arithmetic: \(unfused.top1), "
              + "\(unfused.worstOverRange)")
        #expect(fused.top1 >= top1, "top-1 equal to onnxruntime's int8 run on \(fused.top1) of \(photos)")
    }
}
