import Foundation
import MLToolCore
import MLToolDetect
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Paths and helpers shared by the Core ML tests: Tests/Fixtures/coreml, made by its make_fixtures.py (torch 2.13 +
/// coremltools 9; only committed files are read here).
enum CoreMLFixtures {
    static let directory: String = {
        let here = URL(fileURLWithPath: #filePath)
        return here.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/coreml").path
    }()

    static func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    struct Case: Decodable, Sendable { let model: String; let reference: String; let classes: Int; let kind: String; let dequantized: String? }
    struct Manifest: Decodable {
        let torch: String; let coremltools: String; let size: Int; let scale: Float; let bias: Float; let labels: [String]; let cases: [Case]
        let detectors: [DetectorCase]?
    }
    /// A torch detector → NMS pipeline: torch's raw outputs on the photos (confidence (3, boxes, classes),
    /// normalized cx, cy, w, h coordinates (3, boxes, 4)) and the boxes numpy's class-agnostic NMS keeps per photo.
    struct DetectorCase: Decodable, Sendable {
        let model: String; let torch: String; let coremltools: String; let labels: [String]; let boxes: Int
        let confidence: String; let coordinates: String; let iou: Float; let threshold: Float
        let per_class: Bool; let kept: [[Int]]
    }

    static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: path("manifest.json"))))
    }

    static func floats(_ name: String, shape: [Int]) throws -> Tensor {
        let data = try Data(contentsOf: URL(fileURLWithPath: path(name)))
        let v = data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
        return Tensor(shape: shape, data: v)
    }

    /// The three photos (uint8 NCHW 3×3×64×64) through the model's recorded preprocessing, as the IR's NHWC input.
    static func input(for model: Model) throws -> Tensor {
        let prep = try #require(model.metadata.image)
        let data = try Data(contentsOf: URL(fileURLWithPath: path("photos.u8")))
        let (n, c, h, w) = (3, 3, prep.height, prep.width)
        #expect(data.count == n * c * h * w)
        var out = [Float](repeating: 0, count: n * h * w * c)
        for i in 0..<n { for ch in 0..<c { for y in 0..<h { for x in 0..<w {
            let pixel = Float(data[((i * c + ch) * h + y) * w + x])
            out[((i * h + y) * w + x) * c + ch] = (pixel * prep.scale + prep.bias[ch] - prep.mean[ch]) / prep.std[ch]
        } } } }
        return Tensor(shape: [n, h, w, c], data: out)
    }

    /// The model's first output on the photos, (3, classes).
    static func run(_ model: Model, mode: Engine.Mode = .fast, int8Compute: Engine.Int8Compute? = nil) throws -> Tensor {
        let engine = try Engine(model: model, threads: 1, mode: mode, int8Compute: int8Compute)
        let graph = try #require(model.metadata.graph)
        let out = try engine.run([graph.inputs[0].name: input(for: model)], outputs: [graph.outputs[0]])
        return try #require(out[graph.outputs[0]])
    }
}

/// Networks converted by coremltools 9 from PyTorch and Keras, in both formats (NeuralNetwork .mlmodel, ML Program
/// .mlpackage), match their source framework's own outputs on three real photos.
@Suite struct CoreMLImportTests {
    static let cases: [String] = (try? CoreMLFixtures.manifest().cases.map(\.model)) ?? []

    @Test(arguments: cases)
    func matchesItsSourceFramework(model name: String) throws {
        let m = try CoreMLFixtures.manifest()
        let c = try #require(m.cases.first { $0.model == name })
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name))
        // Labels and preprocessing come from the file.
        #expect(model.metadata.labels == m.labels)
        let prep = try #require(model.metadata.image)
        #expect(prep.height == m.size && prep.width == m.size && prep.colorOrder == "rgb")
        #expect(abs(prep.scale - m.scale) < 1e-7 && prep.bias == [m.bias, m.bias, m.bias], "\(prep)")
        #expect(model.metadata.graph?.inputs.first?.shape == [-1, m.size, m.size, 3])
        let expected = try CoreMLFixtures.floats(c.reference, shape: [3, c.classes])
        let got = try CoreMLFixtures.run(model)
        #expect(got.shape == [3, c.classes])
        if c.kind == "float" {
            assertClose(got, expected, rtol: 1e-4, atol: 1e-5, name)
            let reference = try CoreMLFixtures.run(model, mode: .reference)
            assertClose(reference, expected, rtol: 1e-4, atol: 1e-5, "\(name) reference kernels")
        } else {
            // Float16 or quantized weights against torch's float network: the bound is the rounding's, stated per
            // kind (max |error| over the largest |logit|). Measured on a 2-core AVX2 machine (December 2026):
            // float16 0.0145 % (bound 0.03 %, twice that), linear 8-bit 0.38 % (bound 1 %), 4-bit k-means palettes
            // 6.0 % (bound 10 %).
            let bounds: [String: Float] = ["fp16": 0.0003, "linear8": 0.01, "kmeans4": 0.10]
            let bound = try #require(bounds[c.kind], "no bound for kind \(c.kind)")
            let range = Double(expected.data.map(abs).max() ?? 1)
            let error = Closeness.ratio(got.data, expected.data, atol: range)
            print("CoreMLImportTests: \(name) (\(c.kind)) vs torch's float network: max error \(error) of the output range (bound \(bound))")
            assertClose(got.data, expected.data, atol: Double(bound) * range, "\(name): error as a fraction of the output range \(range)")
            #expect(error > 0, "\(name): quantized weights reproduce the float network exactly: were they dequantized at all?")
        }
    }

    /// coremltools' quantized NeuralNetwork weights, dequantized by mltool, equal the same weights dequantized by
    /// numpy (the .dequant.mlmodel beside each) to 1e-4: the codes, bit order, scales and tables are read right.
    /// (Float compute on both: int8 compute, the default for big layers, rounds the activations too.)
    @Test(arguments: ["resnet_linear8.mlmodel", "resnet_palette4.mlmodel"])
    func quantizedWeightsMatchTheirDequantization(model name: String) throws {
        let q = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name))
        let f = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name.replacingOccurrences(of: ".mlmodel", with: ".dequant.mlmodel")))
        assertClose(try CoreMLFixtures.run(q, int8Compute: .off), try CoreMLFixtures.run(f), rtol: 1e-4, atol: 1e-5, name)
    }

    /// Compressed weights stay compressed: 4-bit tables as palettes, the ML Program's int8 codes as int8.
    @Test func compressedWeightsKeepTheirStorage() throws {
        for (name, dtype) in [("resnet_palette4.mlmodel", DType.palette4), ("resnet_palette4.mlpackage", .palette4), ("resnet_linear8.mlpackage", .int8)] {
            let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name))
            let convs = model.metadata.graph?.nodes.filter { $0.op == .conv || $0.op == .dense } ?? []
            let byName = model.tensorsByName
            let stored = convs.compactMap { byName[$0.inputs[1]]?.dtype }
            #expect(stored.count == convs.count && !stored.isEmpty)
            #expect(stored.allSatisfy { $0 == dtype }, "\(name): \(stored)")
        }
    }

    @Test func unsupportedLayersAreListedAtOnce() throws {
        let path = CoreMLFixtures.path("unsupported.mlmodel")
        #expect(throws: ImportError.unsupported(file: path, ops: [
            .init(op: "lrn", count: 2, firstNodes: ["lrn_a", "lrn_b"]), .init(op: "l2normalize", count: 1, firstNodes: ["l2"]),
            .init(op: "mvn", count: 1, firstNodes: ["mvn"]),
        ])) { try CoreMLImporter.importModel(path: path) }
        let package = CoreMLFixtures.path("unsupported.mlpackage")
        #expect(throws: ImportError.unsupported(file: package + "/Data/com.apple.CoreML/model.mlmodel", ops: [
            .init(op: "cumsum", count: 2, firstNodes: ["cumsum_a", "cumsum_b"]), .init(op: "band_part", count: 1, firstNodes: ["band"]),
        ])) { try CoreMLImporter.importModel(path: package) }
    }

    /// A network → NonMaximumSuppression pipeline (made by coremltools' builder) imports as a detector: a "boxes"
    /// decoder over the network's coordinates (6, 4) and confidences (6, 2), each given a batch axis, the NMS
    /// stage's thresholds, per-class flag and labels.
    @Test func detectorPipelineImportsAsADetector() throws {
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path("detector_pipeline.mlmodel"))
        #expect(model.metadata.task == .objectDetector)
        #expect(model.metadata.labels == ["raccoon", "cat"])
        let d = try #require(model.metadata.detection)
        #expect(d.decoder == "boxes" && d.boxEncoding == "cxcywh" && d.classCount == 2)
        #expect(d.boxes == BoxesOutput(tensor: "raw_coordinates.batched", layout: "nbk", scoresTensor: "raw_confidence.batched",
                                       scoresLayout: "nbc", normalized: true))
        #expect(d.nms == NMSSettings(iouThreshold: 0.45, confidenceThreshold: 0.25, perClass: true, maxDetections: 100))
        #expect(model.metadata.graph?.outputs == ["raw_coordinates.batched", "raw_confidence.batched"])
        // The network runs: one (1, 6, 4) and one (1, 6, 2) output for a 16-vector (the input has no batch axis).
        let engine = try Engine(model: model, threads: 1)
        let out = try engine.run(["x": Tensor(shape: [16], data: (0..<16).map { Float($0) / 16 })],
                                 outputs: ["raw_coordinates.batched", "raw_confidence.batched"])
        #expect(out["raw_coordinates.batched"]?.shape == [1, 6, 4])
        #expect(out["raw_confidence.batched"]?.shape == [1, 6, 2])
    }

    static let detectorCases: [String] = (try? CoreMLFixtures.manifest().detectors?.map(\.model)) ?? []

    /// `matchesItsSourceFramework` runs one case per manifest entry: both source frameworks must be there in both
    /// formats, or a lost entry would go unnoticed.
    @Test func bothSourceFrameworksAreInTheManifestInBothFormats() {
        for name in ["small_cnn", "mobilenet_style", "resnet_style", "keras_mobilenet"] {
            #expect(Self.cases.contains(name + ".mlmodel") && Self.cases.contains(name + ".mlpackage"), "\(name): \(Self.cases)")
        }
    }

    /// The parametrized test below runs one case per detector in the manifest: both formats must be there, or it
    /// would silently test nothing.
    @Test func bothDetectorPipelinesAreInTheManifest() {
        #expect(Set(Self.detectorCases) == ["tiny_detector.mlmodel", "tiny_detector.mlpackage"], "\(Self.detectorCases)")
    }

    /// A YOLO-like torch detector converted by coremltools to a NeuralNetwork (.mlmodel) and to an ML Program
    /// (.mlpackage, whose program reads its weights from weights/0-weight.bin as ct.utils.make_pipeline writes it), each
    /// followed by a NonMaximumSuppression model in a pipeline, imports as a detector: labels and thresholds from the
    /// NMS stage; on the three photos every candidate is torch's (best class, score within 1e-4 relative, corners within
    /// 1e-4 of the input size), and mltool's NMS keeps exactly the boxes numpy's NMS kept, in order.
    @Test(arguments: detectorCases)
    func detectorPipelineMatchesTorch(model name: String) throws {
        let m = try CoreMLFixtures.manifest()
        let c = try #require(m.detectors?.first { $0.model == name })
        #expect(c.torch == m.torch && c.coremltools == m.coremltools, "\(name): made with torch \(c.torch), coremltools \(c.coremltools)")
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name))
        #expect(model.metadata.task == .objectDetector)
        #expect(model.metadata.labels == c.labels)
        let d = try #require(model.metadata.detection)
        #expect(d.decoder == "boxes" && d.boxEncoding == "cxcywh" && d.classCount == c.labels.count)
        #expect(d.boxes?.normalized == true && d.boxes?.layout == "nbk" && d.boxes?.scoresLayout == "nbc")
        #expect(d.nms == NMSSettings(iouThreshold: c.iou, confidenceThreshold: c.threshold, perClass: c.per_class, maxDetections: 100))
        let prep = try #require(model.metadata.image)
        #expect(prep.height == m.size && prep.width == m.size && prep.colorOrder == "rgb")
        #expect(abs(prep.scale - m.scale) < 1e-7 && prep.bias == [m.bias, m.bias, m.bias], "\(prep)")
        let (k, b) = (c.labels.count, c.boxes)
        let conf = try CoreMLFixtures.floats(c.confidence, shape: [3, b, k])
        let coords = try CoreMLFixtures.floats(c.coordinates, shape: [3, b, 4])
        let photos = try CoreMLFixtures.input(for: model)
        let size = Float(m.size), pixels = m.size * m.size * 3
        let engine = try Engine(model: model, threads: 1)
        let decoder = DetectionDecoder(config: d, inputWidth: m.size, inputHeight: m.size)
        let graph = try #require(model.metadata.graph)
        var scores = (got: [Float](), torch: [Float]()), corners = (got: [Float](), torch: [Float]()), kept = 0
        for photo in 0..<3 {
            let x = Tensor(shape: [1, m.size, m.size, 3], data: Array(photos.data[(photo * pixels)..<((photo + 1) * pixels)]))
            let out = try engine.run([graph.inputs[0].name: x], outputs: d.tensors)
            let candidates = try decoder.decode(out, item: 0, minScore: -1)
            try #require(candidates.count == b, "\(name) photo \(photo): \(candidates.count) candidates, torch has \(b) boxes")
            for (i, got) in candidates.enumerated() {
                let row = Array(conf.data[((photo * b + i) * k)..<((photo * b + i + 1) * k)])
                let best = try #require(row.indices.max { row[$0] < row[$1] || (row[$0] == row[$1] && $0 > $1) })
                let v = Array(coords.data[((photo * b + i) * 4)..<((photo * b + i + 1) * 4)])
                #expect(got.index == i && got.classIndex == best, "\(name) photo \(photo) box \(i): class \(got.classIndex), torch \(best)")
                scores.got.append(got.score)
                scores.torch.append(row[best])
                corners.got += [got.x1, got.y1, got.x2, got.y2]
                corners.torch += [v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2].map { $0 * size }
            }
            let selected = NonMaxSuppression.select(candidates, settings: d.nms)
            #expect(selected.map(\.index) == c.kept[photo], "\(name) photo \(photo): kept \(selected.map(\.index)), numpy kept \(c.kept[photo])")
            kept += selected.count
        }
        print("CoreMLImportTests: \(name) vs torch: max score error \(Closeness.ratio(scores.got, scores.torch, rtol: 1, atol: 1e-6)) (relative), "
              + "max corner error \(Closeness.ratio(corners.got, corners.torch, atol: Double(size))) of the input size; \(kept) boxes kept")
        assertClose(scores.got, scores.torch, rtol: 1e-4, atol: 1e-10, "\(name): scores")
        assertClose(corners.got, corners.torch, atol: 1e-4 * Double(size), "\(name): corners (1e-4 of the input size)")
        #expect(kept == c.kept.map(\.count).reduce(0, +) && kept > 0)
    }
}
