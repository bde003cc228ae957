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

/// Training an object detector from annotated photos (Create ML JSON, Pascal VOC, YOLO txt, CSV). Not yet
/// supported: the annotations are read and checked (so their errors and skips are real), then `train` throws
/// `PipelineError.notSupported` naming what is missing.
public struct ObjectDetectorTrainer: Sendable {
    /// What is missing, in the error users see.
    public static let missing = "training an object detector (the detector head on frozen EfficientNet-Lite0 feature "
        + "maps, with augmentation, a recorded holdout and validation mAP per epoch, is not implemented yet); "
        + "import a trained YOLO or SSD ONNX detector with ModelImport and ImportOptions.detection instead"

    public var data: String
    public var test: String?

    public init(data: String, test: String? = nil) {
        self.data = data; self.test = test
    }

    /// Reads the annotations (throwing their errors), then throws `PipelineError.notSupported`.
    public func train() throws -> Model {
        for path in [data] + (test.map { [$0] } ?? []) {
            guard FileManager.default.fileExists(atPath: path) else { throw PipelineError.missingInput(file: path, reason: "no such file or folder") }
            _ = try DetectionDataset.load(path)
        }
        throw PipelineError.notSupported(Self.missing)
    }
}
