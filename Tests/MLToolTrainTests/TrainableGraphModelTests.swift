import Foundation
import MLToolCore
import MLToolEngine
import MLToolFormat
import MLToolTestSupport
import Testing
@testable import MLToolTrain

/// The top of EfficientNet-Lite0 (models/efficientnet-lite0.bin, `make models`) taken from the IR as a trainable
/// graph: from block 14's output to the 1280 features, it computes what the engine computes.
@Suite struct TrainableGraphModelTests {
    static let path = SharedDatasets.repository.appendingPathComponent("models/efficientnet-lite0.bin").path

    static func model() throws -> Model? {
        guard FileManager.default.fileExists(atPath: path) else {
            Oracles.missing("no \(path) (make models)")
            return nil
        }
        return try ModelFile.read(path: path)
    }

    @Test func efficientNetTopMatchesTheEngine() throws {
        guard let model = try Self.model() else { return }
        let cut = "_blocks.14.add"
        let (graph, names) = try TrainableGraph.top(of: model, from: cut, to: "features")
        // Block 15 (expand, depthwise, project: no residual, its width changes), the head conv, pooling.
        #expect(graph.nodes.count == 5)
        #expect(names.first == "_blocks.15._expand_conv.bnfold.weight" && names.count == 8)
        var rng = SplitMix64(seed: 67)
        let x = Tensor(shape: [2, 224, 224, 3], data: random(2 * 224 * 224 * 3, &rng).map(Float.init))
        let engine = try Engine(model: model, threads: 1)
        let out = try engine.run(["input": x], outputs: [cut, "features"])
        let (cutValues, features) = try (#require(out[cut]), #require(out["features"]))
        #expect(cutValues.shape == [2, 7, 7, 192])
        let trace = try graph.forward(cutValues.data, shape: .init(batch: 2, height: 7, width: 7, channels: 192))
        // Measured 4.1e-6 worst on features of magnitude ~1-3 (AMD EPYC Zen 4), 698 of 2,560 not bit-equal: the
        // engine's fused kernels and this graph's SGEMMs sum in different orders.
        assertClose(trace.output, features.data, rtol: 1e-5, atol: 1e-5, "features")
    }

    @Test func aCutInsideAResidualBlockIsRefusedByName() throws {
        guard let model = try Self.model() else { return }
        #expect(throws: TrainError.notYetSupported(what: "fine-tuning node '_blocks.14.add' (add): its input '_blocks.13.add', computed before '_blocks.14._bn0.relu6'")) {
            _ = try TrainableGraph.top(of: model, from: "_blocks.14._bn0.relu6", to: "features")
        }
        #expect(throws: TrainError.self) { _ = try TrainableGraph.top(of: model, from: "features", to: "_blocks.14.add") }
    }

    /// `--fine-tune N` counts convolutions back from the features: 1 is the head conv (its input is block 15's
    /// projection), 4 the whole of block 15 (no skip connection), and 5 to 7, which would split block 14 from its
    /// residual add, all move up to that block's input.
    @Test func cutsCountConvolutionsAndKeepResidualBlocksWhole() throws {
        guard let model = try Self.model() else { return }
        let cuts = try (1...8).map { try TrainableGraph.cut(in: model, before: "features", convolutions: $0) }
        #expect(cuts == ["_blocks.15._bn2.out", "_blocks.15._bn1.relu6", "_blocks.15._bn0.relu6", "_blocks.14.add",
                         "_blocks.13.add", "_blocks.13.add", "_blocks.13.add", "_blocks.12.add"])
        for cut in Set(cuts) { _ = try TrainableGraph.top(of: model, from: cut, to: "features") }
        #expect(throws: TrainError.self) { _ = try TrainableGraph.cut(in: model, before: "features", convolutions: 0) }
        #expect(throws: TrainError.self) { _ = try TrainableGraph.cut(in: model, before: "features", convolutions: 100) }
    }
}
