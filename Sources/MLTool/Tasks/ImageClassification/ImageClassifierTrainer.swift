import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolFormat
import MLToolTrain

/// Trains an image classifier by transfer learning (Create ML's `MLImageClassifier`): a frozen feature extractor
/// (EfficientNet-Lite0 by default) computes features through a content-addressed cache, and a multinomial
/// logistic-regression head is fitted on them. Stages: split (holdout, then validation) → extract → fit (L2
/// chosen on the validation split, then refitted) → assemble (extractor graph + standardisation + head, with the
/// holdout recorded so `Evaluator` can re-evaluate on it).
public struct ImageClassifierTrainer: Sendable {
    public var data: TrainingData
    /// Held-out test data; nil holds out `parameters.holdoutFraction` of `data` instead.
    public var testData: TrainingData?
    public var parameters: ImageClassifierParameters

    public init(data: TrainingData, testData: TrainingData? = nil, parameters: ImageClassifierParameters = .init()) {
        self.data = data; self.testData = testData; self.parameters = parameters
    }

    /// An item with its features (empty when the head trains out of core: they are read back from the cache by
    /// `key`), and the content hash recorded in the split manifest.
    struct Featured {
        var item: ImageItem
        var sha256: String
        var key: String
        var features: [Float]
    }

    /// Trains on a thread of its own; cancelling the calling task stops it at the next batch or stage.
    public func train(progress: (@Sendable (PipelineEvent) -> Void)? = nil) async throws -> TrainingResult {
        let trainer = self
        return try await Cancellation.run { token in try trainer.train(progress: progress, cancellation: token) }
    }

    /// Trains, reporting `progress`; stops with `CancellationError` when `cancellation` (or the current task) is
    /// cancelled.
    public func train(progress: ((PipelineEvent) -> Void)? = nil, cancellation: Cancellation = Cancellation()) throws -> TrainingResult {
        let started = Date()
        let p = parameters
        let emit = progress ?? { _ in }
        let plan = try split(emit: emit)
        let dataset = plan.dataset, testSet = plan.testSet, extractor = plan.extractor, holdoutItems = plan.holdout
        let tuning = try fineTuning(extractor)
        try cancellation.check()

        // Features; when fine-tuning, the activations at the cut, through which the top then computes them.
        let extraction = try extract(tuning?.extractor ?? extractor, train: plan.train, validation: plan.validation,
                                     holdout: holdoutItems, keepWithin: p.memoryBudget ?? MemoryBudget.machineDefault(),
                                     emit: emit, cancellation: cancellation)
        var train = extraction.train, validation = extraction.validation
        var holdout = extraction.holdout
        if !extraction.failures.isEmpty {
            emit(.skippedImages(extraction.failures))
            try dataset.checkBadImages(extraction.failures)
        }
        if !extraction.failedPaths.isEmpty { _ = try dataset.preflight(unusable: extraction.failedPaths) }
        emit(.featuresReady(extracted: extraction.extracted, cached: train.count + validation.count + holdout.count - extraction.extracted,
                            seconds: extraction.seconds))
        try cancellation.check()

        // The head, on features in memory or, past the memory budget, on rows streamed from a scratch file.
        let labels = dataset.labels
        guard var width = extraction.width, width > 0 else {
            throw PipelineError.badInput(file: data.location ?? dataset.source, reason: "no usable training images")
        }
        let fitStart = Date()
        var rows: (train: FineTuning.Rows, validation: FineTuning.Rows, holdout: FineTuning.Rows)?
        if let t = tuning {
            guard !extraction.outOfCore else {
                throw PipelineError.notSupported("--fine-tune with more activations at the cut than the memory budget (--memory)")
            }
            rows = (try pooled(&train, t, labels: labels), try pooled(&validation, t, labels: labels),
                    try pooled(&holdout, t, labels: labels))
            width = train.first?.features.count ?? 0
        }
        let fit = try fitHead(train: &train, validation: &validation, holdout: holdout, labels: labels, width: width,
                              outOfCore: extraction.outOfCore, emit: emit, cancellation: cancellation)
        let standardizer = fit.standardizer
        var head = fit.head, metrics = fit.metrics

        // The model: extractor up to the features (its top fine-tuned), then dense + softmax.
        var (nodes, tensors, graph) = try extractor.truncated()
        if let t = tuning, let r = rows {
            let (tuned, m) = try fineTune(t, fit: fit, train: r.train, validation: r.validation, holdout: r.holdout,
                                          emit: emit, cancellation: cancellation)
            (metrics, head.weights, head.bias) = (m, tuned.head.weights, tuned.head.bias)
            tensors = try Self.writeBack(tuned.top, names: t.parameterNames, nodes: &nodes, tensors: tensors)
        }
        let fitSeconds = Date().timeIntervalSince(fitStart)
        let headNodes = [
            Node(name: "head.center", op: .sub, inputs: [extractor.featureTensor, "head.mean"], outputs: ["head.centered"]),
            Node(name: "head.scale", op: .mul, inputs: ["head.centered", "head.inverseStd"], outputs: ["head.standardized"]),
            Node(name: "head", op: .dense, inputs: ["head.standardized", "head.weights", "head.bias"], outputs: ["logits"]),
            Node(name: "head.softmax", op: .softmax, inputs: ["logits"], outputs: ["probabilities"],
                 attributes: Attributes(axis: -1)),
        ]
        var md = ModelMetadata(task: .imageClassifier,
                               graph: Graph(inputs: graph.inputs, outputs: ["probabilities"], nodes: nodes + headNodes,
                                            sourceLayout: "nhwc"),
                               labels: labels)
        md.name = p.name
        md.outputKind = "probabilities"
        md.featureTensor = extractor.featureTensor
        md.image = extractor.preprocessing
        md.metrics = metrics
        md.provenance = Provenance(sources: [Provenance.Source(path: extractor.path, sha256: extractor.digest)], seed: p.seed,
                                   command: command())
        let root = (URL(fileURLWithPath: testSet?.source ?? dataset.source).path as NSString).standardizingPath
        md.split = SplitManifest(
            root: root,
            holdout: holdout.map { SplitManifest.Item(path: SplitManifest.relative($0.item.path, to: root), label: $0.item.label, sha256: $0.sha256) },
            trainCount: train.count, validationCount: validation.count, seed: p.seed,
            calibration: SplitManifest.spread(train, count: SplitManifest.calibrationCount).map {
                SplitManifest.Item(path: SplitManifest.relative($0.item.path, to: root), label: $0.item.label, sha256: $0.sha256)
            })
        let model = Model(metadata: md, tensors: tensors + [
            StoredTensor(name: "head.mean", tensor: Tensor(shape: [width], data: standardizer.mean)),
            StoredTensor(name: "head.inverseStd", tensor: Tensor(shape: [width], data: standardizer.std.map { 1 / $0 })),
            StoredTensor(name: "head.weights", tensor: Tensor(shape: [width, labels.count], data: head.weights)),
            StoredTensor(name: "head.bias", tensor: Tensor(shape: [labels.count], data: head.bias)),
        ])
        return TrainingResult(
            model: model, metrics: metrics, trainCount: train.count, validationCount: validation.count,
            holdoutCount: holdout.count, l2: head.chosenL2, iterations: head.iterations, stopReason: head.stopReason,
            extractedCount: extraction.extracted, featureSeconds: extraction.seconds, fitSeconds: fitSeconds,
            totalSeconds: Date().timeIntervalSince(started), outOfCore: extraction.outOfCore,
            inputs: dataset.items.map(\.path) + holdoutItems.map(\.path) + [extractor.path])
    }

    /// What training works on: the data set, the test set, the extractor and the items of each split.
    struct Plan {
        var dataset: ImageDataset, testSet: ImageDataset?, extractor: FeatureExtractor
        var train: [ImageItem], validation: [ImageItem], holdout: [ImageItem]
    }

    /// Loads the data and the extractor and makes the splits (holdout first, kept out of everything, then
    /// validation from the rest): the one place both `train` and `extractFeatures(shard:)` get their items from, so
    /// a shard computes exactly the cache entries training looks up.
    func split(emit: (PipelineEvent) -> Void) throws -> Plan {
        let p = parameters
        let dataset = try data.imageDataset()
        for w in try dataset.preflight() { emit(.warning(w)) }
        let testSet = try testData.map { try $0.imageDataset() }
        if let t = testSet {
            let unknown = Set(t.items.map(\.label)).subtracting(dataset.labels)
            if !unknown.isEmpty {
                throw PipelineError.badInput(file: t.source, reason: "labels not in the training data: \(unknown.sorted().joined(separator: ", "))")
            }
        }
        let extractor = try FeatureExtractor(explicit: p.extractor, featureLayer: p.featureLayer, threads: p.threads)
        var trainItems = dataset.items
        var holdoutItems = [ImageItem]()
        if let t = testSet {
            holdoutItems = t.items
        } else {
            guard p.holdoutFraction >= 0, p.holdoutFraction < 1 else {
                throw PipelineError.invalidParameter(name: "holdoutFraction", reason: "--holdout must be in [0, 1)")
            }
            if p.holdoutFraction > 0 {
                let split = try DataSplit.stratified(dataset.items, fraction: p.holdoutFraction, seed: p.seed)
                trainItems = split.train; holdoutItems = split.held
            }
        }
        var validationItems = [ImageItem]()
        let vf = p.validation.fraction(count: trainItems.count)
        if vf > 0 {
            let split = try DataSplit.stratified(trainItems, fraction: vf, seed: p.seed &+ 1)
            trainItems = split.train; validationItems = split.held
        }
        return Plan(dataset: dataset, testSet: testSet, extractor: extractor, train: trainItems,
                    validation: validationItems, holdout: holdoutItems)
    }

    /// The command line that does this training, recorded in the model's provenance: `mltool train DATA` with what
    /// the task's option table records (the same for the CLI and a library call).
    func command() -> String {
        var s = ImageClassificationTask.Setup(data: data.location ?? "<memory>", test: testData.map { $0.location ?? "<memory>" },
                                              parameters: parameters)
        s.pathColumn = data.pathColumn; s.labelColumn = data.labelColumn
        return s.command(ImageClassificationTask.options)
    }

    // MARK: - Extraction

    struct Extraction {
        var train: [Featured], validation: [Featured], holdout: [Featured]
        /// Values per feature row (nil: no row was read or computed).
        var width: Int?
        /// The rows were too large for the memory budget: `features` are empty, the entries are in the cache.
        var outOfCore: Bool
        /// `failedItems[i]` is the image of `failures[i]` (data set order); `failedPaths` the same paths as a set.
        var failures: [DataError], failedPaths: Set<String>, failedItems: [String]
        var extracted: Int
        var seconds: Double
    }

    /// What the parallel look-up pass learns about one file: its content hash and the cached features of each
    /// variant (nil: a miss), or why it could not be read; `skipped` for an item another shard owns.
    struct Lookup: Sendable {
        var hash = ""
        var error: DataError?
        var hits: [[Float]?] = []
        var keys: [String] = []
        var skipped = false
    }

    /// Features of every item (and of each augmented variant of the training items), from the cache where they
    /// are, computed where they are not. With `owns`, only the items it accepts are looked at (a shard's part:
    /// the others are neither read nor returned), each with the same key, variant and augmentation seed as in a
    /// full run. The features are kept in memory when the in-memory head would fit in `keepWithin` bytes (told
    /// from the first row's width); otherwise only their cache keys are (`outOfCore`).
    func extract(_ extractor: FeatureExtractor, train trainItems: [ImageItem], validation validationItems: [ImageItem],
                 holdout holdoutItems: [ImageItem], owns: (@Sendable (ImageItem) -> Bool)? = nil, keepWithin: Int,
                 emit: (PipelineEvent) -> Void, cancellation: Cancellation) throws -> Extraction {
        let p = parameters
        let extractStart = Date()
        var extractedCount = 0
        let cache = FeatureCache(directory: cacheFolder)
        var failures = [DataError]()
        var failedPaths = Set<String>()
        var failedItems = [String]()
        let digest = extractor.digest
        // The tool version is part of the key: a release whose kernels round differently never mixes its
        // features with an older release's cached ones.
        let preprocessingKey = extractor.preprocessor.digest + "|" + extractor.featureTensor + "|mltool " + MLToolInfo.version
        let plain: [(String, Augmentation?)] = [("none", nil)]
        let augmented = plain + p.augmentations.map { ($0.variant(seed: p.seed), $0) }
        let rowCount = trainItems.count * augmented.count + validationItems.count + holdoutItems.count
        var width: Int?, keep = true
        /// What to keep of a row: all of it while the in-memory head fits the budget (decided at the first row).
        func kept(_ f: [Float]) -> [Float] {
            if width == nil {
                width = f.count
                keep = !HeadMemory.outOfCore(rows: rowCount, width: f.count, budget: keepWithin)
            }
            return keep ? f : []
        }
        func record(_ e: DataError, _ path: String) throws {
            if p.strict { throw e }
            failures.append(e)
            failedPaths.insert(path)
            failedItems.append(path)
        }
        func featurize(_ items: [ImageItem], variants: [(String, Augmentation?)], label: String) throws -> [Featured] {
            // One slot per (item, variant) in data set order, so the result never depends on what was cached.
            var slots = [Featured?](repeating: nil, count: items.count * variants.count)
            var pending = [(slot: Int, input: [Float], key: String)]()
            let stage = "extracting \(label)", total = (owns.map { items.filter($0).count } ?? items.count) * variants.count
            // Double buffering: a full batch runs through the network on a thread of its own while this one decodes
            // and preprocesses the next; its features are stored (cache, slots) when the next batch is handed over.
            var inFlight: (rows: [(slot: Int, key: String)], work: BackgroundWork<[[Float]]>)?
            defer { inFlight?.work.wait() }  // an error or a cancellation never leaves the network running
            func collect() throws {
                guard let batch = inFlight else { return }
                inFlight = nil
                let feats = try batch.work.value()
                for (p, f) in zip(batch.rows, feats) {
                    try cache.put(key: p.key, features: f)
                    slots[p.slot]?.features = kept(f)
                }
                extractedCount += batch.rows.count
                emit(.progress(label: stage, advanced: batch.rows.count, total: total))
            }
            func flush() throws {
                try collect()
                guard !pending.isEmpty else { return }
                let inputs = pending.map(\.input)
                inFlight = (pending.map { ($0.slot, $0.key) }, BackgroundWork { try extractor.features(inputs) })
                pending.removeAll(keepingCapacity: true)
            }
            var start = 0
            while start < items.count {
                try cancellation.check()
                // Reading, hashing and cache look-ups run on every core, a bounded chunk at a time (no pixels kept).
                let chunk = Array(items[start..<min(items.count, start + 256)])
                let found = Slots<Lookup>(count: chunk.count)
                DispatchQueue.concurrentPerform(iterations: chunk.count) { i in
                    var l = Lookup()
                    if let owns, !owns(chunk[i]) {
                        l.skipped = true
                        found.set(i, l)
                        return
                    }
                    do {
                        let bytes = try ImageDecoder.readFile(chunk[i].path)
                        l.hash = SHA256.hex(bytes)
                        l.keys = variants.map { v in
                            FeatureCache.key(contentHash: l.hash, extractor: digest, preprocessing: preprocessingKey,
                                             variant: v.0)
                        }
                        l.hits = l.keys.map { cache.get(key: $0) }
                    } catch let e as DataError {
                        l.error = e
                    } catch {
                        l.error = DataError.cannotRead(file: chunk[i].path, reason: "\(error)")
                    }
                    found.set(i, l)
                }
                // Every task stores a look-up, so there is one per item, in order.
                for (offset, (item, l)) in zip(chunk, found.values).enumerated() {
                    let index = start + offset
                    if l.skipped { continue }
                    if let e = l.error { try record(e, item.path); continue }
                    var decoded: RGBImage?
                    for (v, (_, aug)) in variants.enumerated() {
                        let slot = index * variants.count + v
                        if let f = l.hits[v] {
                            slots[slot] = Featured(item: item, sha256: l.hash, key: l.keys[v], features: kept(f))
                            emit(.progress(label: stage, advanced: 1, total: total))
                            continue
                        }
                        do {
                            if decoded == nil { decoded = try ImageDecoder.decode(path: item.path, maxPixels: p.maxPixels) }
                        } catch let e as DataError {
                            try record(e, item.path); break
                        }
                        guard var image = decoded else { break }
                        // The draw comes from the content, like the cache key: seeding it from the item's position
                        // would let an entry computed before files were added stand for a different draw.
                        if let a = aug { image = a.apply(to: image, seed: p.seed &+ (UInt64(l.hash.prefix(16), radix: 16) ?? 0)) }
                        slots[slot] = Featured(item: item, sha256: l.hash, key: l.keys[v], features: [])
                        pending.append((slot, try extractor.preprocessor.process(image), l.keys[v]))
                        if pending.count == 32 { try flush() }
                    }
                }
                start += chunk.count
            }
            try flush()
            try collect()
            emit(.progressFinished(label: stage))
            return slots.compactMap { $0 }
        }
        let train = try featurize(trainItems, variants: augmented, label: "train")
        let validation = try featurize(validationItems, variants: plain, label: "validation")
        let holdout = try featurize(holdoutItems, variants: plain, label: "holdout")
        return Extraction(train: train, validation: validation, holdout: holdout, width: width, outOfCore: !keep,
                          failures: failures,
                          failedPaths: failedPaths, failedItems: failedItems, extracted: extractedCount,
                          seconds: Date().timeIntervalSince(extractStart))
    }
}
