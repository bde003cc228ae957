import Foundation
import MLToolCore
import MLToolExport
import MLToolImport
import MLToolQuant
import MLToolTestSupport
import Testing

/// mltool's own int8 ONNX exports (int8 initializers behind DequantizeLinear) read back by the ONNX importer: the
/// weights come back as int8 with the same scales and zero points, and the model computes what the source computes.
@Suite struct ONNXInt8ReimportTests {
    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func int8ExportReimportsAsInt8(mapHead: Bool, asymmetric: Bool) throws {
        let dir = try TempDir(tag: "export-onnx-int8").url
        defer { try? FileManager.default.removeItem(at: dir) }
        var o = QuantizeOptions(mode: .linear, bits: 8, asymmetric: asymmetric)
        o.minElements = 1
        let source = try Quantizer.quantize(tinyClassifier(mapHead: mapHead), o).0
        let exported = try ONNXExporter.export(source, name: "tiny-int8")
        let path = dir.appendingPathComponent("tiny-int8.onnx").path
        try Data(exported.bytes).write(to: URL(fileURLWithPath: path))
        let back = try ONNXImporter.importModel(path: path, options: ImportOptions())

        let x = randomInputs(5, seed: 9)
        assertClose(try run(back, x), try run(source, x), atol: 1e-4,
                    "mapHead=\(mapHead) asymmetric=\(asymmetric): re-imported int8 model")

        let int8Source = source.tensors.filter { $0.dtype == .int8 }
        let int8Back = back.tensors.filter { $0.dtype == .int8 }
        #expect(int8Source.count == 3 && int8Back.count == int8Source.count,
                "int8 tensors: source \(int8Source.map(\.name)), re-imported \(int8Back.map(\.name))")
        // Same codes and parameters up to layout: the multiset of (scale, zero point) pairs survives.
        func params(_ ts: [StoredTensor]) -> [String] {
            ts.flatMap { t in
                let scales = t.quant?.scales ?? []
                return zip(scales, t.quant?.zeroPoints ?? Array(repeating: 0, count: scales.count)).map { "\($0.0.bitPattern)/\($0.1)" }
            }.sorted()
        }
        #expect(params(int8Back) == params(int8Source))
        let bytes = { (m: Model) in m.tensors.reduce(0) { $0 + $1.bytes.count } }
        #expect(bytes(back) <= bytes(source) + 64, "re-imported weights take \(bytes(back)) bytes, the source \(bytes(source))")
    }
}
