import Foundation
import MLToolCore
import MLToolEngine
import MLToolExport
import MLToolImport
import MLToolTestSupport
import Testing

/// Core ML models converted by coremltools (Tests/Fixtures/coreml) imported, exported back to Core ML by mltool
/// and imported again compute the same outputs (1e-4), and export to ONNX.
@Suite struct CoreMLReimportTests {
    static let fixtures: String = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/coreml").path
    }()

    /// A deterministic input of the model's input shape (batch 2): smooth values in the preprocessed range.
    static func input(_ model: Model) throws -> (String, Tensor) {
        let g = try #require(model.metadata.graph)
        let shape = [2] + g.inputs[0].shape.dropFirst()
        let n = shape.reduce(1, *)
        return (g.inputs[0].name, Tensor(shape: shape, data: (0..<n).map { Float(sin(Double($0) * 0.37)) }))
    }

    static func outputs(_ model: Model, _ x: (String, Tensor)) throws -> Tensor {
        let g = try #require(model.metadata.graph)
        return try #require(try Engine(model: model, threads: 1).run([x.0: x.1], outputs: [g.outputs[0]])[g.outputs[0]])
    }

    @Test(arguments: ["resnet_style.mlmodel", "resnet_style.mlpackage", "resnet_palette4.mlmodel", "resnet_linear8.mlpackage"])
    func exportToCoreMLAndBack(name: String) throws {
        let source = try CoreMLImporter.importModel(path: Self.fixtures + "/" + name)
        let exported = try CoreMLExporter.export(source, name: name)
        let dir = NSTemporaryDirectory() + "mltool-coreml-reimport-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/back.mlmodel"
        try Data(exported.bytes).write(to: URL(fileURLWithPath: path))
        let back = try CoreMLImporter.importModel(path: path)
        #expect(back.metadata.labels == source.metadata.labels)
        #expect(back.metadata.image == source.metadata.image)
        let x = try Self.input(source)
        var a = try Self.outputs(source, x)
        let b = try Self.outputs(back, x)
        // The Core ML classifier mltool writes gives probabilities: a softmax over the source's logits.
        #expect(source.metadata.outputKind == "logits" && back.metadata.outputKind == "probabilities")
        for r in 0..<a.shape[0] {
            let row = a.data[(r * a.shape[1])..<((r + 1) * a.shape[1])], m = row.max() ?? 0
            let e = row.map { Foundation.exp($0 - m) }, sum = e.reduce(0, +)
            for (j, v) in e.enumerated() { a.data[r * a.shape[1] + j] = v / sum }
        }
        assertClose(a, b, rtol: 1e-4, atol: 1e-5, name)
        // Compressed storage survives the trip.
        let kinds = Set(source.tensors.map(\.dtype)), backKinds = Set(back.tensors.map(\.dtype))
        #expect(kinds.subtracting([.f32]).isSubset(of: backKinds), "\(name): \(kinds) → \(backKinds); notes \(exported.notes)")
        // And ONNX export takes it.
        #expect(try ONNXExporter.export(source, name: name).bytes.count > 1000)
    }
}
