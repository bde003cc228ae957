import Foundation
import MLToolCore
import MLToolExport
import MLToolImport
import MLToolTestSupport
import Testing

/// convTranspose and batchMatMul lowered to ONNX (ConvTranspose, MatMul) and read back by the ONNX importer compute
/// what the source model computes.
@Suite struct ONNXLayersReimportTests {
    /// input (N, 12, 12, 3) → convTranspose (3 groups, stride 2, pads, outputPadding) → (N, 25, 24, 6) → its product
    /// with its own transpose over the last two axes → (N, 25, 24, 24).
    static func model() -> Model {
        var rng = SplitMix64(seed: 48)
        func values(_ n: Int) -> [Float] { (0..<n).map { _ in rng.nextUnit() - 0.5 } }
        var ct = Attributes(strides: [2, 2], pads: [1, 1, 0, 0], groups: 3)
        ct.outputPadding = [1, 0]
        let nodes = [
            Node(name: "ct", op: .convTranspose, inputs: ["input", "w", "b"], outputs: ["c"], attributes: ct),
            Node(name: "t", op: .transpose, inputs: ["c"], outputs: ["cT"], attributes: Attributes(perm: [0, 1, 3, 2])),
            Node(name: "bmm", op: .batchMatMul, inputs: ["c", "cT"], outputs: ["y"]),
        ]
        let md = ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "input", shape: [-1, 12, 12, 3])], outputs: ["y"], nodes: nodes))
        return Model(metadata: md, tensors: [StoredTensor(name: "w", tensor: Tensor(shape: [3, 3, 3, 2], data: values(54))),
                                             StoredTensor(name: "b", tensor: Tensor(shape: [6], data: values(6)))])
    }

    @Test func exportReimportsToTheSameOutputs() throws {
        let dir = try TempDir(tag: "export-onnx-layers").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = Self.model()
        let path = dir.appendingPathComponent("layers.onnx").path
        try Data(try ONNXExporter.export(source, name: "layers").bytes).write(to: URL(fileURLWithPath: path))
        let back = try ONNXImporter.importModel(path: path, options: ImportOptions())
        let x = randomInputs(2, seed: 5)
        let want = try run(source, x)
        #expect(want.count == 2 * 25 * 24 * 24)
        assertClose(try run(back, x), want, rtol: 1e-5, atol: 1e-5, "re-imported ConvTranspose + MatMul")
    }
}
