import Foundation
import MLToolCore
import MLToolData
import MLToolDetect
import MLToolEval
import MLToolFormat

/// Evaluates an object detector on the holdout recorded in it (photos re-hashed, boxes from the manifest) or on
/// annotated photos (Create ML JSON, Pascal VOC, YOLO txt, CSV): mAP@0.5, mAP@0.5:0.95 (COCO's definition, equal to
/// pycocotools'), AP per class, and precision / recall at a confidence threshold.
public struct DetectorEvaluator: Sendable {
    public struct Parameters: Sendable {
        /// Engine threads (0: all cores).
        public var threads = 0
        /// Detections above this count for mAP (the curve needs the low-scoring ones).
        public var minConfidence: Float = 0.001
        /// Precision and recall are reported at this confidence (nil: the model's NMS confidence threshold).
        public var confidenceThreshold: Double?
        /// Evaluate on the recorded holdout photos that remain when some are missing (else: an error).
        public var skipMissing = false
        public init() {}
    }

    /// What an evaluation found.
    public struct Outcome: Sendable {
        public var model: Model
        public var modelPath: String
        public var evaluation: DetectionEvaluation
        /// "recorded holdout" or the data path.
        public var source: String
        /// Per photo: its path, true boxes and the detections counted for mAP.
        public var photos: [(path: String, truth: [ObjectAnnotation], found: [DetectedObject])]
        /// Recorded holdout photos that could not be used (with `skipMissing`).
        public var problems: [String]

        /// The metrics as text: headline, then one line per class.
        public func text() -> String {
            let e = evaluation
            var s = "\(modelPath) on \(source): \(e.images) photos, \(e.perClass.count) classes\n"
            s += String(format: "  mAP@0.5       %.4f\n  mAP@0.5:0.95  %.4f\n", e.mAP50, e.mAP50to95)
            s += String(format: "  precision     %.4f   recall %.4f   (confidence ≥ %.2f, IoU ≥ 0.5)\n", e.precision, e.recall, e.confidenceThreshold)
            s += "  class                  AP@0.5  AP@.5:.95  precision  recall  boxes  detections\n"
            func f(_ v: Double?) -> String { v.map { String(format: "%.4f", $0) } ?? "     -" }
            for c in e.perClass {
                let name = c.label.count > 20 ? String(c.label.prefix(19)) + "…" : c.label
                s += "  " + name.padding(toLength: 20, withPad: " ", startingAt: 0)
                s += "  \(f(c.ap50))     \(f(c.ap50to95))     \(f(c.precision))  \(f(c.recall))  " + String(format: "%5d  %10d\n", c.groundTruth, c.detections)
            }
            return s
        }

        /// Writes the HTML report: metrics, PR curve per class, the photos drawn worst first.
        public func writeReport(to path: String) throws {
            let threshold = evaluation.confidenceThreshold
            var shown: [(DetectionReport.Photo, Double)] = []
            for (file, truth, found) in photos {
                let kept = found.filter { $0.confidence >= threshold }
                let (matched, meanIoU) = Self.match(truth, kept)
                var png: [UInt8] = []
                if let image = try? ImageDecoder.decode(path: file) {
                    let scale = Double(min(400, max(image.width, image.height))) / Double(max(image.width, image.height, 1))
                    let small = image.thumbnail(maxSide: 400)
                    func scaled(_ b: BoundingBox) -> BoundingBox {
                        BoundingBox(x: b.x * scale, y: b.y * scale, width: b.width * scale, height: b.height * scale)
                    }
                    var drawn = BoxDrawing.drawTruth(truth.map { scaled($0.box) }, on: small)
                    drawn = BoxDrawing.draw(kept.map { (scaled($0.box), $0.classIndex, "\($0.label) " + String(format: "%.2f", $0.confidence)) }, on: drawn)
                    png = (try? PNGEncoder.encode(drawn, name: file)) ?? []
                }
                let photo = DetectionReport.Photo(path: file, png: png, truth: truth.count, matched: matched, falsePositives: kept.count - matched)
                shown.append((photo, meanIoU))
            }
            // Worst first: most errors (missed + false), then the lowest mean IoU of the matched boxes, then path.
            shown.sort { a, b in
                let ea = a.0.truth - a.0.matched + a.0.falsePositives, eb = b.0.truth - b.0.matched + b.0.falsePositives
                if ea != eb { return ea > eb }
                if a.1 != b.1 { return a.1 < b.1 }
                return a.0.path < b.0.path
            }
            let report = DetectionReport(model: HTMLReport.ModelInfo(path: modelPath, model: model), evaluation: evaluation,
                                         dataSource: source, photos: shown.map(\.0))
            try report.write(to: path, inputs: [modelPath] + photos.map(\.path))
        }

        /// Greedy IoU ≥ 0.5 matching of `found` (highest confidence first) to same-label true boxes: the count and
        /// the mean IoU of the matches (1 when there is nothing to match).
        static func match(_ truth: [ObjectAnnotation], _ found: [DetectedObject]) -> (Int, Double) {
            var used = [Bool](repeating: false, count: truth.count)
            var matched = 0, total = 0.0
            for d in found.sorted(by: { $0.confidence > $1.confidence }) {
                var best = -1, bestIoU = 0.5
                for (i, t) in truth.enumerated() where !used[i] && t.label == d.label {
                    let v = t.box.iou(d.box)
                    if v >= bestIoU { best = i; bestIoU = v }
                }
                if best >= 0 { used[best] = true; matched += 1; total += bestIoU }
            }
            return (matched, matched == 0 ? (truth.isEmpty ? 1 : 0) : total / Double(matched))
        }
    }

    public var modelPath: String
    public var dataPath: String?
    public var parameters: Parameters

    public init(modelPath: String, dataPath: String? = nil, parameters: Parameters = .init()) {
        self.modelPath = modelPath; self.dataPath = dataPath; self.parameters = parameters
    }

    /// Whether the model at `path` is an object detector.
    public static func isDetector(_ model: Model) -> Bool { model.metadata.detection != nil }

    /// A detector's recorded holdout: its photos (re-hashed) with the boxes the manifest records, and the photos
    /// that cannot be used (an error unless `skipMissing` and some remain).
    public static func recordedHoldout(_ model: Model, modelPath: String, skipMissing: Bool) throws -> (photos: [AnnotatedImage], problems: [String]) {
        guard let split = model.metadata.split, !split.holdout.isEmpty else {
            throw PipelineError.badInput(file: modelPath, reason: "records no holdout; give annotated DATA to evaluate on")
        }
        var photos: [AnnotatedImage] = [], problems: [String] = []
        let resolver = HoldoutResolver(root: split.root)
        for (i, item) in split.holdout.enumerated() {
            let objects = try ObjectDetection.holdoutObjects(item.label, file: modelPath, item: i)
            switch try resolver.resolve(SplitManifest.Item(path: item.path, label: "", sha256: item.sha256)) {
            case .item(let resolved): photos.append(AnnotatedImage(path: resolved.path, width: 0, height: 0, objects: objects))
            case .problem(let p): problems.append(p)
            }
        }
        if let first = problems.first, !skipMissing || photos.isEmpty {
            throw PipelineError.badInput(file: modelPath, reason: "\(problems.count) of \(split.holdout.count) recorded holdout photos cannot be used (first: \(first)); pass --skip-missing to evaluate on the rest, or give DATA")
        }
        return (photos, problems)
    }

    /// The metrics of `model` on `photos` and the detections counted (what `run` and the trainer's holdout use).
    public static func evaluate(model: Model, photos: [AnnotatedImage], parameters: Parameters,
                                emit: (PipelineEvent) -> Void = { _ in }) throws -> (DetectionEvaluation, [[DetectedObject]]) {
        guard let config = model.metadata.detection else {
            throw PipelineError.badInput(file: model.metadata.name ?? "model", reason: "not an object detector")
        }
        let detector = try Detector(model: model, options: DetectorOptions(minConfidence: parameters.minConfidence, threads: parameters.threads))
        var found: [[DetectedObject]] = []
        for p in photos {
            found.append(try detector.detect(try ImageDecoder.decode(path: p.path)))
            emit(.progress(label: "evaluating", advanced: 1, total: photos.count))
        }
        emit(.progressFinished(label: "evaluating"))
        let evaluation = DetectionMetrics.evaluate(truth: photos.map(\.objects), detections: found.map { $0.map(\.detection) },
                                                   labels: detector.labels,
                                                   confidenceThreshold: parameters.confidenceThreshold ?? Double(config.nms.confidenceThreshold),
                                                   maxDetections: config.nms.maxDetections)
        return (evaluation, found)
    }

    public func run(progress: ((PipelineEvent) -> Void)? = nil) throws -> Outcome {
        let emit = progress ?? { _ in }
        let model = try ModelLoader.load(modelPath)
        guard model.metadata.detection != nil else {
            throw PipelineError.badInput(file: modelPath, reason: "not an object detector (task \(model.metadata.task.rawValue))")
        }
        var photos: [AnnotatedImage] = []
        var problems: [String] = []
        let source: String
        if let dataPath {
            guard FileManager.default.fileExists(atPath: dataPath) else { throw PipelineError.missingInput(file: dataPath, reason: "no such file or folder") }
            let workers = parameters.threads > 0 ? parameters.threads : max(1, ProcessInfo.processInfo.activeProcessorCount)
            let data = try DetectionDataset.load(dataPath).droppingUnreadablePhotos(maxPixels: ImageDecoder.defaultMaxPixels, workers: workers)
            try data.checkSkipped()
            for s in data.skipped { emit(.warning(s.description)) }
            photos = data.images
            source = dataPath
        } else {
            let holdout = try Self.recordedHoldout(model, modelPath: modelPath, skipMissing: parameters.skipMissing)
            photos = holdout.photos
            problems = holdout.problems
            if let first = problems.first { emit(.warning("\(problems.count) recorded holdout photos skipped (first: \(first))")) }
            source = "recorded holdout"
        }
        let (evaluation, found) = try Self.evaluate(model: model, photos: photos, parameters: parameters, emit: emit)
        return Outcome(model: model, modelPath: modelPath, evaluation: evaluation, source: source,
                       photos: zip(photos, found).map { ($0.path, $0.objects, $1) }, problems: problems)
    }
}
