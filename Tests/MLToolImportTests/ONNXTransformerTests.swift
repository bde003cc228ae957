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
    /// 2.15.0, onnxruntime 1.23.2, AVX-512): see the arguments' comment.
    @Test(arguments: [("bert", 2e-5), ("bert_dynamo", 2e-5), ("vit", 2e-5)])
    func floatEncoderMatchesOnnxruntime(model: String, tolerance: Double) throws {
        guard let manifest = try Self.manifest() else { return }
        let expectedRuns = model == "vit" ? 2 : 6
        let runs = manifest.runs.filter { $0.model == model + ".onnx" }
        if model == "bert_dynamo" && runs.isEmpty { return Oracles.missing("bert_dynamo.onnx: the dynamo exporter failed when the fixtures were made") }
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
    /// int8 weights (24 encoder layers and the pooler, plus the 3 embedding tables), and the outputs stay within
    /// `tolerance` of the range of onnxruntime's int8 run, with the same argmax on ≥ 99% of the hidden rows.
    @Test(arguments: [("bert_int8", 1e-2), ("bert_uint8", 1e-2)])
    func dynamicInt8EncoderMatchesOnnxruntime(model: String, tolerance: Double) throws {
        guard let manifest = try Self.manifest() else { return }
        let (imported, results) = try Self.outputs(model, manifest: manifest)
        let int8 = imported.tensors.filter { $0.dtype == .int8 }
        #expect(int8.count == 28)
        #expect(imported.metadata.graph?.nodes.contains { $0.op == .dense || $0.op == .matMul } == true)
        #expect(results.count == 12)
        for r in results {
            let range = Self.range(r.expected)
            print("\(model) \(r.run) \(r.output): max |mltool − onnxruntime| / range = "
                  + String(format: "%.2e", Closeness.ratio(r.actual.data, r.expected.data, atol: range)))
            assertClose(r.actual, r.expected, atol: tolerance * range, "\(r.run) output '\(r.output)' (range \(range))")
            let width = r.expected.shape.last ?? 1, rows = r.expected.count / width
            let same = (0..<rows).filter { row in
                let a = r.actual.data[(row * width)..<((row + 1) * width)], e = r.expected.data[(row * width)..<((row + 1) * width)]
                return a.indices.max { a[$0] < a[$1] } == e.indices.max { e[$0] < e[$1] }
            }.count
            #expect(Double(same) >= 0.99 * Double(rows), "\(r.run) '\(r.output)': the same argmax on \(same) of \(rows) rows")
        }
    }
}
