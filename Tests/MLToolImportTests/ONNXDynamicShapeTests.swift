import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Graphs with dimensions known only at run time (Tests/Fixtures/onnx/make_dynamic.py): imported once, run at each
/// input size the fixture has, against onnxruntime's outputs at that size.
@Suite struct ONNXDynamicShapeTests {
    struct Values: Decodable { var shape: [Int]; var data: [Float] }
    struct Run: Decodable { var inputs: [String: Values]; var outputs: [String: Values] }
    struct Fixture: Decodable { var model: String; var runs: [Run] }

    static let names = ["reshape_heads", "same_pad_resize", "expand_fill", "slice_free", "clip_computed", "slice_sized", "gather_free",
                        "conv3d_frame", "instance_norm_free"]

    static func fixture(_ name: String) throws -> Fixture {
        let data = try Data(contentsOf: URL(fileURLWithPath: ONNXFixtures.path("dynamic/\(name).json")))
        return try JSONDecoder().decode(Fixture.self, from: data)
    }

    @Test(arguments: names, [Engine.Mode.fast, .reference])
    func everySizeFromOneImport(name: String, mode: Engine.Mode) throws {
        let f = try Self.fixture(name)
        let model = try ONNXImporter.importModel(path: ONNXFixtures.path("dynamic/\(f.model)"), options: ImportOptions())
        // The free dimensions stay free in the model: nothing was fixed at import.
        #expect(model.metadata.graph?.inputs.allSatisfy { $0.shape.filter { $0 == -1 }.count >= 2 } == true)
        let engine = try Engine(model: model, threads: 2, mode: mode)
        for run in f.runs {
            let feeds = run.inputs.mapValues { ONNXFixtures.toNHWC(Tensor(shape: $0.shape, data: $0.data)) }
            let got = try engine.run(feeds, outputs: Array(run.outputs.keys))
            for (output, expected) in run.outputs {
                let actual = ONNXFixtures.toNCHW(try #require(got[output]))
                let size = run.inputs.values.first?.shape ?? []
                assertClose(actual, Tensor(shape: expected.shape, data: expected.data), rtol: 1e-5, atol: 1e-5,
                            "\(name) \(mode) input \(size) output '\(output)'")
            }
        }
    }

    @Test func fixturesHaveSeveralSizes() throws {
        let runs = try Self.names.map { try Self.fixture($0).runs.count }
        #expect(runs == [3, 3, 3, 3, 2, 3, 2, 2, 2])
    }

    /// A Reshape target read from the graph is a plan-time value: a `shape` node and a two-input reshape, no
    /// constant standing in for the free dimensions.
    @Test func reshapeTargetIsComputedInTheGraph() throws {
        let model = try ONNXImporter.importModel(path: ONNXFixtures.path("dynamic/reshape_heads.onnx"), options: ImportOptions())
        let nodes = try #require(model.metadata.graph?.nodes)
        #expect(nodes.filter { $0.op == .shape }.count == 1)
        #expect(nodes.filter { $0.op == .reshape && $0.inputs.count == 2 }.count == 2)
        // The constant [0, 0, -1] keeps ONNX's "copy": one static reshape with it.
        #expect(nodes.contains { $0.op == .reshape && $0.attributes.shape == [0, 0, -1] })
    }

    /// A target computed from the data (not from shapes) cannot be planned: the engine names the node and input.
    @Test func targetFromDataIsRefusedAtRun() throws {
        let node = Node(name: "r", op: .reshape, inputs: ["x", "t"], outputs: ["y"])
        let model = Model(metadata: ModelMetadata(task: .network, graph: Graph(
            inputs: [GraphInput(name: "x", shape: [-1, 4]), GraphInput(name: "t", shape: [2])], outputs: ["y"], nodes: [node])), tensors: [])
        // Checked when the engine loads (the batch is the only free dimension: it plans batch 1 at once).
        #expect(throws: EngineError.invalidAttribute(node: "r", attribute: "input 't'",
                                                     expected: "a value known when planning (computed from the input shapes and constants)",
                                                     actual: "a value computed from the input data")) {
            _ = try Engine(model: model, threads: 1).run(["x": Tensor(shape: [2, 4], data: [Float](repeating: 1, count: 8)),
                                                          "t": Tensor(shape: [2], data: [4, 2])])
        }
    }

    /// An ifElse whose condition is a plan-time value (N == 1, from the input's shape) plans only the branch it
    /// takes: the squeeze of axis 0 would not fit N = 2, and the two branches differ in shape.
    @Test(arguments: [Engine.Mode.fast, .reference])
    func planTimeConditionRunsOnlyItsBranch(mode: Engine.Mode) throws {
        var squeeze = Attributes()
        let first = Attributes(perm: [0])
        squeeze.axes = [0]
        let nodes = [
            Node(name: "rows", op: .shape, inputs: ["x"], outputs: ["n"], attributes: first),
            Node(name: "single", op: .binary, inputs: ["n", "one"], outputs: ["c"], attributes: Attributes(mode: "equal")),
            Node(name: "squeezed", op: .squeeze, inputs: ["x"], outputs: ["a"], attributes: squeeze),
            Node(name: "kept", op: .identity, inputs: ["x"], outputs: ["b"]),
            Node(name: "pick", op: .ifElse, inputs: ["c", "a", "b"], outputs: ["y"]),
        ]
        let model = Model(metadata: ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "x", shape: [-1, 3])],
                                                                               outputs: ["y"], nodes: nodes)),
                          tensors: [StoredTensor(name: "one", tensor: Tensor(shape: [1], data: [1]))])
        let engine = try Engine(model: model, threads: 1, mode: mode)
        let one = try #require(try engine.run(["x": Tensor(shape: [1, 3], data: [1, 2, 3])])["y"])
        #expect(one.shape == [3] && one.data == [1, 2, 3])
        let two = try #require(try engine.run(["x": Tensor(shape: [2, 3], data: [1, 2, 3, 4, 5, 6])])["y"])
        #expect(two.shape == [2, 3] && two.data == [1, 2, 3, 4, 5, 6])
    }
}
