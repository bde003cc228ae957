import Foundation
import MLToolCore
import MLToolData
import MLToolDetect
import MLToolFormat

/// Object detection as one library call (issue 17): an imported detector (`ModelImport.importModel` with
/// `ImportOptions.detection`, docs/FORMAT.md 4.4) run on photo files.
///
///     let found = try ObjectDetection.detect(modelPath: "yolo.bin", photos: ["street.jpg"])
///     for object in found[0].objects { print(object.label, object.confidence, object.box) }
public enum ObjectDetection {
    /// The objects of one photo, highest confidence first; boxes in the photo's pixels (origin top-left).
    public struct PhotoResult: Sendable {
        public var path: String
        public var objects: [DetectedObject]
    }

    /// Runs the detector stored at `modelPath` on each photo, in the order given. `options` overrides the NMS
    /// settings recorded in the model.
    public static func detect(modelPath: String, photos: [String], options: DetectorOptions = DetectorOptions()) throws -> [PhotoResult] {
        for path in [modelPath] + photos where !FileManager.default.fileExists(atPath: path) {
            throw PipelineError.missingInput(file: path, reason: "no such file")
        }
        let detector = try Detector(model: try ModelFile.read(path: modelPath), options: options)
        return try photos.map { PhotoResult(path: $0, objects: try detector.detect(try ImageDecoder.decode(path: $0))) }
    }
}
