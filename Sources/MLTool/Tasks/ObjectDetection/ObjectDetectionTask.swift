import Foundation
import MLToolCore
import MLToolData
import MLToolDetect
import MLToolFormat

/// Object detection (Create ML's `MLObjectDetector`, Vision's `VNRecognizedObjectObservation`): annotated photos in
/// Create ML JSON, Pascal VOC, YOLO txt or a CSV; a small anchor-free head per feature map of a frozen extractor.
public enum ObjectDetectionTask: TaskKind {
    public typealias Setup = TrainingSetup<ObjectDetectorParameters>
    public static let name = "detect"
    public static let title = "Object detection"
    public static var trainingHelp: String {
        let d = ObjectDetectorParameters()
        return """
        A Create ML folder (photos + one JSON file), a Pascal VOC folder (images/ + annotations/*.xml), YOLO txt
        (images/ + labels/ + classes.txt) or a CSV filename,width,height,class,xmin,ymin,xmax,ymax. Photos are
        letterboxed to \(d.inputSize)×\(d.inputSize); frozen EfficientNet-Lite0 feature maps at strides \(d.featureMaps.map { String($0.stride) }.joined(separator: " and ")) (cached) feed a small
        anchor-free head per map, trained with seeded augmentation (\(d.augmentedCopies) copies per photo); validation mAP@0.5 is
        printed per epoch.
        """
    }

    /// The options, in the order the recorded command lists them.
    public static let options: OptionTable<Setup> = {
        let d = ObjectDetectorParameters()
        typealias O = TaskOption<Setup>
        return OptionTable([
            TrainingOptions.out(\.name, default: "model"), TrainingOptions.test(),
            TrainingOptions.holdout(\.holdoutFraction, default: d.holdoutFraction),
            TrainingOptions.validation(\.validation), TrainingOptions.seed(\.seed, default: d.seed),
            O(OptionDeclaration("--extractor", value: "MODEL", help: "Feature extractor (default models/efficientnet-lite0.bin)."),
              set: { s, v in s.parameters.extractor = v }, record: { s in s.parameters.extractor.map { ["--extractor", $0] } ?? [] }),
            TrainingOptions.int(OptionDeclaration("--epochs", value: "N", help: "Head epochs (default \(d.epochs))."), \.epochs, default: d.epochs),
            O(OptionDeclaration("--augment", value: "none", help: "Turn off the augmentation (zoom, mirror, brightness, saturation; on by default)."),
              set: { s, v in
                guard v == "none" else {
                    throw OptionText.refuse("--augment", "a detector's augmentation (zoom, mirror, brightness, saturation) is on by default; --augment none turns it off")
                }
                s.parameters.augmentedCopies = 0
            }, record: { s in s.parameters.augmentedCopies == 0 ? ["--augment", "none"] : [] }),
            TrainingOptions.int(OptionDeclaration("--max-pixels", value: "N", help: "Refuse larger images (default \(d.maxPixels))."),
                                \.maxPixels, default: d.maxPixels, recorded: false),
            TrainingOptions.strict(\.strict),
            TrainingOptions.threads(\.threads),
            TrainingOptions.cache(\.cacheDirectory),
        ])
    }()

    /// `--min-confidence`, `--iou`, `--max-objects`, `--class-agnostic`: how a detector's boxes are kept
    /// (`mltool predict`, and `mltool import` of a detector).
    public static let boxOptions = [
        OptionDeclaration("--min-confidence", value: "F", kind: .number, help: "Detectors: drop boxes scoring at or below F (model's default)."),
        OptionDeclaration("--iou", value: "F", kind: .number, help: "Detectors: NMS IoU threshold (model's default)."),
        OptionDeclaration("--max-objects", value: "N", kind: .integer, help: "Detectors: at most N boxes per photo (model's default)."),
        OptionDeclaration("--class-agnostic", help: "Detectors: suppress overlapping boxes across classes."),
    ]

    /// The box options given (`boxOptions`), with `--threads`.
    public static func detectorOptions(_ v: OptionValues) throws -> DetectorOptions {
        DetectorOptions(minConfidence: try v.double("--min-confidence").map { Float($0) },
                        iouThreshold: try v.double("--iou").map { Float($0) },
                        maxObjects: try v.int("--max-objects"),
                        perClass: v.has("--class-agnostic") ? false : nil,
                        threads: try v.int("--threads") ?? 0)
    }

    public static var trainOptions: [OptionDeclaration] { options.declarations }
    public static let evaluationOptions = [
        OptionDeclaration("--min-confidence", value: "F", kind: .number, help: "Detectors: precision and recall at this confidence (model's default)."),
    ]
    public static var predictionOptions: [OptionDeclaration] {
        [OptionDeclaration("--draw", value: "OUT", help: "Detectors: write the photo with boxes drawn (PNG; a folder for several photos).")] + boxOptions
    }

    /// A folder or file with box annotations in one of the four formats.
    public static func recognizes(data: String, values: OptionValues) -> Bool { ObjectDetectorTrainer.looksLikeDetectionData(data) }

    public static func handles(model: Model) -> Bool { model.metadata.detection != nil }

    public static func train(_ request: TaskRequest) throws {
        var parameters = ObjectDetectorParameters()
        parameters.name = "model"   // the model is named after its file (model.bin by default)
        let setup = try Setup.reading(request, options, parameters: parameters), path = setup.data
        let trainer = ObjectDetectorTrainer(data: path, test: setup.test, parameters: setup.parameters)
        let r = try trainer.train(progress: request.progress, cancellation: request.cancellation)
        try r.write(to: setup.output)
        let heldOut = setup.test == nil ? "holdout" : "test"
        request.print("trained a detector for \(r.model.metadata.labels.count) classes on \(r.trainCount) photos (\(r.sampleCount) with augmented copies; \(r.validationCount) validation, \(r.holdoutCount) \(heldOut))")
        if let e = r.evaluation {
            request.print(String(format: "  mAP        @0.5 %.4f, @0.5:0.95 %.4f (%@)", e.mAP50, e.mAP50to95, heldOut))
        }
        if !r.skipped.isEmpty {
            let photos = r.skipped.filter { [.unreadableImage, .noBoxLeft, .unknownImage].contains($0.reason) }.count
            let boxes = r.skipped.reduce(0) { $0 + $1.boxes }
            request.print("  skipped    \(photos) photo\(photos == 1 ? "" : "s") and \(boxes) box\(boxes == 1 ? "" : "es") (named above)")
        }
        request.print(String(format: "  seconds    features %.1f (%d extracted), heads %.1f, total %.1f", r.featureSeconds, r.extractedCount,
                             r.fitSeconds, r.totalSeconds))
        request.print("  wrote      \(setup.output)")
    }

    public static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws {
        let v = request.values
        var p = DetectorEvaluator.Parameters()
        p.threads = try v.int("--threads") ?? p.threads
        p.skipMissing = v.has("--skip-missing")
        p.confidenceThreshold = try v.double("--min-confidence")
        let r = try DetectorEvaluator(modelPath: models[0], dataPath: data, parameters: p).run(progress: request.progress)
        try request.writeReport(r.writeReport(to:))
        let text = v.has("--json") ? try TaskOutput.json(r.evaluation) : r.text()
        request.print(text.hasSuffix("\n") ? String(text.dropLast()) : text)
    }

    /// Each photo's objects (label, confidence, box in pixels); `--draw` writes the photos with their boxes.
    public static func predict(_ request: TaskRequest, model: Model, modelPath: String, inputs: [String]) throws {
        let results = try ObjectDetection.detect(modelPath: modelPath, photos: inputs, options: try detectorOptions(request.values))
        for r in results {
            if request.values.has("--json") {
                request.print(try TaskOutput.json(r))
                continue
            }
            request.print("\(r.path): \(r.objects.count) object\(r.objects.count == 1 ? "" : "s") (\(r.width)×\(r.height))")
            for o in r.objects {
                request.print(String(format: "  %7.4f  %@  x %.1f y %.1f w %.1f h %.1f", o.confidence, o.label, o.box.x, o.box.y, o.box.width, o.box.height))
            }
        }
        guard let out = request.values.string("--draw") else { return }
        if results.count == 1 && !isDirectory(out) {
            try ObjectDetection.drawObjects(results[0], to: out)
            return
        }
        try AtomicFile.makeDirectory(out)
        for r in results {
            try ObjectDetection.drawObjects(r, to: out + "/" + URL(fileURLWithPath: r.path).deletingPathExtension().lastPathComponent + ".png")
        }
    }

    private static func isDirectory(_ path: String) -> Bool {
        var d: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &d) && d.boolValue
    }
}
