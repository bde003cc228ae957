import Foundation
import MLToolCore
import MLToolExport
import MLToolTestSupport
import Testing

/// The ONNX lowerings of pow, slice (a backwards step included), resize and topK (values and indices), checked by
/// onnxruntime against the engine on random inputs.
@Suite struct ONNXLoweringOpsTests {
    /// input (N, 12, 12, 3) → x^[2, 3, 2] → channels 0…1, every other column backwards from the last → nearest ×2
    /// → top-1 over channels (values or indices).
    static func model(mode: String) -> Model {
        let nodes = [
            Node(name: "pow", op: .pow, inputs: ["input", "exponents"], outputs: ["p"]),
            Node(name: "slice", op: .slice, inputs: ["p"], outputs: ["s"],
                 attributes: Attributes(axes: [3, 2], starts: [0, 11], steps: [1, -2], counts: [2, 6])),
            Node(name: "resize", op: .resize, inputs: ["s"], outputs: ["r"],
                 attributes: Attributes(shape: [24, 12], mode: "nearest", scales: [2, 2], coordinateMode: "asymmetric", nearestMode: "floor")),
            Node(name: "top", op: .topK, inputs: ["r"], outputs: ["top"], attributes: Attributes(axis: -1, mode: mode, k: 1, largest: true)),
        ]
        let md = ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "input", shape: [-1, 12, 12, 3])], outputs: ["top"], nodes: nodes))
        return Model(metadata: md, tensors: [StoredTensor(name: "exponents", tensor: Tensor(shape: [3], data: [2, 3, 2]))])
    }

    @Test(arguments: ["values", "indices"])
    func onnxRuntimeMatchesTheEngine(mode: String) throws {
        let dir = try TempDir(tag: "export-ort-ops").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = Self.model(mode: mode)
        let onnx = dir.appendingPathComponent("ops.onnx"), input = dir.appendingPathComponent("x.npy"), output = dir.appendingPathComponent("y.npy")
        try Data(try ONNXExporter.export(model, name: "ops").bytes).write(to: onnx)
        let x = randomInputs(3, seed: 9)
        try writeNPY(nchw(x), to: input)
        guard let text = try python("run_onnx.py", [onnx.path, input.path, output.path]) else { return }
        let want = try run(model, x)
        #expect(want.count == 3 * 24 * 12, "\(mode): engine output size")
        // One channel: NCHW and NHWC hold the same order.
        assertClose(try readNPYFloats(output), want, atol: 1e-6, "\(mode): onnxruntime vs the engine (\(text.suffix(200)))")
    }
}
