import MLToolCore
import MLToolData
import MLToolEngine

/// Settings of a detection run. Every `nil` takes the value recorded in the model (its `detection.nms`); these are
/// the only defaults.
public struct DetectorOptions: Sendable, Equatable {
    /// Boxes scoring at or below this are dropped (`--min-confidence`).
    public var minConfidence: Float?
    /// IoU above which the lower-scoring of two boxes is suppressed (`--iou`).
    public var iouThreshold: Float?
    /// At most this many boxes per photo (`--max-objects`).
    public var maxObjects: Int?
    /// Suppress only among boxes of one class; false: across classes.
    public var perClass: Bool?
    /// Engine threads; 0 uses every core.
    public var threads: Int

    public init(minConfidence: Float? = nil, iouThreshold: Float? = nil, maxObjects: Int? = nil, perClass: Bool? = nil,
                threads: Int = 0) {
        self.minConfidence = minConfidence; self.iouThreshold = iouThreshold; self.maxObjects = maxObjects
        self.perClass = perClass; self.threads = threads
    }

    /// The model's settings with these options applied; throws on values out of range.
    public func applied(to s: NMSSettings) throws -> NMSSettings {
        var out = s
        if let v = minConfidence {
            guard v >= 0, v <= 1 else { throw DetectError.invalidOption(what: "minimum confidence", value: "\(v)", expected: "a value in 0…1") }
            out.confidenceThreshold = v
        }
        if let v = iouThreshold {
            guard v >= 0, v <= 1 else { throw DetectError.invalidOption(what: "IoU threshold", value: "\(v)", expected: "a value in 0…1") }
            out.iouThreshold = v
        }
        if let v = maxObjects {
            guard v >= 1 else { throw DetectError.invalidOption(what: "maximum objects", value: "\(v)", expected: "at least 1") }
            out.maxDetections = v
        }
        if let v = perClass { out.perClass = v }
        return out
    }
}

/// Runs an object detector on photos: preprocess (the model's resize, letterbox or crop) → engine → decode → NMS →
/// boxes mapped back to the photo's pixels. The stages are public so that tools can stop after any of them.
///
///     let detector = try Detector(model: try ModelFile.read(path: "det.bin"))
///     for object in try detector.detect(photo) { print(object.label, object.confidence, object.box) }
public final class Detector: @unchecked Sendable {
    public let model: Model
    public let config: DetectionConfig
    /// The NMS settings in force: the model's with the options applied.
    public let settings: NMSSettings
    public let labels: [String]
    public let preprocessor: ImagePreprocessor
    public let decoder: DetectionDecoder
    private let engine: Engine
    private let inputName: String

    public init(model: Model, options: DetectorOptions = DetectorOptions()) throws {
        let name = model.metadata.name ?? "model"
        guard let config = model.metadata.detection else {
            throw DetectError.notADetector(model: name, task: model.metadata.task.rawValue)
        }
        guard let image = model.metadata.image else {
            throw DetectError.invalidOption(what: "\(name): image preprocessing", value: "none", expected: "the input size and scaling (import with --input-size)")
        }
        self.model = model
        self.config = config
        settings = try options.applied(to: config.nms)
        labels = model.metadata.labels.count == config.classCount ? model.metadata.labels
            : (0..<config.classCount).map { "class \($0)" }
        preprocessor = try ImagePreprocessor(image)
        decoder = DetectionDecoder(config: config, inputWidth: image.width, inputHeight: image.height)
        engine = try Engine(model: model, threads: options.threads)
        guard let input = engine.inputNames.first else { throw EngineError.noGraph }
        inputName = input
    }

    /// The objects in `image`, highest confidence first.
    public func detect(_ image: RGBImage) throws -> [DetectedObject] {
        try detect([image])[0]
    }

    /// The objects in each image (one engine run for the batch).
    public func detect(_ images: [RGBImage]) throws -> [[DetectedObject]] {
        if images.isEmpty { return [] }
        let outputs = try run(images)
        return try images.indices.map { i in
            let kept = NonMaxSuppression.select(try decoder.decode(outputs, item: i, minScore: settings.confidenceThreshold),
                                                settings: settings)
            return objects(kept, geometry: preprocessor.geometry(width: images[i].width, height: images[i].height))
        }
    }

    /// Stage 1–2: the graph outputs the decoder reads, for a batch of photos.
    public func run(_ images: [RGBImage]) throws -> [String: Tensor] {
        let count = preprocessor.elementCount
        var data = [Float](repeating: 0, count: try Checked.mul(images.count, count, what: "batch size"))
        try data.withUnsafeMutableBufferPointer { try preprocessor.processBatch(images, into: $0) }
        let shape = [images.count, preprocessor.config.height, preprocessor.config.width, preprocessor.channels]
        return try engine.run([inputName: Tensor(shape: shape, data: data)], outputs: config.tensors)
    }

    /// Stage 4–5: kept candidates (input pixels) as objects in the photo's pixels.
    public func objects(_ kept: [DetectionCandidate], geometry g: ImageGeometry) -> [DetectedObject] {
        kept.map { c in
            DetectedObject(label: labels[c.classIndex], classIndex: c.classIndex, confidence: Double(c.score),
                           box: g.toPhoto(c.box), imageWidth: g.width, imageHeight: g.height)
        }
    }
}
