import Foundation
import MLToolCore
import MLToolEngine
import Testing
import MLToolTestSupport

/// Single ops checked against onnxruntime's outputs, stored by Fixtures/make_ort_fixtures.py (already translated to
/// the IR layout), in both engine modes.
@Suite struct OnnxRuntimeOracleTests {
    struct Values: Decodable { var shape: [Int]; var data: [Float] }
    struct Case: Decodable, CustomTestStringConvertible {
        var name: String
        var op: Op
        var attributes: Attributes
        var input: Values
        var weights: [Values]
        var expected: Values
        var testDescription: String { name }
    }
    struct File: Decodable { var cases: [Case] }

    static let cases: [Case] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/ort_cases.json")
        guard let data = try? Data(contentsOf: url), let file = try? JSONDecoder().decode(File.self, from: data) else {
            return []
        }
        return file.cases
    }()

    @Test func fixturesArePresent() {
        #expect(Self.cases.count >= 27)
    }

    @Test(arguments: cases)
    func matchesOnnxRuntime(_ c: Case) throws {
        let weightNames = c.weights.indices.map { "w\($0)" }
        let tensors = zip(weightNames, c.weights).map { StoredTensor(name: $0, tensor: Tensor(shape: $1.shape, data: $1.data)) }
        var shape = c.input.shape
        shape[0] = -1
        let node = Node(name: c.name, op: c.op, inputs: ["x"] + weightNames, outputs: ["y"], attributes: c.attributes)
        let model = Model(metadata: ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "x", shape: shape)],
                                                                               outputs: ["y"], nodes: [node])),
                          tensors: tensors)
        let input = Tensor(shape: c.input.shape, data: c.input.data)
        let expected = Tensor(shape: c.expected.shape, data: c.expected.data)
        for mode in [Engine.Mode.reference, .fast] {
            let y = try #require(try Engine(model: model, threads: 2, mode: mode).run(["x": input])["y"])
            assertClose(y, expected, rtol: 2e-5, atol: 2e-5, "\(c.name) \(mode)")
        }
    }
}
