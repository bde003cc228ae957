import Foundation
import MLToolCore
import MLToolData
import MLToolDetect
import MLToolFormat

/// Object detection as library calls (issue 17): a detector — trained by `ObjectDetectorTrainer` or imported with
/// `ModelImport.importModel` and `ImportOptions.detection` (docs/FORMAT.md 4.4) — run on photo files.
///
///     let found = try ObjectDetection.detect(modelPath: "det.bin", photos: ["street.jpg"])
///     for object in found[0].objects { print(object.label, object.confidence, object.box) }
public enum ObjectDetection {
    /// The objects of one photo, highest confidence first; boxes in the photo's pixels (origin top-left), and in
    /// Vision's normalised coordinates (origin bottom-left) as `normalizedBox`.
    public struct PhotoResult: Sendable, Codable, Equatable {
        public var path: String
        /// The photo's size in pixels (after its EXIF orientation).
        public var width: Int
        public var height: Int
        public var objects: [DetectedObject]
    }

    /// Runs the detector stored at `modelPath` on each photo, in the order given. `options` overrides the NMS
    /// settings recorded in the model.
    public static func detect(modelPath: String, photos: [String], options: DetectorOptions = DetectorOptions()) throws -> [PhotoResult] {
        for path in [modelPath] + photos where !FileManager.default.fileExists(atPath: path) {
            throw PipelineError.missingInput(file: path, reason: "no such file")
        }
        let detector = try Detector(model: try ModelFile.read(path: modelPath), options: options)
        return try photos.map { try detect(detector, photo: $0) }
    }

    /// The objects `detector` finds in the photo at `path`.
    public static func detect(_ detector: Detector, photo path: String) throws -> PhotoResult {
        let image = try ImageDecoder.decode(path: path)
        return PhotoResult(path: path, width: image.width, height: image.height, objects: try detector.detect(image))
    }

    /// Writes the photo of `result` with its objects drawn (outline and "label 0.87" per object) as a PNG to `path`,
    /// atomically, never over the photo itself.
    public static func drawObjects(_ result: PhotoResult, to path: String) throws {
        let image = try ImageDecoder.decode(path: result.path)
        let png = try PNGEncoder.encode(BoxDrawing.draw(result.objects, on: image), name: path)
        try AtomicFile.write(png, to: path, inputs: [result.path])
    }

    /// The boxes of a detector's holdout photo as recorded in its split manifest (docs/FORMAT.md 4.4: the item's
    /// `label` is a JSON array of {"label", "x", "y", "width", "height"}, photo pixels, origin top-left).
    public static func holdoutLabel(_ objects: [ObjectAnnotation]) -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let rows = objects.map { RecordedBox(label: $0.label, x: $0.box.x, y: $0.box.y, width: $0.box.width, height: $0.box.height) }
        return String(decoding: (try? e.encode(rows)) ?? Data("[]".utf8), as: UTF8.self)
    }

    /// The boxes recorded by `holdoutLabel`; `file` and `item` name the place in errors.
    public static func holdoutObjects(_ label: String, file: String, item: Int) throws -> [ObjectAnnotation] {
        guard let rows = try? JSONDecoder().decode([RecordedBox].self, from: Data(label.utf8)) else {
            throw PipelineError.badInput(file: file, reason: "split.holdout[\(item)].label: expected a JSON array of boxes {label, x, y, width, height}")
        }
        for (i, r) in rows.enumerated() where !([r.x, r.y, r.width, r.height].allSatisfy(\.isFinite) && r.width > 0 && r.height > 0) {
            throw PipelineError.badInput(file: file, reason: "split.holdout[\(item)].label[\(i)]: a box needs finite coordinates and a positive width and height")
        }
        return rows.map { ObjectAnnotation(label: $0.label, box: BoundingBox(x: $0.x, y: $0.y, width: $0.width, height: $0.height)) }
    }

    struct RecordedBox: Codable {
        var label: String
        var x: Double, y: Double, width: Double, height: Double
    }
}
