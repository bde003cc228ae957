import Foundation
import MLToolCore
import MLToolEngine
import Testing
@testable import MLToolImport

/// Whole networks written by real Keras (2.21 tf_keras and 3.15 jax): imported, run by the engine, and compared
/// with Keras's own `model.predict` outputs within 1e-4 (relative).
@Suite struct KerasEngineTests {
    static let fixtures = ["k2_mlp", "k3_mlp", "k2_residual_cnn", "k3_residual_cnn", "k2_mobilenet", "k3_mobilenet",
                           "k2_zoo", "k3_zoo", "k2_zoo2", "k3_zoo2", "k2_nested", "k3_nested", "k2_ops", "k3_ops"]

    @Test(arguments: fixtures, [Engine.Mode.fast, .reference])
    func matchesKeras(_ name: String, _ mode: Engine.Mode) throws {
        try KerasFixture.expectMatchesKeras(name, mode)
    }

    @Test func freeSizeModelWithTheGivenSize() throws {
        let model = try KerasImporter.importModel(path: KerasFixture.path("k3_free_size.h5"),
                                                  options: ImportOptions(inputSize: (height: 9, width: 11)))
        let (input, expected) = try KerasFixture.io("k3_free_size")
        let out = try Engine(model: model, threads: 1).run(["image": input])
        KerasFixture.expectClose(try #require(out["logits"]), expected, "k3_free_size")
    }

    @Test func batchNormFoldingKeepsTheOutputs() throws {
        let model = try KerasImporter.importModel(path: KerasFixture.path("k3_mobilenet.h5"), options: ImportOptions())
        let optimized = try GraphPasses.optimize(model)
        #expect(optimized.metadata.graph?.nodes.contains { $0.op == .batchNorm } == false)
        let (input, expected) = try KerasFixture.io("k3_mobilenet")
        let out = try Engine(model: optimized, threads: 1, mode: .reference).run(["image": input])
        KerasFixture.expectClose(try #require(out["probs"]), expected, "folded k3_mobilenet")
    }

    @Test func fixedLengthStringFileRunsLikeTheOriginal() throws {
        let model = try KerasImporter.importModel(path: KerasFixture.path("k2_mlp_fixed_strings.h5"), options: ImportOptions())
        let (input, expected) = try KerasFixture.io("k2_mlp")
        let out = try Engine(model: model, threads: 1).run(["features": input])
        KerasFixture.expectClose(try #require(out["probs"]), expected, "k2_mlp_fixed_strings")
    }
}
