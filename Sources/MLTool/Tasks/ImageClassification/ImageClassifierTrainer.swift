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
public struct ImageClassifierTrainer: CancellableTrainer {
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
        let root = (URL(fileURLWithPath: testSet?.source ?? dataset.source).path as NSString).standardizingPath
        let split = Self.splitManifest(root: root, train: train, validationCount: validation.count, holdout: holdout, seed: p.seed)
        let model = assemble(extractor, nodes: nodes, tensors: tensors, inputs: graph.inputs, labels: labels, metrics: metrics,
                             head: (standardizer, head), width: width, split: split)
        return TrainingResult(
            model: model, metrics: metrics, trainCount: train.count, validationCount: validation.count,
            holdoutCount: holdout.count, l2: head.chosenL2, iterations: head.iterations, stopReason: head.stopReason,
            extractedCount: extraction.extracted, featureSeconds: extraction.seconds, fitSeconds: fitSeconds,
            totalSeconds: Date().timeIntervalSince(started), outOfCore: extraction.outOfCore,
            inputs: dataset.items.map(\.path) + holdoutItems.map(\.path) + [extractor.path])
    }

    /// The model: extractor up to the features (`nodes`, its top fine-tuned), then standardisation, dense + softmax.
    private func assemble(_ extractor: FeatureExtractor, nodes: [Node], tensors: [StoredTensor], inputs: [GraphInput], labels: [String],
                          metrics: [String: Double], head fit: (standardizer: Standardizer, head: LogisticRegressionModel),
                          width: Int, split: SplitManifest) -> Model {
        let (standardizer, head) = fit
        let headNodes = [
            Node(name: "head.center", op: .sub, inputs: [extractor.featureTensor, "head.mean"], outputs: ["head.centered"]),
            Node(name: "head.scale", op: .mul, inputs: ["head.centered", "head.inverseStd"], outputs: ["head.standardized"]),
            Node(name: "head", op: .dense, inputs: ["head.standardized", "head.weights", "head.bias"], outputs: ["logits"]),
            Node(name: "head.softmax", op: .softmax, inputs: ["logits"], outputs: ["probabilities"],
                 attributes: Attributes(axis: -1)),
        ]
        var md = ModelMetadata(task: .imageClassifier,
                               graph: Graph(inputs: inputs, outputs: ["probabilities"], nodes: nodes + headNodes,
                                            sourceLayout: "nhwc"),
                               labels: labels)
        md.name = parameters.name
        md.outputKind = "probabilities"
        md.featureTensor = extractor.featureTensor
        md.image = extractor.preprocessing
        md.metrics = metrics
        md.provenance = Provenance(sources: [Provenance.Source(path: extractor.path, sha256: extractor.digest)], seed: parameters.seed,
                                   command: command())
        md.split = split
        return Model(metadata: md, tensors: tensors + [
            StoredTensor(name: "head.mean", tensor: Tensor(shape: [width], data: standardizer.mean)),
            StoredTensor(name: "head.inverseStd", tensor: Tensor(shape: [width], data: standardizer.std.map { 1 / $0 })),
            StoredTensor(name: "head.weights", tensor: Tensor(shape: [width, labels.count], data: head.weights)),
            StoredTensor(name: "head.bias", tensor: Tensor(shape: [labels.count], data: head.bias)),
        ])
    }

    /// The holdout's items and a calibration sample of the training items, relative to `root`.
    private static func splitManifest(root: String, train: [Featured], validationCount: Int, holdout: [Featured],
                                      seed: UInt64) -> SplitManifest {
        SplitManifest(
            root: root,
            holdout: holdout.map { SplitManifest.Item(path: SplitManifest.relative($0.item.path, to: root), label: $0.item.label, sha256: $0.sha256) },
            trainCount: train.count, validationCount: validationCount, seed: seed,
            calibration: SplitManifest.spread(train, count: SplitManifest.calibrationCount).map {
                SplitManifest.Item(path: SplitManifest.relative($0.item.path, to: root), label: $0.item.label, sha256: $0.sha256)
            })
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
        let plain: [(String, Augmentation?)] = [("none", nil)]
        let augmented = plain + p.augmentations.map { ($0.variant(seed: p.seed), $0) }
        let rowCount = trainItems.count * augmented.count + validationItems.count + holdoutItems.count
        return try withoutActuallyEscaping(emit) { emit in
            let run = FeatureRun(extractor: extractor, parameters: p, cache: FeatureCache(directory: cacheFolder), owns: owns,
                                 rowCount: rowCount, keepWithin: keepWithin, emit: emit, cancellation: cancellation)
            let train = try run.featurize(trainItems, variants: augmented, label: "train")
            let validation = try run.featurize(validationItems, variants: plain, label: "validation")
            let holdout = try run.featurize(holdoutItems, variants: plain, label: "holdout")
            return Extraction(train: train, validation: validation, holdout: holdout, width: run.width, outOfCore: !run.keep,
                              failures: run.failures,
                              failedPaths: run.failedPaths, failedItems: run.failedItems, extracted: run.extractedCount,
                              seconds: Date().timeIntervalSince(extractStart))
        }
    }
}
