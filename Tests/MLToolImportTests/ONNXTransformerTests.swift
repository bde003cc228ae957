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
    struct Run: Decodable {
        var model: String; var name: String; var inputs: [TensorFile]; var outputs: [TensorFile]
        /// The int8 models' outputs by onnx's reference evaluator (ONNX's definition of each op), in `outputs`' order.
        var spec: [TensorFile]?
    }
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

    typealias Result = (run: String, output: String, actual: Tensor, expected: Tensor, spec: Tensor?)

    /// Each output of every run of `model` from one import: mltool's and onnxruntime's values (and the reference
    /// evaluator's where the manifest has them).
    static func outputs(_ model: String, manifest: Manifest, threads: Int = 2) throws -> (model: Model, results: [Result]) {
        let runs = manifest.runs.filter { $0.model == model + ".onnx" }
        let imported = try ONNXImporter.importModel(path: (directory as NSString).appendingPathComponent(model + ".onnx"),
                                                    options: ImportOptions())
        let engine = try Engine(model: imported, threads: threads)
        var results: [Result] = []
        for run in runs {
            var feeds: [String: Tensor] = [:]
            for i in run.inputs { feeds[i.name] = ONNXFixtures.toNHWC(try load(i)) }
            let got = try engine.run(feeds, outputs: run.outputs.map(\.name))
            for (i, o) in run.outputs.enumerated() {
                let spec = try run.spec.map { try load($0[i]) }
                results.append((run.name, o.name, ONNXFixtures.toNCHW(try #require(got[o.name])), try load(o), spec))
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
    /// int8 weights (24 encoder projections and the pooler, plus the 3 embedding tables) reading the codes of their
    /// input's DynamicQuantizeLinear (17 `quantize` nodes in mode "dynamic"), one import for every batch and sequence
    /// length. Compared with ONNX's definition (onnx's reference evaluator: exact integer sums), with onnxruntime's
    /// int8 run of the same file and with its float run of bert.onnx on the same ids (the same argmax on ≥ 97% of the
    /// hidden rows; measured 125 of 128 at worst). Three exact implementations still differ by up to ~1e-3 of the
    /// range at 64 and 128 tokens, a few parts in 10^7 at 8: a float op before a quantizer (LayerNorm, erf, softmax)
    /// rounding one value differently moves it to the next code, and later layers carry that on — onnxruntime and
    /// the reference evaluator differ from each other as much. On AVX2 without VNNI onnxruntime's U8S8 kernel
    /// saturates its int16 pair sums, so its QInt8 run is 2.5e-2–4.6e-2 of the range from the definition (mltool's
    /// `wide` sums are exact there); its U8U8 run (QUInt8) is exact.
    @Test(arguments: ["bert_int8", "bert_uint8"])
    func dynamicInt8EncoderMatchesOnnxruntime(model: String) throws {
        // Per output: the tolerance against the reference evaluator, onnxruntime's int8 run and its float run
        // (fractions of the range), each just above the largest measured at any batch and length (Zen 3, AVX2):
        // QInt8 hidden 1.3e-3, 4.5e-2, 8.1e-3, pooled (the tanh of one projected row) 1.4e-2, 1.9e-1, 2.3e-2;
        // QUInt8 hidden 1.7e-3, 2.0e-3, 8.1e-3, pooled 1.6e-2, 1.1e-2, 2.3e-2. At batch 1, 8 tokens: 9e-8–2e-7.
        // With VNNI (Zen 4) QUInt8's pooled output is 2.6e-2 to 5.0e-2 (two runs) of the float run's range at batch 2,
        // 64 tokens: the float run is a reference for the quantization's cost, not for the arithmetic, which the other
        // two hold.
        let vnni = Engine.cpuLevel.hasSuffix("vnni")
        let tolerances: [String: (spec: Double, ort: Double, float: Double)] = model == "bert_int8"
            ? ["hidden": (1.5e-3, 5e-2, 9e-3), "pooled": (1.6e-2, 2.2e-1, 2.5e-2)]
            : ["hidden": (2e-3, 2.2e-3, 9e-3), "pooled": (1.8e-2, 1.2e-2, vnni ? 5.5e-2 : 2.5e-2)]
        guard let manifest = try Self.manifest() else { return }
        let (imported, results) = try Self.outputs(model, manifest: manifest)
        let int8 = imported.tensors.filter { $0.dtype == .int8 }
        #expect(int8.count == 28)
        let quantizers = imported.metadata.graph!.nodes.filter { $0.op == .quantize }
        #expect(quantizers.count == 17 && quantizers.allSatisfy { $0.attributes.mode == "dynamic" })
        #expect(results.count == 12)
        let float = try Self.outputs("bert", manifest: manifest).results
        for (r, f) in zip(results, float) {
            #expect(r.run.dropFirst(model.count) == f.run.dropFirst("bert".count) && r.output == f.output)
            let spec = try #require(r.spec, "\(r.run): no reference evaluator outputs in the manifest")
            let range = Self.range(spec), floatRange = Self.range(f.expected)
            func ratio(_ a: Tensor, _ b: Tensor, _ range: Double) -> String {
                String(format: "%.2e", Closeness.ratio(a.data, b.data, atol: range))
            }
            print("\(model) \(r.run) \(r.output): max |mltool − definition| / range = \(ratio(r.actual, spec, range)), "
                  + "|mltool − onnxruntime int8| = \(ratio(r.actual, r.expected, range)), "
                  + "|onnxruntime int8 − definition| = \(ratio(r.expected, spec, range)), "
                  + "|mltool − onnxruntime float| = \(ratio(r.actual, f.expected, floatRange))")
            let tolerance = try #require(tolerances[r.output])
            assertClose(r.actual, spec, atol: tolerance.spec * range, "\(r.run) '\(r.output)' against the reference evaluator")
            assertClose(r.actual, r.expected, atol: tolerance.ort * range, "\(r.run) '\(r.output)' against onnxruntime's int8 run")
            assertClose(r.actual, f.expected, atol: tolerance.float * floatRange, "\(r.run) '\(r.output)' against onnxruntime's float run")
            guard r.output == "hidden" else { continue }
            let rows = r.expected.count / 256
            let same = (0..<rows).filter { Self.argmax(r.actual, row: $0) == Self.argmax(f.expected, row: $0) }.count
            let sameOrt = (0..<rows).filter { Self.argmax(r.expected, row: $0) == Self.argmax(f.expected, row: $0) }.count
            print("\(model) \(r.run): the float run's argmax on \(same) of \(rows) rows (onnxruntime int8: \(sameOrt))")
            #expect(Double(same) >= 0.97 * Double(rows), "\(r.run): the float run's argmax on \(same) of \(rows) rows")
        }
    }

    static func argmax(_ t: Tensor, row: Int) -> Int {
        let width = t.shape.last ?? 1
        let slice = t.data[(row * width)..<((row + 1) * width)]
        return slice.indices.max { slice[$0] < slice[$1] } ?? 0
    }
}
