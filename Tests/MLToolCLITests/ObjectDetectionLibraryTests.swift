import Foundation
import MLTool
import Testing

/// The library's detection flow (`Sources/MLTool/Detection/`): training reads and checks the annotations, then says
/// plainly that it is not supported yet; running a detector names a missing photo.
@Suite struct ObjectDetectionLibraryTests {
    @Test func trainingReadsTheAnnotationsThenIsNotSupported() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Data(Make.png(width: 40, height: 30, rgb: (200, 20, 20), noiseSeed: 1)).write(to: URL(fileURLWithPath: dir.file("a.png")))
        try Data(#"[{"image": "a.png", "annotations": [{"label": "red", "coordinates": {"x": 20, "y": 15, "width": 10, "height": 6}}]}]"#.utf8)
            .write(to: URL(fileURLWithPath: dir.file("annotations.json")))
        #expect(throws: PipelineError.notSupported(ObjectDetectorTrainer.missing)) {
            try ObjectDetectorTrainer(data: dir.path).train()
        }
        #expect(throws: PipelineError.missingInput(file: dir.file("test"), reason: "no such file or folder")) {
            try ObjectDetectorTrainer(data: dir.path, test: dir.file("test")).train()
        }
        let e = PipelineError.notSupported(ObjectDetectorTrainer.missing)
        #expect(e.description.hasPrefix("not yet supported: training an object detector"))
    }

    @Test func detectNamesAMissingFile() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        #expect(throws: PipelineError.missingInput(file: dir.file("none.bin"), reason: "no such file")) {
            try ObjectDetection.detect(modelPath: dir.file("none.bin"), photos: [])
        }
    }
}
