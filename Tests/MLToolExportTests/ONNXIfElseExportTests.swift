import Foundation
import MLToolCore
import MLToolExport
import MLToolTestSupport
import Testing

/// The ONNX lowering of `ifElse` (Where on the condition as a bool scalar), checked by onnxruntime against the
/// engine for a condition that takes each branch.
@Suite struct ONNXIfElseExportTests {
    /// input (1, 12, 12, 3) → relu(dense to one value + `bias`) is the condition: with bias +100 it is non-zero
    /// (sigmoid of the input), with −100 it is 0 (tanh of the input); the values are rank 4 (NCHW in the ONNX file).
    static func model(bias: Float) -> Model {
        let nodes = [
            Node(name: "score", op: .dense, inputs: ["input", "w", "b"], outputs: ["c"], attributes: Attributes(activation: .relu)),
            Node(name: "then", op: .sigmoid, inputs: ["input"], outputs: ["a"]),
            Node(name: "else", op: .tanh, inputs: ["input"], outputs: ["e"]),
            Node(name: "choose", op: .ifElse, inputs: ["c", "a", "e"], outputs: ["y"]),
        ]
        let md = ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "input", shape: [1, 12, 12, 3])], outputs: ["y"], nodes: nodes))
        return Model(metadata: md, tensors: [StoredTensor(name: "w", tensor: Tensor(shape: [432, 1], data: [Float](repeating: 0.01, count: 432))),
                                             StoredTensor(name: "b", tensor: Tensor(shape: [1], data: [bias]))])
    }

    @Test(arguments: [Float(100), -100])
    func onnxRuntimeMatchesTheEngine(bias: Float) throws {
        let dir = try TempDir(tag: "export-ort-ifelse").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = Self.model(bias: bias)
        let onnx = dir.appendingPathComponent("ifelse.onnx"), input = dir.appendingPathComponent("x.npy"), output = dir.appendingPathComponent("y.npy")
        try Data(try ONNXExporter.export(model, name: "ifelse").bytes).write(to: onnx)
        let x = randomInputs(1, seed: 5)
        try writeNPY(nchw(x), to: input)
        guard let text = try python("run_onnx.py", [onnx.path, input.path, output.path]) else { return }
        let want = try run(model, x)
        // The engine took the branch the bias says.
        let chosen = x.data.map { bias > 0 ? 1 / (1 + Foundation.exp(-$0)) : Foundation.tanh($0) }
        assertClose(want, chosen, atol: 1e-6, "bias \(bias): the engine's branch")
        assertClose(try readNPYFloats(output), nchw(Tensor(shape: x.shape, data: want)).data, atol: 1e-6,
                    "bias \(bias): onnxruntime vs the engine (\(text.suffix(200)))")
    }
}
