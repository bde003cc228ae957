import CMLToolCPU
import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Recurrent networks exported by real PyTorch (two-layer bidirectional batch-first LSTM and GRU, a streaming LSTM
/// whose state is a graph input and output) and single ONNX layers with the settings torch never exports (every
/// optional gate function with α and β, clip, peepholes, input_forget, linear_before_reset, sequence_lens), made
/// by Tests/Fixtures/onnx/make_recurrent.py with onnxruntime's outputs: import + engine must match them within 1e-4 of each output's range, on the fast path at every CPU
/// level this machine has and on the reference kernels. Only committed files are read.
@Suite struct ONNXRecurrentTests {
    struct Manifest: Decodable { let torch: String; let onnxruntime: String; let opset: Int; let cases: [ONNXFixtures.Case] }

    static func manifest() throws -> Manifest {
        let data = try Data(contentsOf: URL(fileURLWithPath: ONNXFixtures.path("recurrent/manifest.json")))
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    static func load(_ t: ONNXFixtures.TensorFile) throws -> Tensor { try ONNXFixtures.load(t, under: "recurrent") }

    static func model(_ c: ONNXFixtures.Case) throws -> Model {
        try ONNXImporter.importModel(path: ONNXFixtures.path("recurrent/" + c.model), options: ImportOptions())
    }

    /// `expected`'s range (max − min) times 1e-4: the tolerance of every comparison here.
    static func tolerance(_ expected: Tensor) -> Double {
        Double((expected.data.max() ?? 0) - (expected.data.min() ?? 0)) * 1e-4
    }

    /// Runs `c` and compares every output with onnxruntime's.
    static func check(_ c: ONNXFixtures.Case, _ engine: Engine, _ what: String) throws {
        var feeds: [String: Tensor] = [:]
        for i in c.inputs { feeds[i.name] = try load(i) }
        let got = try engine.run(feeds, outputs: c.outputs.map(\.name))
        for o in c.outputs {
            let expected = try load(o)
            // Y (rank 4) comes back in the IR's NHWC.
            let actual = ONNXFixtures.toNCHW(try #require(got[o.name]))
            assertClose(actual, expected, atol: tolerance(expected), "\(c.model) \(what) output '\(o.name)'")
        }
    }

    static let cases: [Int] = Array(((try? manifest().cases) ?? []).indices)

    @Test(arguments: cases)
    func matchesOnnxRuntimeAtEveryLevel(index: Int) throws {
        let c = try Self.manifest().cases[index]
        let imported = try Self.model(c)
        try Self.check(c, try Engine(model: imported, threads: 1, mode: .reference), "reference")
        let start = mlk_set_thread_cpu_level(-1)
        defer { _ = mlk_set_thread_cpu_level(start) }
        var levels: [Int32] = []
        for level in Int32(0)...mlk_cpu_detected() {
            _ = mlk_set_thread_cpu_level(level)
            guard mlk_cpu_level() == level, mlk_cpu_has(level) != 0 else { continue }
            levels.append(level)
            try Self.check(c, try Engine(model: imported, threads: 2), "fast at CPU level \(level)")
        }
        #expect(levels.first == 0, "levels run: \(levels)")
    }

    /// Streaming: the state the first chunk gives back, fed to the second call, gives onnxruntime's second-chunk
    /// outputs (which were computed from onnxruntime's own first-chunk state).
    @Test func stateGoesAroundBetweenCalls() throws {
        let m = try Self.manifest()
        let chunks = m.cases.filter { $0.model == "torch_lstm_stream.onnx" }
        #expect(chunks.count == 2)
        let engine = try Engine(model: try Self.model(chunks[0]), threads: 1)
        var feeds: [String: Tensor] = [:]
        for i in chunks[0].inputs { feeds[i.name] = try Self.load(i) }
        let first = try engine.run(feeds, outputs: ["p", "hn", "cn"])
        let x = try #require(chunks[1].inputs.first { $0.name == "x" })
        let second = try engine.run(["x": try Self.load(x), "h": try #require(first["hn"]), "c": try #require(first["cn"])],
                                    outputs: ["p", "hn", "cn"])
        for o in chunks[1].outputs {
            let expected = try Self.load(o)
            assertClose(try #require(second[o.name]), expected, atol: Self.tolerance(expected), "second chunk '\(o.name)'")
        }
    }

    /// The layers import as the IR's recurrent ops: two LSTM layers with three outputs each asked for (Y, Y_h, Y_c),
    /// the streaming model's state a graph input, and the sequence axis free (a 7-step export runs 3 steps).
    @Test func importsAsRecurrentNodes() throws {
        let m = try Self.manifest()
        let lstm = try Self.model(try #require(m.cases.first { $0.model == "torch_lstm.onnx" }))
        let ops = lstm.metadata.graph!.nodes.map(\.op)
        #expect(ops.filter { $0 == .lstm }.count == 6)
        let stream = try #require(m.cases.first { $0.model == "torch_lstm_stream.onnx" })
        let g = try Self.model(stream).metadata.graph!
        #expect(g.inputs.map(\.shape) == [[-1, 1, 8], [1, 1, 16], [1, 1, 16]])
        #expect(Set(g.nodes.filter { $0.op == .lstm }.compactMap(\.attributes.initialStates)) == [["h", "c"]])
        #expect(m.torch.hasPrefix("2.") && m.opset == 17)
    }
}
