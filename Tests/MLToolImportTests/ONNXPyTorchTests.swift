import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Networks exported by real PyTorch (`torch.onnx.export`, TorchScript exporter, opset 17), made by
/// Tests/Fixtures/onnx/make_pytorch_fixtures.py: import + engine must match torch's own outputs within 1e-4
/// relative. Only committed files are read (no torch at test time).
@Suite struct ONNXPyTorchTests {
    struct Manifest: Decodable { let torch: String; let opset: Int; let cases: [ONNXFixtures.Case] }

    static func manifest() throws -> Manifest {
        let data = try Data(contentsOf: URL(fileURLWithPath: ONNXFixtures.path("pytorch/manifest.json")))
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    static let models: [String] = (try? manifest().cases.map(\.model)) ?? []

    @Test(arguments: models, [Engine.Mode.fast, .reference])
    func matchesTorch(model: String, mode: Engine.Mode) throws {
        let c = try #require(try Self.manifest().cases.first { $0.model == model })
        let imported = try ONNXImporter.importModel(path: ONNXFixtures.path("pytorch/" + c.model), options: ImportOptions())
        let engine = try Engine(model: imported, threads: 1, mode: mode)
        var feeds: [String: Tensor] = [:]
        for i in c.inputs { feeds[i.name] = ONNXFixtures.toNHWC(try ONNXFixtures.load(i, under: "pytorch")) }
        let got = try engine.run(feeds, outputs: c.outputs.map(\.name))
        for o in c.outputs {
            let expected = try ONNXFixtures.load(o, under: "pytorch")
            let actual = ONNXFixtures.toNCHW(try #require(got[o.name]))
            assertClose(actual, expected, rtol: 1e-4, atol: 1e-6, "\(model) \(mode) output '\(o.name)'")
        }
    }

    /// The residual net was exported with a dynamic batch and `view(size(0), -1)`: the folded shape arithmetic
    /// leaves the batch free, so one image alone gives the first row of torch's batch-of-2 output.
    @Test func dynamicBatchRunsOneImage() throws {
        let c = try #require(try Self.manifest().cases.first { $0.model == "torch_residual_cnn.onnx" })
        let imported = try ONNXImporter.importModel(path: ONNXFixtures.path("pytorch/" + c.model), options: ImportOptions())
        #expect(imported.metadata.graph?.inputs.first?.shape == [-1, 16, 16, 3])
        let x = try ONNXFixtures.load(c.inputs[0], under: "pytorch"), y = try ONNXFixtures.load(c.outputs[0], under: "pytorch")
        let one = Tensor(shape: [1] + x.shape.dropFirst(), data: Array(x.data[..<(x.count / x.shape[0])]))
        let got = try #require(try Engine(model: imported, threads: 1).run(["x": ONNXFixtures.toNHWC(one)], outputs: ["y"])["y"])
        let first = Tensor(shape: [1] + y.shape.dropFirst(), data: Array(y.data[..<(y.count / y.shape[0])]))
        assertClose(got, first, rtol: 1e-4, atol: 1e-6, "one image vs the batch's first row")
    }

    @Test func manifestListsTheThreeNetworks() throws {
        let m = try Self.manifest()
        #expect(Set(m.cases.map(\.model)) == ["torch_residual_cnn.onnx", "torch_depthwise_cnn.onnx", "torch_squeeze_excite.onnx"])
        #expect(m.torch.hasPrefix("2."))
    }
}
