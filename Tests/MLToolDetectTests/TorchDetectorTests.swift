import Foundation
import MLToolCore
import MLToolData
import MLToolDetect
import MLToolEngine
import MLToolFormat
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// The two detectors PyTorch trained and exported (Tests/Fixtures/detect/make_detect_fixtures.py): imported, every
/// output equals torch's on the fixture input, and the detector's boxes on the test photos equal the oracle's
/// (onnxruntime + numpy decode + NMS) through both the decoded output and the raw heads.
@Suite struct TorchDetectorTests {
    static let models = ["tiny_yolov3", "tiny_yolov8"]

    @Test(arguments: models)
    func outputsMatchTorch(_ name: String) throws {
        let m = try DetectFixtures.manifest()
        let entry = try #require(m.models.first { $0.model == name + ".onnx" })
        let model = try DetectFixtures.importDetector(name, raw: false)
        let graph = try #require(model.metadata.graph)
        // Split and Slice became real slices, upsampling a resize, the anchor grid folded to constants.
        #expect(graph.nodes.contains { $0.op == .resize })
        #expect(graph.nodes.contains { $0.op == .slice })
        #expect(!graph.nodes.contains { $0.op == .matMul }, "\(name): a gather left as a one-hot product")
        let engine = try Engine(model: model, threads: 2)
        let x = DetectFixtures.toNHWC(try DetectFixtures.load(entry.input))
        let got = try engine.run([entry.input.name: x], outputs: entry.outputs.map(\.name))
        for o in entry.outputs {
            let want = DetectFixtures.toNHWC(try DetectFixtures.load(o))
            let g = try #require(got[o.name])
            #expect(g.shape == want.shape, "\(name) \(o.name)")
            assertClose(g.data, want.data, rtol: 1e-4, atol: 1e-4, "\(name) \(o.name)")
        }
        // The model file keeps the detection settings.
        let read = try ModelFile.read(bytes: try ModelFile.serialize(model), name: name)
        #expect(read.metadata.task == .objectDetector)
        #expect(read.metadata.detection == model.metadata.detection)
    }

    @Test(arguments: models)
    func boxesMatchTheOracle(_ name: String) throws {
        let m = try DetectFixtures.manifest()
        let photos = m.photos.map { DetectFixtures.path($0.file) }
        var found = 0
        for raw in [false, true] {
            let model = try DetectFixtures.importDetector(name, raw: raw)
            let detector = try Detector(model: model, options: DetectorOptions(threads: 1))
            let config = DetectFixtures.config(name, raw: raw, manifest: m)
            let request = try DetectOracle.request(model: DetectFixtures.path(name + ".onnx"), input: "images", config: config,
                                                   image: try #require(model.metadata.image), photos: photos)
            guard let oracle = try DetectOracle.run(request) else { return }
            for (i, path) in photos.enumerated() {
                let objects = try detector.detect(try DetectFixtures.photo(path))
                let (iou, conf) = DetectOracle.compare(objects, oracle.photos[i], "\(name) raw=\(raw) \(path)")
                print("\(name) \(raw ? "raw heads" : "decoded output") \((path as NSString).lastPathComponent): \(objects.count) objects, worst IoU \(iou), worst confidence difference \(conf)")
                found += objects.count
            }
        }
        // Trained detectors: 2 + 3 + 1 + 2 objects are drawn, 16 over both decoder kinds; each model reports 18 (the
        // oracle's same boxes, two of them extra), measured on a 2-core AVX2 machine (December 2026): exactly that.
        print("TorchDetectorTests: \(name): \(found) objects on 4 photos × 2 decoders")
        #expect(found == 18, "\(name): \(found) objects on 4 photos × 2 decoders, measured 18 (16 drawn)")
    }

    /// The synthetic photos' own boxes: the trained tiny YOLOv8 finds every one of them (IoU ≥ 0.5, right class).
    @Test func tinyYOLOv8FindsTheDrawnObjects() throws {
        let url = URL(fileURLWithPath: DetectFixtures.path("manifest.json"))
        let raw = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        let photos = try #require(raw?["photos"] as? [[String: Any]])
        let detector = try Detector(model: try DetectFixtures.importDetector("tiny_yolov8", raw: false))
        var hits = 0, total = 0
        for p in photos {
            let objects = try detector.detect(try DetectFixtures.photo(DetectFixtures.path(p["file"] as? String ?? "")))
            for b in p["boxes"] as? [[Any]] ?? [] {
                total += 1
                let label = b[0] as? String ?? ""
                let v = b.dropFirst().compactMap { ($0 as? NSNumber)?.doubleValue }
                let truth = BoundingBox(x1: v[0], y1: v[1], x2: v[2], y2: v[3])
                if objects.contains(where: { $0.label == label && $0.box.iou(truth) >= 0.5 }) { hits += 1 }
            }
        }
        print("TorchDetectorTests: tiny_yolov8 found \(hits) of \(total) drawn objects")
        #expect(total == 8)
        #expect(hits == total, "found \(hits) of \(total) drawn objects")
    }
}
