import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// The default extractor: models/efficientnet-lite0.onnx from recipes/efficientnet_lite0.py, checked against the
/// onnxruntime logits and features the recipe stores for six photos. Skipped (with the reason printed) when the
/// recipe has not run.
@Suite struct ONNXEfficientNetTests {
    static let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("models").path
    static let onnxPath = models + "/efficientnet-lite0.onnx"
    static let referenceDir = models + "/efficientnet-lite0-reference"
    static let available: Bool = {
        let ok = FileManager.default.fileExists(atPath: onnxPath) && FileManager.default.fileExists(atPath: referenceDir + "/reference.json")
        if !ok { print("ONNXEfficientNetTests: SKIPPED: \(onnxPath) or its reference tensors are missing (run `make models` or `python3 recipes/efficientnet_lite0.py`)") }
        return ok
    }()
    static let photos = ["chelsea", "coffee", "rocket", "astronaut", "china", "flower"]

    static func raw(_ name: String, shape: [Int]) throws -> Tensor {
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(referenceDir)/\(name).f32"))
        let floats = data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
        return Tensor(shape: shape, data: floats)
    }

    static func importExtractor() throws -> Model {
        let labels = try String(contentsOfFile: models + "/imagenet-labels.txt", encoding: .utf8)
            .split(separator: "\n").map(String.init)
        return try ONNXImporter.importModel(path: onnxPath, options: ImportOptions(
            image: .efficientNetLite, labels: labels, featureTensor: "features"))
    }

    @Test(.enabled(if: available, "needs models/efficientnet-lite0.onnx (make models)"))
    func importedStructure() throws {
        let m = try Self.importExtractor()
        let g = try #require(m.metadata.graph)
        #expect(m.metadata.task == .imageClassifier)
        #expect(m.metadata.labels.count == 1000)
        #expect(m.metadata.outputKind == "logits")
        #expect(m.metadata.featureTensor == "features")
        #expect(m.metadata.image == .efficientNetLite)
        #expect(g.sourceLayout == "nchw")
        #expect(g.inputs.map { [$0.name: $0.shape] } == [["input": [-1, 224, 224, 3]]])
        #expect(g.inputs.map(\.dimensionNames) == [["N", "", "", ""]])
        #expect(g.outputs == ["logits", "features"])
        // Every BatchNormalization folded: 49 convs + 1 dense carry all the parameters.
        #expect(!g.nodes.contains { $0.op == .batchNorm })
        #expect(g.nodes.filter { $0.op == .conv }.count == 49)
        let convParams = 32 * 27 + 1280 * 320
        #expect(m.parameterCount > convParams)
        // The stem conv: 3×3/2, TF "same" padding for 224 → extra row/column at the bottom/right, ReLU6 fused.
        let stem = try #require(g.nodes.first { $0.op == .conv })
        #expect(stem.attributes.pads == [0, 0, 1, 1])
        #expect(stem.attributes.strides == [2, 2])
        #expect(m.tensor(named: stem.inputs[1])?.shape == [3, 3, 3, 32])
        #expect(m.metadata.provenance.sources.first?.sha256.count == 64)
    }

    @Test(.enabled(if: available, "needs models/efficientnet-lite0.onnx (make models)"))
    func logitsMatchOnnxRuntime() throws {
        let engine = try Engine(model: try Self.importExtractor(), threads: 2)
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.referenceDir + "/reference.json"))) as? [String: [String: Any]]
        for photo in Self.photos {
            let x = ONNXFixtures.toNHWC(try Self.raw("\(photo).input", shape: [1, 3, 224, 224]))
            let out = try engine.run(["input": x], outputs: ["logits", "features"])
            let logits = try #require(out["logits"]), features = try #require(out["features"])
            assertClose(logits, try Self.raw("\(photo).logits", shape: [1, 1000]), rtol: 1e-4, atol: 1e-4,
                        "\(photo): logits vs onnxruntime")
            assertClose(features, try Self.raw("\(photo).features", shape: [1, 1280]), rtol: 1e-4, atol: 1e-4,
                        "\(photo): features vs onnxruntime")
            let top1 = logits.data.indices.max { logits.data[$0] < logits.data[$1] }
            let expectedTop1 = (summary?[photo]?["top5"] as? [Int])?.first
            #expect(top1 == expectedTop1, "\(photo): top-1 \(top1 ?? -1), onnxruntime \(expectedTop1 ?? -1)")
        }
    }
}
