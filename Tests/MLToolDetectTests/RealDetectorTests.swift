import Foundation
import MLToolCore
import MLToolData
import MLToolDetect
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// A real detector from a PyPI wheel: YOLOv8n `320n.onnx` inside `nudenet` (an Ultralytics export: dynamic batch and
/// size, the anchor grid as shape arithmetic, DFL head decoded in the graph; AGPL-3.0, used as a test input that
/// pip fetches, never committed). On real photos (the raccoon set, scikit-image's astronaut and coffee) its boxes
/// equal the oracle's: onnxruntime on the same letterboxed input, numpy decode + NMS.
@Suite struct RealDetectorTests {
    /// `relative` inside the installed Python package `module` (found without importing it), or nil.
    static func pythonPackagePath(_ module: String, _ relative: String) -> String? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import importlib.util, os; s = importlib.util.find_spec('\(module)'); "
                       + "print(os.path.join(list(s.submodule_search_locations)[0], '\(relative)') if s else '')"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return nil }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return !path.isEmpty && FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// 320n.onnx in the installed nudenet package, or nil.
    static let modelPath = pythonPackagePath("nudenet", "320n.onnx")

    /// scikit-image's data folder (astronaut.png, coffee.png), or nil.
    static let skimageData = pythonPackagePath("skimage", "data")

    static let raccoonImages = (SharedDatasets.raccoon ?? "<raccoon set not found: set RACCOON_DIR>") + "/images"

    /// The 18 classes of the model, in output order (from its metadata, `names`).
    static let labels = ["FEMALE_GENITALIA_COVERED", "FACE_FEMALE", "BUTTOCKS_EXPOSED", "FEMALE_BREAST_EXPOSED",
                         "FEMALE_GENITALIA_EXPOSED", "MALE_BREAST_EXPOSED", "ANUS_EXPOSED", "FEET_EXPOSED", "BELLY_COVERED",
                         "FEET_COVERED", "ARMPITS_COVERED", "ARMPITS_EXPOSED", "FACE_MALE", "BELLY_EXPOSED",
                         "MALE_GENITALIA_EXPOSED", "ANUS_COVERED", "FEMALE_BREAST_COVERED", "BUTTOCKS_COVERED"]

    static func importYOLOv8n(_ path: String, nms: NMSSettings) throws -> Model {
        try ONNXImporter.importModel(path: path, options: ImportOptions(
            image: .yolo(size: 320), labels: labels, inputSize: (320, 320),
            detection: .boxes(classes: labels.count, tensor: "output0", layout: "nkb", nms: nms)))
    }

    @Test func yolov8nFromNudenetMatchesOnnxRuntime() throws {
        guard let path = Self.modelPath else {
            DetectOracle.skip("RealDetectorTests: pip package nudenet (320n.onnx) is not installed (make setup)")
            return
        }
        var photos: [String] = []
        if let d = Self.skimageData { photos += ["astronaut.png", "coffee.png"].map { d + "/" + $0 } }
        if let names = try? FileManager.default.contentsOfDirectory(atPath: Self.raccoonImages) {
            photos += names.filter { $0.hasSuffix(".jpg") }.sorted().prefix(6).map { Self.raccoonImages + "/" + $0 }
        }
        photos = photos.filter { FileManager.default.fileExists(atPath: $0) }
        guard photos.count >= 4 else {
            DetectOracle.skip("RealDetectorTests: photos missing (scikit-image data, \(Self.raccoonImages))")
            return
        }
        // A low threshold so that every photo has boxes to compare (this model finds faces and feet on these).
        let nms = NMSSettings(iouThreshold: 0.45, confidenceThreshold: 0.05, perClass: true, maxDetections: 100)
        let model = try Self.importYOLOv8n(path, nms: nms)
        let graph = try #require(model.metadata.graph)
        #expect(graph.inputs.first?.shape == [-1, 320, 320, 3])
        #expect(graph.nodes.contains { $0.op == .resize } && graph.nodes.contains { $0.op == .slice })
        let detector = try Detector(model: model, options: DetectorOptions(threads: 2))
        let request = try DetectOracle.request(model: path, input: "images", config: try #require(model.metadata.detection),
                                               image: try #require(model.metadata.image), photos: photos)
        guard let oracle = try DetectOracle.run(request) else { return }
        var total = 0
        for (i, photo) in photos.enumerated() {
            let objects = try detector.detect(try ImageDecoder.decode(path: photo))
            let (iou, conf) = DetectOracle.compare(objects, oracle.photos[i], (photo as NSString).lastPathComponent)
            print("YOLOv8n 320 \((photo as NSString).lastPathComponent): \(objects.count) objects (oracle \(oracle.photos[i].count)), "
                  + "worst IoU \(iou), worst confidence difference \(conf)")
            total += objects.count
        }
        #expect(total >= photos.count, "only \(total) objects on \(photos.count) photos")
    }
}
