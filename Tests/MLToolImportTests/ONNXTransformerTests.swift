import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Transformer encoders exported by PyTorch (Tests/Fixtures/onnx/make_transformers.py, into .build/transformers or
/// $MLTOOL_TRANSFORMERS): a BERT-style encoder (TorchScript and dynamo exports, and onnxruntime's dynamic int8 and
/// uint8 quantizations of it) at sequence lengths 8, 64 and 128, and a ViT-style image encoder, each at batch 1 and 2
/// from one import, against onnxruntime. Errors are measured relative to each output's range (max − min of
/// onnxruntime's values). Without the fixtures (no torch), the tests say so through `Oracles.missing`.
@Suite struct ONNXTransformerTests {
    struct TensorFile: Decodable { var name: String; var shape: [Int]; var file: String }
    struct Run: Decodable { var model: String; var name: String; var inputs: [TensorFile]; var outputs: [TensorFile] }
    struct Manifest: Decodable { var torch: String; var onnxruntime: String; var runs: [Run] }

    static let directory: String = ProcessInfo.processInfo.environment["MLTOOL_TRANSFORMERS"]
        ?? SharedDatasets.repository.appendingPathComponent(".build/transformers").path

    /// The manifest, or nil after `Oracles.missing` says why.
    static func manifest(sourceLocation: SourceLocation = #_sourceLocation) throws -> Manifest? {
        let path = (directory as NSString).appendingPathComponent("manifest.json")
        guard FileManager.default.fileExists(atPath: path) else {
            Oracles.missing("ONNXTransformerTests: no \(path) (python3 Tests/Fixtures/onnx/make_transformers.py --out \(directory); needs torch)",
                            sourceLocation: sourceLocation)
            return nil
        }
        return try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func load(_ t: TensorFile) throws -> Tensor {
        let data = try Data(contentsOf: URL(fileURLWithPath: (directory as NSString).appendingPathComponent(t.file)))
        let floats = data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
        return Tensor(shape: t.shape, data: floats)
    }

    /// Each output of every run of `model` from one import: mltool's and onnxruntime's values.
    static func outputs(_ model: String, manifest: Manifest, threads: Int = 2)
        throws -> (model: Model, results: [(run: String, output: String, actual: Tensor, expected: Tensor)]) {
        let runs = manifest.runs.filter { $0.model == model + ".onnx" }
        let imported = try ONNXImporter.importModel(path: (directory as NSString).appendingPathComponent(model + ".onnx"),
                                                    options: ImportOptions())
        let engine = try Engine(model: imported, threads: threads)
        var results: [(run: String, output: String, actual: Tensor, expected: Tensor)] = []
        for run in runs {
            var feeds: [String: Tensor] = [:]
            for i in run.inputs { feeds[i.name] = ONNXFixtures.toNHWC(try load(i)) }
            let got = try engine.run(feeds, outputs: run.outputs.map(\.name))
            for o in run.outputs {
                results.append((run.name, o.name, ONNXFixtures.toNCHW(try #require(got[o.name])), try load(o)))
            }
        }
        return (imported, results)
    }

    static func range(_ t: Tensor) -> Double { Double((t.data.max() ?? 0) - (t.data.min() ?? 0)) }

    /// Float networks within `tolerance` of the output's range at every batch and sequence length. Measured (torch
    /// 2.15.0, onnxruntime 1.32.0, AMD EPYC with AVX2): see the arguments' comment.
    @Test(arguments: [("bert", 2e-5), ("bert_dynamo", 2e-5), ("vit", 2e-5)])
    func floatEncoderMatchesOnnxruntime(model: String, tolerance: Double) throws {
        guard let manifest = try Self.manifest() else { return }
        let expectedRuns = model == "vit" ? 2 : 6
        let runs = manifest.runs.filter { $0.model == model + ".onnx" }
        if model == "bert_dynamo" && runs.isEmpty {
            Oracles.missing("bert_dynamo.onnx: the dynamo exporter failed when the fixtures were made")
            return
        }
        #expect(runs.count == expectedRuns)
        let (imported, results) = try Self.outputs(model, manifest: manifest)
        // The sequence length (and the batch) stay free in the imported model.
        #expect(imported.metadata.graph?.inputs.allSatisfy { $0.shape.filter { $0 == -1 }.count == (model == "vit" ? 1 : 2) } == true)
        for r in results {
            let range = Self.range(r.expected)
            print("\(model) \(r.run) \(r.output): max |mltool − onnxruntime| / range = "
                  + String(format: "%.2e", Closeness.ratio(r.actual.data, r.expected.data, atol: range)))
            assertClose(r.actual, r.expected, atol: tolerance * range, "\(r.run) output '\(r.output)' (range \(range))")
        }
    }

    /// onnxruntime's dynamic quantization (QInt8 and QUInt8 weights): the MatMulInteger chains import as layers with
    /// int8 weights (24 encoder projections and the pooler, plus the 3 embedding tables), one import for every batch
    /// and sequence length. Compared with onnxruntime's int8 run of the same file and with its float run of bert.onnx
    /// on the same ids (the same argmax on ≥ 98% of the hidden rows; measured 126 of 128 at worst). On this AVX2 machine onnxruntime's u8s8 kernel saturates its int16 pair sums (no VNNI), so its
    /// QInt8 run is 2.4e-2–4.3e-2 of the range from float where mltool's is 5e-3–9e-3: mltool is compared with
    /// float more tightly than with that run.
    @Test(arguments: ["bert_int8", "bert_uint8"])
    func dynamicInt8EncoderMatchesOnnxruntime(model: String) throws {
        // Per output: the tolerance against onnxruntime's int8 run and against its float run (fractions of the range),
        // each just above the largest measured at any batch and length (hidden: 4.3e-2 and 1.0e-2 for QInt8, 5.9e-3
        // and 8.4e-3 for QUInt8; pooled, the tanh of one projected row: 1.9e-1 and 3.0e-2, 2.0e-2 and 1.1e-2).
        let tolerances: [String: (ort: Double, float: Double)] = model == "bert_int8"
            ? ["hidden": (5e-2, 1.2e-2), "pooled": (2.2e-1, 3.5e-2)]
            : ["hidden": (8e-3, 1e-2), "pooled": (2.5e-2, 1.5e-2)]
        guard let manifest = try Self.manifest() else { return }
        let (imported, results) = try Self.outputs(model, manifest: manifest)
        let int8 = imported.tensors.filter { $0.dtype == .int8 }
        #expect(int8.count == 28)
        #expect(!imported.metadata.graph!.nodes.contains { $0.name.contains("DynamicQuantize") })
        #expect(results.count == 12)
        let float = try Self.outputs("bert", manifest: manifest).results
        for (r, f) in zip(results, float) {
            #expect(r.run.dropFirst(model.count) == f.run.dropFirst("bert".count) && r.output == f.output)
            let range = Self.range(r.expected), floatRange = Self.range(f.expected)
            print("\(model) \(r.run) \(r.output): max |mltool − onnxruntime int8| / range = "
                  + String(format: "%.2e", Closeness.ratio(r.actual.data, r.expected.data, atol: range))
                  + ", |mltool − onnxruntime float| / range = "
                  + String(format: "%.2e", Closeness.ratio(r.actual.data, f.expected.data, atol: floatRange))
                  + ", |onnxruntime int8 − float| / range = "
                  + String(format: "%.2e", Closeness.ratio(r.expected.data, f.expected.data, atol: floatRange)))
            let tolerance = try #require(tolerances[r.output])
            assertClose(r.actual, r.expected, atol: tolerance.ort * range, "\(r.run) '\(r.output)' against onnxruntime's int8 run")
            assertClose(r.actual, f.expected, atol: tolerance.float * floatRange, "\(r.run) '\(r.output)' against onnxruntime's float run")
            guard r.output == "hidden" else { continue }
            let rows = r.expected.count / 256
            let same = (0..<rows).filter { Self.argmax(r.actual, row: $0) == Self.argmax(f.expected, row: $0) }.count
            let sameOrt = (0..<rows).filter { Self.argmax(r.expected, row: $0) == Self.argmax(f.expected, row: $0) }.count
            print("\(model) \(r.run): the float run's argmax on \(same) of \(rows) rows (onnxruntime int8: \(sameOrt))")
            #expect(Double(same) >= 0.98 * Double(rows), "\(r.run): the float run's argmax on \(same) of \(rows) rows")
        }
    }

    static func argmax(_ t: Tensor, row: Int) -> Int {
        let width = t.shape.last ?? 1
        let slice = t.data[(row * width)..<((row + 1) * width)]
        return slice.indices.max { slice[$0] < slice[$1] } ?? 0
    }
}
