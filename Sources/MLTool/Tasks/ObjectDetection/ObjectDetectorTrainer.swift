import Foundation
import MLToolCore
import MLToolData
import MLToolDetect
import MLToolEngine
import MLToolEval
import MLToolFormat
import MLToolTrain

/// One epoch of detector training, as progress.
public struct DetectorEpochRecord: Sendable, Equatable {
    /// 1-based.
    public var epoch: Int
    public var epochs: Int
    /// Focal loss on the classes and GIoU loss on the boxes, per positive cell, summed over the epoch's steps.
    public var classLoss: Double
    public var boxLoss: Double
    /// mAP@0.5 on the validation photos after this epoch (nil without validation photos).
    public var validationMAP50: Double?
    /// Seconds since the fit began (not deterministic: keep it out of model files).
    public var elapsed: Double
}

/// A trained detector and what its training measured.
public struct ObjectDetectorTrainingResult: Sendable {
    public var model: Model
    /// On the test data, or on the recorded holdout when none was given (nil when there is neither).
    public var evaluation: DetectionEvaluation?
    public var trainCount: Int
    public var validationCount: Int
    public var holdoutCount: Int
    /// Feature maps computed now (the rest came from the cache), training samples including augmented copies.
    public var extractedCount: Int
    public var sampleCount: Int
    public var featureSeconds: Double
    public var fitSeconds: Double
    public var totalSeconds: Double
    /// mAP@0.5 on the validation photos after the last epoch.
    public var validationMAP50: Double?
    /// Annotations skipped while reading (named, with the reason).
    public var skipped: [AnnotationSkip]
    /// The files the model was made from: writing the model over one of them is refused.
    public var inputs: [String]

    /// Writes the model to `path` atomically (never over one of its inputs).
    public func write(to path: String) throws {
        try ModelFile.write(model, to: path, inputs: inputs)
    }
}

/// Trains an object detector from annotated photos by transfer learning — Create ML's Object Detector for Linux.
///
/// The photo is letterboxed to `inputSize`; a frozen extractor (EfficientNet-Lite0) gives feature maps at two
/// strides (cached by content, so a second run extracts nothing); a small head per map (`DetectorHead`: two 1×1
/// convolutions, anchor-free boxes as distances from the cell centre, FCOS-style centre assignment, focal + GIoU
/// loss) is trained by Adam on the photos and seeded augmented copies (zoom, mirror, brightness, saturation). The
/// model is the extractor's graph up to those maps plus the heads, with the decoder and NMS settings of
/// docs/FORMAT.md 4.4, so `predict`, `eval`, `quantize` and `export` treat it as any imported detector.
///
/// Stages: read annotations → split (seeded holdout, recorded) → extract → fit (validation mAP per epoch) →
/// assemble → evaluate. The same data, seed and thread count give the same model bytes.
public struct ObjectDetectorTrainer: Sendable {
    /// Annotated photos: a Create ML folder (photos + one JSON), a Pascal VOC folder, YOLO txt, or a CSV.
    public var data: String
    /// Test photos, annotated the same ways (instead of a holdout of `data`).
    public var test: String?
    public var parameters: ObjectDetectorParameters

    public init(data: String, test: String? = nil, parameters: ObjectDetectorParameters = .init()) {
        self.data = data; self.test = test; self.parameters = parameters
    }

    /// Whether `path` holds detection annotations rather than label folders or a table of labels.
    public static func looksLikeDetectionData(_ path: String) -> Bool {
        DetectionDataset.looksLikeAnnotations(path)
    }

    /// Trains and evaluates; `cancellation` stops it between chunks of photos and between training steps
    /// (`CancellationError`, nothing written).
    public func train(progress: ((PipelineEvent) -> Void)? = nil,
                      cancellation: Cancellation = Cancellation()) throws -> ObjectDetectorTrainingResult {
        let started = DispatchTime.now().uptimeNanoseconds
        let emit = progress ?? { _ in }
        let p = parameters
        try p.validate()
        try cancellation.check()
        for path in [data] + (test.map { [$0] } ?? []) where !FileManager.default.fileExists(atPath: path) {
            throw PipelineError.missingInput(file: path, reason: "no such file or folder")
        }
        // Photos that cannot be decoded are found before the split, so the recorded holdout never holds one.
        let workers = p.threads > 0 ? p.threads : max(1, ProcessInfo.processInfo.activeProcessorCount)
        func readable(_ path: String) throws -> DetectionDataset {
            try DetectionDataset.load(path).droppingUnreadablePhotos(maxPixels: p.maxPixels, workers: workers, strict: p.strict)
        }
        let dataset = try readable(data)
        try dataset.checkSkipped()
        let testSet = try test.map(readable)
        try testSet?.checkSkipped()
        let skipped = dataset.skipped + (testSet?.skipped ?? [])
        for s in skipped { emit(.warning(s.description)) }
        let labels = Array(Set(dataset.labels + (testSet?.labels ?? []))).sorted()
        guard !labels.isEmpty, !dataset.images.isEmpty else {
            throw PipelineError.badInput(file: data, reason: "no annotated photos with at least one box")
        }

        // Split: the test data, or a seeded holdout; then Create ML's validation share of the rest.
        let (trainPhotos, holdout) = Self.split(dataset.images, fraction: testSet == nil ? p.holdoutFraction : 0,
                                                seed: p.seed ^ 0x686F_6C64)  // "hold"
        let evaluationPhotos = testSet?.images ?? holdout
        let (fitPhotos, validationPhotos) = Self.split(trainPhotos, fraction: p.validation.fraction(count: trainPhotos.count),
                                                       seed: p.seed ^ 0x7661_6C)  // "val"
        guard !fitPhotos.isEmpty else { throw PipelineError.badInput(file: data, reason: "no photos left to train on after the holdout") }

        // Extract.
        let extractor = try FeatureExtractor(explicit: p.extractor, featureLayer: nil, threads: p.threads)
        let maps = try DetectorFeatureMaps(extractor: extractor, parameters: p)
        let t0 = DispatchTime.now().uptimeNanoseconds
        let trainSamples = try maps.samples(fitPhotos, labels: labels, copies: p.augmentedCopies, label: "extracting train",
                                            emit: emit, cancellation: cancellation)
        let validationSamples = try maps.samples(validationPhotos, labels: labels, copies: 0, label: "extracting validation",
                                                 emit: emit, cancellation: cancellation)
        let featureSeconds = seconds(since: t0)
        emit(.featuresReady(extracted: maps.extracted, cached: maps.cached, seconds: featureSeconds))

        // Fit.
        let t1 = DispatchTime.now().uptimeNanoseconds
        var fitter = DetectorFit(parameters: p, labels: labels, channels: trainSamples.channels)
        let validationMAP = try fitter.fit(trainSamples, validation: validationSamples,
                                           truth: validationPhotos.map(\.objects), emit: emit, cancellation: cancellation)
        try cancellation.check()
        let fitSeconds = seconds(since: t1)

        // Assemble and evaluate with the model itself (what `predict` and `eval` will run).
        var model = try fitter.assemble(backbone: maps.backbone, preprocessing: maps.preprocessing)
        model.metadata.name = p.name
        model.metadata.provenance = Provenance(sources: [Provenance.Source(path: extractor.path, sha256: extractor.digest)], seed: p.seed,
                                               command: ObjectDetectionTask.Setup(data: data, test: test, parameters: p).command(ObjectDetectionTask.options))
        model.metadata.split = try Self.splitManifest(source: testSet?.source ?? dataset.source, evaluated: evaluationPhotos,
                                                      fit: fitPhotos, validationCount: validationPhotos.count, seed: p.seed)
        let evaluation = try evaluate(&model, on: evaluationPhotos, prefix: testSet == nil ? "holdout" : "test", emit: emit)
        if let v = validationMAP { model.metadata.metrics["validation.mAP50"] = v }
        let inputs = [data] + (test.map { [$0] } ?? []) + dataset.images.map(\.path) + (testSet?.images.map(\.path) ?? [])
        return ObjectDetectorTrainingResult(
            model: model, evaluation: evaluation, trainCount: fitPhotos.count, validationCount: validationPhotos.count,
            holdoutCount: evaluationPhotos.count, extractedCount: maps.extracted, sampleCount: trainSamples.count,
            featureSeconds: featureSeconds, fitSeconds: fitSeconds, totalSeconds: seconds(since: started),
            validationMAP50: validationMAP, skipped: skipped, inputs: inputs + [extractor.path])
    }

    /// The photos evaluated on — the test data, else the holdout — with their boxes (docs/FORMAT.md 4.4), so
    /// `mltool eval` needs only the photos, as for image classifiers; a calibration sample of the training photos.
    static func splitManifest(source: String, evaluated: [AnnotatedImage], fit: [AnnotatedImage], validationCount: Int,
                              seed: UInt64) throws -> SplitManifest {
        let root = (URL(fileURLWithPath: source).path as NSString).standardizingPath
        var isFolder: ObjCBool = false
        let rootFolder = FileManager.default.fileExists(atPath: root, isDirectory: &isFolder) && isFolder.boolValue
            ? root : (root as NSString).deletingLastPathComponent
        func recorded(_ photo: AnnotatedImage) throws -> SplitManifest.Item {
            SplitManifest.Item(path: SplitManifest.relative(photo.path, to: rootFolder), label: ObjectDetection.holdoutLabel(photo.objects),
                               sha256: try SHA256.hex(fileAt: photo.path))
        }
        return SplitManifest(
            root: rootFolder, holdout: try evaluated.map(recorded), trainCount: fit.count,
            validationCount: validationCount, seed: seed,
            calibration: try SplitManifest.spread(fit, count: SplitManifest.calibrationCount / 2).map(recorded))
    }

    /// The model evaluated on `photos` (with itself: what `predict` and `eval` will run), its mAPs recorded as
    /// `prefix`.mAP50 and `prefix`.mAP50to95.
    private func evaluate(_ model: inout Model, on photos: [AnnotatedImage], prefix: String,
                          emit: @escaping (PipelineEvent) -> Void) throws -> DetectionEvaluation? {
        let p = parameters
        guard !photos.isEmpty else { return nil }
        let t2 = DispatchTime.now().uptimeNanoseconds
        var e = DetectorEvaluator.Parameters()
        e.minConfidence = p.evaluationThreshold
        e.threads = p.threads
        let evaluation: DetectionEvaluation? = try DetectorEvaluator.evaluate(model: model, photos: photos, parameters: e, emit: emit).0
        emit(.phase("evaluate", seconds: seconds(since: t2)))
        if let e = evaluation {
            model.metadata.metrics[prefix + ".mAP50"] = e.mAP50
            model.metadata.metrics[prefix + ".mAP50to95"] = e.mAP50to95
        }
        return evaluation
    }

    private func seconds(since t: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9 }

    /// A seeded share `fraction` of `photos` (in their original order) and the rest.
    static func split(_ photos: [AnnotatedImage], fraction: Double, seed: UInt64) -> (rest: [AnnotatedImage], taken: [AnnotatedImage]) {
        let (rest, taken) = SeededSplit.indices(count: photos.count, taking: Int((Double(photos.count) * fraction).rounded()), seed: seed)
        return (rest.map { photos[$0] }, taken.map { photos[$0] })
    }
}

/// Feature maps and per-cell targets of training photos, map by map, flat.
struct DetectorSamples {
    /// Per map: samples × cells × channels features; samples × cells classes (−1 background); × 4 distances.
    var features: [[Float]]
    var classes: [[Int32]]
    var distances: [[Float]]
    var channels: [Int]
    var cells: [Int]
    var geometries: [ImageGeometry]
    var count: Int { geometries.count }
}

/// The extractor cut at the detector's feature maps, at the detector's input size, with a feature cache.
final class DetectorFeatureMaps: @unchecked Sendable {
    let parameters: ObjectDetectorParameters
    let backbone: Model
    let preprocessing: ImagePreprocessing
    let preprocessor: ImagePreprocessor
    /// One single-threaded engine per extraction worker.
    let engines: [Engine]
    let cache: FeatureCache
    let extractorDigest: String
    /// Channels of each map, and floats per photo over all maps.
    let mapChannels: [Int]
    let expectedCount: Int
    private(set) var extracted = 0
    private(set) var cached = 0

    init(extractor: FeatureExtractor, parameters p: ObjectDetectorParameters) throws {
        parameters = p
        guard var g = extractor.model.metadata.graph, let input = g.inputs.first else {
            throw PipelineError.badInput(file: extractor.path, reason: "the extractor has no network graph")
        }
        let s = p.inputSize
        g.inputs = [GraphInput(name: input.name, shape: [-1, s, s, 3])]
        for t in p.featureMaps.map(\.tensor) where !g.nodes.contains(where: { $0.outputs.contains(t) }) {
            throw PipelineError.invalidParameter(name: "featureMaps", reason: "'\(t)' is not a tensor of \(extractor.path)'s graph")
        }
        let (kept, needed) = GraphPasses.nodes(g.nodes, feeding: p.featureMaps.map(\.tensor))
        g.nodes = kept
        g.outputs = p.featureMaps.map(\.tensor)
        var m = extractor.model
        m.metadata.graph = g
        m.tensors = extractor.model.tensors.filter { needed.contains($0.name) }
        backbone = m
        var pre = extractor.preprocessing
        pre.height = s; pre.width = s; pre.resize = "letterbox"; pre.crop = "none"; pre.resizeTo = nil
        // The pad value that preprocesses to 0 (mid-grey for EfficientNet's [-1, 1] input).
        pre.padValue = min(255, max(0, (pre.mean[0] * pre.std[0] - pre.bias[0]) / pre.scale))
        preprocessing = pre
        preprocessor = try ImagePreprocessor(pre)
        let workers = p.threads > 0 ? p.threads : max(1, ProcessInfo.processInfo.activeProcessorCount)
        engines = try (0..<workers).map { _ in try Engine(model: m, threads: 1) }
        // Each map's shape at batch 1 by shape inference: (1, H, W, C) with H = W = inputSize / stride.
        let shapes = try Engine.outputShapes(model: m, batch: 1)
        mapChannels = try p.featureMaps.map { map in
            let side = s / map.stride
            guard let shape = shapes[map.tensor], shape.count == 4, shape[1] == side, shape[2] == side, shape[3] >= 1 else {
                throw PipelineError.invalidParameter(name: "featureMaps", reason: "'\(map.tensor)' has shape \(shapes[map.tensor] ?? []) at input \(s), expected (1, \(side), \(side), C) for stride \(map.stride)")
            }
            return shape[3]
        }
        expectedCount = zip(p.featureMaps, mapChannels).reduce(0) { $0 + (s / $1.0.stride) * (s / $1.0.stride) * $1.1 }
        cache = FeatureCache(directory: p.cacheDirectory ?? FeatureCache.defaultDirectory())
        extractorDigest = extractor.digest + " maps=" + p.featureMaps.map { "\($0.tensor)@\($0.stride)" }.joined(separator: ",")
    }

    /// The samples of `photos`, each followed by `copies` seeded augmented variants.
    func samples(_ photos: [AnnotatedImage], labels: [String], copies: Int, label: String,
                 emit: (PipelineEvent) -> Void, cancellation: Cancellation = Cancellation()) throws -> DetectorSamples {
        let p = parameters
        let cellCounts = p.featureMaps.map { (p.inputSize / $0.stride) * (p.inputSize / $0.stride) }
        var out = DetectorSamples(features: p.featureMaps.map { _ in [] }, classes: p.featureMaps.map { _ in [] },
                                  distances: p.featureMaps.map { _ in [] }, channels: p.featureMaps.map { _ in 0 },
                                  cells: cellCounts, geometries: [])
        let total = photos.count * (copies + 1)
        func add(_ row: [Float], _ image: (width: Int, height: Int), _ objects: [ObjectAnnotation]) throws {
            let g = preprocessor.geometry(width: image.width, height: image.height)
            let boxes = objects.map { (label: $0.label, box: g.toInput($0.box)) }
            guard row.count == expectedCount else {
                throw PipelineError.badInput(file: "feature maps", reason: "expected \(expectedCount) floats per photo, got \(row.count)")
            }
            var offset = 0
            for (l, map) in p.featureMaps.enumerated() {
                let channels = mapChannels[l]
                out.channels[l] = channels
                let n = cellCounts[l] * channels
                out.features[l] += row[offset..<(offset + n)]
                offset += n
                let (c, d) = DetectorTargets.cells(boxes, labels: labels, stride: map.stride, parameters: p)
                out.classes[l] += c
                out.distances[l] += d
            }
            out.geometries.append(g)
        }
        // Photos in chunks, one per worker at a time; each worker decodes its photo, makes the augmented copies and
        // runs the misses through its own single-threaded engine, one image per run: an image's features are then
        // the same bits whatever else is extracted and however many workers there are, so a cold and a partly warm
        // cache give the same model.
        let workers = engines.count
        var start = 0
        while start < photos.count {
            try cancellation.check()
            let chunk = Array(photos[start..<min(photos.count, start + workers * 2)])
            start += chunk.count
            let slots = Slots<Result<[(row: [Float], size: (width: Int, height: Int), objects: [ObjectAnnotation], cached: Bool)], Error>>(count: chunk.count)
            DispatchQueue.concurrentPerform(iterations: workers) { w in
                var i = w
                while i < chunk.count {
                    slots.set(i, Result { try extract(chunk[i], copies: copies, engine: engines[w]) })
                    i += workers
                }
            }
            for result in slots.values {
                for v in try result.get() {
                    try add(v.row, v.size, v.objects)
                    if v.cached { cached += 1 } else { extracted += 1 }
                }
            }
            emit(.progress(label: label, advanced: chunk.count * (copies + 1), total: total))
        }
        emit(.progressFinished(label: label))
        return out
    }


    /// One photo and its `copies` augmented variants: features (from the cache, or computed and cached), size and boxes.
    private func extract(_ photo: AnnotatedImage, copies: Int, engine: Engine) throws
        -> [(row: [Float], size: (width: Int, height: Int), objects: [ObjectAnnotation], cached: Bool)] {
        let p = parameters
        let image = try ImageDecoder.decode(path: photo.path, maxPixels: p.maxPixels)
        let hash = try SHA256.hex(fileAt: photo.path)
        var out: [(row: [Float], size: (width: Int, height: Int), objects: [ObjectAnnotation], cached: Bool)] = []
        for k in 0...copies {
            let (img, objects) = k == 0 ? (image, photo.objects)
                : DetectionAugmentation.apply(image, photo.objects, seed: p.seed ^ Self.seed(hash) &+ UInt64(k))
            let key = FeatureCache.key(contentHash: hash, extractor: extractorDigest, preprocessing: preprocessor.digest,
                                       variant: k == 0 ? "none" : "detect-aug seed=\(p.seed) copy=\(k)")
            if let row = cache.get(key: key), row.count == expectedCount {
                out.append((row, (img.width, img.height), objects, true))
                continue
            }
            var x = [Float](repeating: 0, count: preprocessor.elementCount)
            try x.withUnsafeMutableBufferPointer { try preprocessor.processBatch([img], into: $0) }
            let s = p.inputSize
            let result = try engine.run([engine.inputNames[0]: Tensor(shape: [1, s, s, 3], data: x)], outputs: p.featureMaps.map(\.tensor))
            var row: [Float] = []
            row.reserveCapacity(expectedCount)
            for map in p.featureMaps {
                guard let t = result[map.tensor] else { throw EngineError.noGraph }
                row += t.data
            }
            try? cache.put(key: key, features: row)
            out.append((row, (img.width, img.height), objects, false))
        }
        return out
    }

    /// A seed from a content hash's first 16 hex digits.
    static func seed(_ hash: String) -> UInt64 { UInt64(hash.prefix(16), radix: 16) ?? 0 }
}

/// Which cells learn which box.
enum DetectorTargets {
    /// Per cell of the map at `stride`: the class it learns (−1: background) and its four distances in cells. A box
    /// goes to the finer map when its longer side is below `scaleSplit`; the cells within `centerRadius` cells of its
    /// centre and inside it learn it, and the cell holding its centre always does; a cell claimed by two boxes learns
    /// the smaller.
    static func cells(_ boxes: [(label: String, box: BoundingBox)], labels: [String], stride: Int,
                      parameters p: ObjectDetectorParameters) -> ([Int32], [Float]) {
        let cells = p.inputSize / stride
        var cls = [Int32](repeating: -1, count: cells * cells), dist = [Float](repeating: 0, count: cells * cells * 4)
        var bestArea = [Double](repeating: .infinity, count: cells * cells)
        let s = Double(stride)
        let strides = p.featureMaps.map(\.stride).sorted()
        for (label, b) in boxes {
            guard let c = labels.firstIndex(of: label), b.width > 0, b.height > 0 else { continue }
            let level = strides.count < 2 || max(b.width, b.height) >= p.scaleSplit ? strides[strides.count - 1] : strides[0]
            guard level == stride else { continue }
            let bx = b.x + b.width / 2, by = b.y + b.height / 2
            let r = p.centerRadius * s
            let ownX = min(cells - 1, max(0, Int(bx / s))), ownY = min(cells - 1, max(0, Int(by / s)))
            for y in 0..<cells {
                for x in 0..<cells {
                    let cx = (Double(x) + 0.5) * s, cy = (Double(y) + 0.5) * s
                    let inside = cx > b.x && cx < b.maxX && cy > b.y && cy < b.maxY
                    let near = abs(cx - bx) <= r && abs(cy - by) <= r
                    guard (inside && near) || (x == ownX && y == ownY) else { continue }
                    let i = y * cells + x
                    guard b.area < bestArea[i] else { continue }
                    bestArea[i] = b.area
                    cls[i] = Int32(c)
                    // Distances at least a tenth of a cell (a centre cell may lie outside a thin box).
                    dist[i * 4] = Float(max(0.1, (cx - b.x) / s)); dist[i * 4 + 1] = Float(max(0.1, (cy - b.y) / s))
                    dist[i * 4 + 2] = Float(max(0.1, (b.maxX - cx) / s)); dist[i * 4 + 3] = Float(max(0.1, (b.maxY - cy) / s))
                }
            }
        }
        return (cls, dist)
    }
}

/// The heads and their training.
struct DetectorFit {
    let parameters: ObjectDetectorParameters
    let labels: [String]
    var heads: [DetectorHead]

    init(parameters p: ObjectDetectorParameters, labels: [String], channels: [Int]) {
        parameters = p; self.labels = labels
        heads = p.featureMaps.indices.map { l in
            DetectorHead(inputs: max(1, channels[l]), reduced: p.reduced, hidden: p.hidden, classes: labels.count,
                         side: p.inputSize / p.featureMaps[l].stride, seed: p.seed &+ UInt64(l))
        }
    }

    static func outputName(_ map: ObjectDetectorParameters.FeatureMap) -> String { "detect.stride\(map.stride)" }

    var config: DetectionConfig {
        DetectionConfig(decoder: "anchorFree", classCount: labels.count, boxEncoding: "ltrb",
                        heads: parameters.featureMaps.map { DetectionHead(tensor: Self.outputName($0), stride: $0.stride) },
                        nms: parameters.nms)
    }

    /// Trains the heads; returns the validation mAP@0.5 after the last epoch.
    mutating func fit(_ train: DetectorSamples, validation: DetectorSamples, truth: [[ObjectAnnotation]],
                      emit: (PipelineEvent) -> Void, cancellation: Cancellation = Cancellation()) throws -> Double? {
        let p = parameters
        BLASThreads.set(1)
        defer { BLASThreads.set(0) }
        let start = DispatchTime.now().uptimeNanoseconds
        var rng = SplitMix64(seed: p.seed ^ 0x6669_74)  // "fit"
        var order = Array(0..<train.count)
        let steps = (train.count + p.batchSize - 1) / p.batchSize
        let total = max(1, p.epochs * steps)
        var step = 0
        var lastMAP: Double?
        for epoch in 0..<p.epochs {
            order.seededShuffle(&rng)
            var classLoss = 0.0, boxLoss = 0.0
            var b = 0
            while b < order.count {
                try cancellation.check()
                let part = Array(order[b..<min(order.count, b + p.batchSize)])
                b += p.batchSize
                // Linear warm-up over the first epoch, then cosine decay.
                let warm = Float(min(1, Double(step + 1) / Double(max(steps, 1))))
                let lr = p.learningRate * warm * Float(0.5 * (1 + cos(Double.pi * Double(step) / Double(total))))
                step += 1
                var positives = 0
                for k in part { for l in heads.indices { positives += train.classes[l][(k * train.cells[l])..<((k + 1) * train.cells[l])].reduce(0) { $0 + ($1 >= 0 ? 1 : 0) } } }
                let normalizer = Float(max(positives, 1))
                // The maps' heads are independent: one task each (each SGEMM single-threaded, so the bits do not
                // depend on the machine).
                let current = heads
                let results = Slots<(DetectorHead, Double, Double)>(count: current.count)
                let (samples, weightDecay) = (train, p.weightDecay)
                DispatchQueue.concurrentPerform(iterations: current.count) { l in
                    var head = current[l]
                    let (c, bx) = Self.step(&head, samples, map: l, items: part, normalizer: normalizer, lr: lr, decay: weightDecay)
                    results.set(l, (head, c, bx))
                }
                for (l, r) in results.values.enumerated() {
                    heads[l] = r.0
                    classLoss += r.1; boxLoss += r.2
                }
            }
            if validation.count > 0 {
                lastMAP = evaluate(validation, truth: truth).mAP50
            }
            emit(.detectorEpoch(DetectorEpochRecord(epoch: epoch + 1, epochs: p.epochs, classLoss: classLoss / Double(max(steps, 1)),
                                                    boxLoss: boxLoss / Double(max(steps, 1)), validationMAP50: lastMAP,
                                                    elapsed: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)))
        }
        return lastMAP
    }

    /// One Adam step of head `l` on the samples `items`.
    static func step(_ head: inout DetectorHead, _ s: DetectorSamples, map l: Int, items: [Int], normalizer: Float, lr: Float,
                     decay: Float) -> (Double, Double) {
        let cells = s.cells[l], channels = s.channels[l]
        let rows = cells * items.count
        var x = [Float](), ct = [Int32](), dt = [Float]()
        x.reserveCapacity(rows * channels); ct.reserveCapacity(rows); dt.reserveCapacity(rows * 4)
        for k in items {
            x += s.features[l][(k * cells * channels)..<((k + 1) * cells * channels)]
            ct += s.classes[l][(k * cells)..<((k + 1) * cells)]
            dt += s.distances[l][(k * cells * 4)..<((k + 1) * cells * 4)]
        }
        var g = [Float](repeating: 0, count: rows * head.outputs)
        var losses = (0.0, 0.0)
        x.withUnsafeBufferPointer { xp in
            g.withUnsafeMutableBufferPointer { gp in
                ct.withUnsafeBufferPointer { cp in
                    dt.withUnsafeBufferPointer { dp in
                        guard let xb = xp.baseAddress, let gb = gp.baseAddress, let cb = cp.baseAddress, let db = dp.baseAddress else { return }
                        let act = head.forward(xb, items: items.count)
                        let l = act.y.withUnsafeBufferPointer {
                            head.loss($0.baseAddress!, rows: rows, classTarget: cb, distances: db, normalizer: normalizer, grad: gb)
                        }
                        losses = (l.classes, l.boxes)
                        head.update(xb, items: items.count, act, gb, lr: lr, decay: decay)
                    }
                }
            }
        }
        return losses
    }

    /// The heads' detections on cached features against `truth` (validation mAP per epoch).
    func evaluate(_ s: DetectorSamples, truth: [[ObjectAnnotation]]) -> DetectionEvaluation {
        let p = parameters
        let decoder = DetectionDecoder(config: config, inputWidth: p.inputSize, inputHeight: p.inputSize)
        var settings = p.nms
        settings.confidenceThreshold = p.evaluationThreshold
        var found: [[Detection]] = []
        for k in 0..<s.count {
            var outputs: [String: Tensor] = [:]
            for (l, map) in p.featureMaps.enumerated() {
                let head = heads[l], cells = s.cells[l], channels = s.channels[l]
                let side = p.inputSize / map.stride
                let y = s.features[l].withUnsafeBufferPointer { xp in head.forward(xp.baseAddress! + k * cells * channels, items: 1).y }
                outputs[Self.outputName(map)] = Tensor(shape: [1, side, side, head.outputs], data: y)
            }
            let kept = (try? decoder.decode(outputs, item: 0, minScore: settings.confidenceThreshold)).map {
                NonMaxSuppression.select($0, settings: settings)
            } ?? []
            found.append(kept.map { Detection(label: labels[$0.classIndex], classIndex: $0.classIndex, confidence: Double($0.score),
                                              box: s.geometries[k].toPhoto($0.box)) })
        }
        return DetectionMetrics.evaluate(truth: truth, detections: found, labels: labels)
    }

    /// The detector: the backbone's graph with each head as two 1×1 convolutions, and its settings.
    func assemble(backbone: Model, preprocessing: ImagePreprocessing) throws -> Model {
        guard var g = backbone.metadata.graph else { throw EngineError.noGraph }
        var tensors = backbone.tensors
        for (l, map) in parameters.featureMaps.enumerated() {
            let h = heads[l], prefix = Self.outputName(map)
            tensors += [
                StoredTensor(name: prefix + ".w1", tensor: Tensor(shape: [1, 1, h.inputs, h.reduced], data: h.w1)),
                StoredTensor(name: prefix + ".b1", tensor: Tensor(shape: [h.reduced], data: h.b1)),
                StoredTensor(name: prefix + ".w2", tensor: Tensor(shape: [3, 3, h.reduced, h.hidden], data: h.w2)),
                StoredTensor(name: prefix + ".b2", tensor: Tensor(shape: [h.hidden], data: h.b2)),
                StoredTensor(name: prefix + ".w3", tensor: Tensor(shape: [1, 1, h.hidden, h.outputs], data: h.w3)),
                StoredTensor(name: prefix + ".b3", tensor: Tensor(shape: [h.outputs], data: h.b3)),
            ]
            let conv1 = Attributes(kernel: [1, 1], strides: [1, 1], dilations: [1, 1], pads: [0, 0, 0, 0], groups: 1)
            let conv3 = Attributes(kernel: [3, 3], strides: [1, 1], dilations: [1, 1], pads: [1, 1, 1, 1], groups: 1)
            var reduce = conv1, context = conv3
            reduce.activation = .relu; context.activation = .relu
            g.nodes.append(Node(name: prefix + ".reduce", op: .conv, inputs: [map.tensor, prefix + ".w1", prefix + ".b1"],
                                outputs: [prefix + ".reduce"], attributes: reduce))
            g.nodes.append(Node(name: prefix + ".context", op: .conv, inputs: [prefix + ".reduce", prefix + ".w2", prefix + ".b2"],
                                outputs: [prefix + ".context"], attributes: context))
            g.nodes.append(Node(name: prefix, op: .conv, inputs: [prefix + ".context", prefix + ".w3", prefix + ".b3"],
                                outputs: [prefix], attributes: conv1))
        }
        g.outputs = parameters.featureMaps.map(Self.outputName)
        var md = ModelMetadata(task: .objectDetector, graph: g, labels: labels)
        md.description = "object detector: \(backbone.metadata.name ?? "extractor") features at strides "
            + parameters.featureMaps.map { String($0.stride) }.joined(separator: ", ") + ", trained anchor-free heads"
        md.image = preprocessing
        md.detection = config
        return Model(metadata: md, tensors: tensors)
    }
}
