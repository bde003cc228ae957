import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Whole networks written with the onnx helper API (Tests/Fixtures/onnx/make_fixtures.py): import + engine must
/// match onnxruntime's outputs.
@Suite struct ONNXNetworkTests {
    static let cases: [String] = (try? ONNXFixtures.manifest().map(\.model)) ?? []

    @Test(arguments: cases, [Engine.Mode.fast, .reference])
    func matchesOnnxRuntime(model: String, mode: Engine.Mode) throws {
        let c = try #require(try ONNXFixtures.manifest().first { $0.model == model })
        // --input-size as a user would give it (only used where the file leaves height/width free).
        let size = c.inputs.first.flatMap { $0.shape.count == 4 ? (height: $0.shape[2], width: $0.shape[3]) : nil }
        let imported = try ONNXImporter.importModel(path: ONNXFixtures.path(c.model), options: ImportOptions(inputSize: size))
        let engine = try Engine(model: imported, threads: 1, mode: mode)
        var feeds: [String: Tensor] = [:]
        for i in c.inputs { feeds[i.name] = ONNXFixtures.toNHWC(try ONNXFixtures.load(i)) }
        let got = try engine.run(feeds, outputs: c.outputs.map(\.name))
        for o in c.outputs {
            let expected = try ONNXFixtures.load(o)
            let actual = ONNXFixtures.toNCHW(try #require(got[o.name]))
            assertClose(actual, expected, rtol: 1e-4, atol: 1e-5, "\(model) \(mode) output '\(o.name)'")
        }
    }

    @Test func manifestListsEveryNetwork() throws {
        #expect(Self.cases.count == 12)
    }
}
