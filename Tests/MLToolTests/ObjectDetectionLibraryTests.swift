import Foundation
import MLToolTestSupport
import MLTool
import Testing

/// The library's detection flow (`Sources/MLTool/Tasks/ObjectDetection/`): a missing test folder is named; running a detector
/// names a missing photo.
@Suite struct ObjectDetectionLibraryTests {
    @Test func trainingNamesAMissingTestFolder() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Data(TestPNG.solid(width: 40, height: 30, rgb: (200, 20, 20), noiseSeed: 1)).write(to: URL(fileURLWithPath: dir.file("a.png")))
        try Data(#"[{"image": "a.png", "annotations": [{"label": "red", "coordinates": {"x": 20, "y": 15, "width": 10, "height": 6}}]}]"#.utf8)
            .write(to: URL(fileURLWithPath: dir.file("annotations.json")))
        #expect(throws: PipelineError.missingInput(file: dir.file("test"), reason: "no such file or folder")) {
            try ObjectDetectorTrainer(data: dir.path, test: dir.file("test")).train()
        }
    }

    @Test func detectNamesAMissingFile() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        #expect(throws: PipelineError.missingInput(file: dir.file("none.bin"), reason: "no such file")) {
            try ObjectDetection.detect(modelPath: dir.file("none.bin"), photos: [])
        }
    }
}

/// The tiny YOLOv3-style fixture (Tests/Fixtures/detect, made by PyTorch) imported through the library, written,
/// summarised and run on a fixture photo; TorchDetectorTests check the same boxes against onnxruntime.
@Suite struct ObjectDetectionFlowTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/detect").path

    @Test func importSummariseAndDetect() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let detection = DetectionConfig.boxes(classes: 2, tensor: "boxes", layout: "nbk", objectness: true, nms: NMSSettings())
        let model = try ModelImport.importModel(path: Self.fixtures + "/tiny_yolov3.onnx", options: ImportOptions(
            image: .yolo(size: 96), labels: ["square", "disk"], inputSize: (96, 96), detection: detection))
        try ModelFile.write(model, to: dir.file("det.bin"))
        let text = try ModelSummary(path: dir.file("det.bin")).text(path: "det.bin")
        #expect(text.contains("  task          objectDetector"))
        #expect(text.contains("                resize letterbox, crop none, pad 114.0\n"), "\(text)")
        #expect(text.contains("  detection     boxes (cxcywh), 2 classes\n"), "\(text)")
        #expect(text.contains("  nms           IoU 0.45, confidence 0.25, per class, at most 100\n"), "\(text)")
        let found = try ObjectDetection.detect(modelPath: dir.file("det.bin"), photos: [Self.fixtures + "/test0.png"],
                                               options: DetectorOptions(threads: 1))
        #expect(found.count == 1 && found[0].objects.count == 2, "\(found.first?.objects ?? [])")
        #expect(found[0].objects.allSatisfy { $0.confidence > 0.25 && $0.box.maxX <= 96 && $0.normalizedBox.maxX <= 1 })
        #expect(throws: PipelineError.missingInput(file: dir.file("none.png"), reason: "no such file")) {
            try ObjectDetection.detect(modelPath: dir.file("det.bin"), photos: [dir.file("none.png")])
        }
    }
}
