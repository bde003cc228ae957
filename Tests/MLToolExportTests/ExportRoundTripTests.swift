import Foundation
import MLToolCore
import MLToolExport
import MLToolFormat
import MLToolImport
import MLToolQuant
import MLToolTestSupport
import Testing

/// Exports read back by mltool's own importers must compute what the source model computes.
@Suite struct ExportRoundTripTests {
    static func quantized(_ model: Model, _ options: QuantizeOptions) throws -> Model {
        var o = options
        o.minElements = 1
        return try Quantizer.quantize(model, o).0
    }

    static let variants: [(String, QuantizeOptions?)] = [
        ("float", nil),
        ("int8", QuantizeOptions(mode: .linear, bits: 8)),
        ("int8-asymmetric", QuantizeOptions(mode: .linear, bits: 8, asymmetric: true)),
        ("palette4", QuantizeOptions(mode: .palette, bits: 4)),
        ("palette4-float-tables", { var o = QuantizeOptions(mode: .palette, bits: 4); o.int8Table = false; return o }()),
        ("palette2-grouped", QuantizeOptions(mode: .palette, bits: 2, groupSize: 2)),
        ("fp16", QuantizeOptions(mode: .fp16, bits: 16)),
    ]

    @Test(arguments: [false, true])
    func coreMLImportComputesTheSourceModel(mapHead: Bool) throws {
        let dir = try TempDir(tag: "export-cml-roundtrip").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let x = randomInputs(5)
        for (tag, options) in Self.variants {
            var source = tinyClassifier(mapHead: mapHead)
            if let o = options { source = try Self.quantized(source, o) }
            let exported = try CoreMLExporter.export(source, name: "tiny-\(tag)")
            let path = dir.appendingPathComponent("\(tag).mlmodel").path
            try Data(exported.bytes).write(to: URL(fileURLWithPath: path))
            #expect(try FileKind.detect(path: path) == .coreml, "\(tag): FileKind recognises the export")
            let back = try CoreMLImporter.importModel(path: path)
            #expect(back.metadata.labels == source.metadata.labels)
            #expect(back.metadata.author == "mltool tests" && back.metadata.license == "MIT" && back.metadata.version == "1.2")
            #expect(back.metadata.image?.height == 12 && back.metadata.image?.width == 12)
            assertClose(try run(back, x), try run(source, x), atol: 1e-4, "\(tag) mapHead=\(mapHead): Core ML round trip")
        }
    }

    @Test func onnxImportComputesTheSourceModel() throws {
        let dir = try TempDir(tag: "export-onnx-roundtrip").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let x = randomInputs(4)
        for mapHead in [false, true] {
            let source = tinyClassifier(mapHead: mapHead)
            let exported = try ONNXExporter.export(source, name: "tiny")
            #expect(exported.notes.isEmpty)
            let path = dir.appendingPathComponent("tiny-\(mapHead).onnx").path
            try Data(exported.bytes).write(to: URL(fileURLWithPath: path))
            let back = try ONNXImporter.importModel(path: path, options: ImportOptions())
            #expect(back.metadata.graph?.inputs.first?.name == "image")
            #expect(back.metadata.graph?.inputs.first?.shape == [-1, 12, 12, 3])
            assertClose(try run(back, x), try run(source, x), atol: 1e-4, "mapHead=\(mapHead): ONNX round trip")
        }
    }

    /// Compressed weights stay compressed: int8 and palette exports save what the native file saves, less a fixed
    /// overhead per tensor. The layers are 64 wide, so that this overhead is smaller than what any one tensor saves.
    @Test(arguments: [("onnx", false), ("coreml", false), ("coreml", true)])
    func quantizedExportsKeepTheSaving(format: String, palette: Bool) throws {
        let model = tinyClassifier(mapHead: true, channels: 64)
        let q = try Self.quantized(model, palette ? QuantizeOptions(mode: .palette, bits: 4, perTensor: true) : QuantizeOptions(mode: .linear, bits: 8))
        let saved = model.tensors.reduce(0) { $0 + $1.bytes.count } - q.tensors.reduce(0) { $0 + $1.bytes.count }
        func size(_ m: Model) throws -> Int {
            format == "onnx" ? try ONNXExporter.export(m, name: "m").bytes.count : try CoreMLExporter.export(m, name: "m").bytes.count
        }
        let exportSaved = try size(model) - size(q)
        let quantized = q.tensors.filter { $0.dtype != .f32 }
        // What each quantized tensor saves in the native file: exporting any one of them as float would lose that.
        let perTensor = try quantized.map { t in try #require(model.tensor(named: t.name)).bytes.count - t.bytes.count }
        #expect(quantized.count == 3 && (perTensor.min() ?? 0) > 1000, "\(perTensor)")
        print("ExportRoundTripTests: \(format) palette=\(palette): native saves \(saved), export \(exportSaved), per tensor \(perTensor)")
        // Each quantized tensor costs a small fixed overhead in the export (names, a DequantizeLinear node, parameter
        // headers) beyond its scales and tables; the rest of the saving must survive, so the loss stays below what
        // leaving even the smallest quantized tensor in float would cost.
        #expect(saved - exportSaved < (perTensor.min() ?? 0),
                "\(format): export saves \(exportSaved) bytes, the native file \(saved); per tensor \(perTensor)")
    }

    @Test func textModelsAreRefusedWithTheReason() throws {
        var md = ModelMetadata(task: .textClassifier, labels: ["a", "b"])
        md.text = TextConfig()
        let model = Model(metadata: md, tensors: [])
        for format in ["onnx", "coreml"] {
            do {
                _ = format == "onnx" ? try ONNXExporter.export(model, name: "t.bin").bytes : try CoreMLExporter.export(model, name: "t.bin").bytes
                Issue.record("\(format): a text model was exported")
            } catch let e as ExportError {
                #expect(e.description.contains("t.bin") && e.description.contains("text classifier") && e.description.contains("tokenizer"),
                        "\(e.description)")
            }
        }
    }

    @Test func unsupportedOpsNameTheNode() throws {
        var model = tinyClassifier()
        model.metadata.graph?.nodes.insert(
            Node(name: "odd", op: .transpose, inputs: ["c1"], outputs: ["t"], attributes: Attributes(perm: [0, 2, 1, 3])), at: 1)
        #expect(throws: ExportError.self) { _ = try CoreMLExporter.export(model, name: "m.bin") }
        do { _ = try CoreMLExporter.export(model, name: "m.bin") } catch {
            #expect("\(error)".contains("node 'odd' (transpose)"), "\(error)")
        }
        // ONNX expresses it.
        _ = try ONNXExporter.export(model, name: "m.bin")
    }

    @Test func coreMLImportRejectsGarbageWithoutTrapping() throws {
        let dir = try TempDir(tag: "export-garbage").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = try CoreMLExporter.export(try Self.quantized(tinyClassifier(), QuantizeOptions(mode: .palette, bits: 4)), name: "g").bytes
        var rejected = 0
        // Every prefix of a valid file: parse errors or missing weights, never a crash.
        for cut in stride(from: 0, to: good.count, by: max(1, good.count / 97)) {
            let path = dir.appendingPathComponent("cut.mlmodel").path
            try Data(good[0..<cut]).write(to: URL(fileURLWithPath: path))
            do { _ = try CoreMLImporter.importModel(path: path) } catch is ImportError { rejected += 1 }
        }
        #expect(rejected > 90)
    }
}
