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

    /// An item with its features and the content hash recorded in the split manifest.
    struct Featured {
        var item: ImageItem
        var sha256: String
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
        try cancellation.check()

        // Features.
        let extraction = try extract(extractor, train: plan.train, validation: plan.validation, holdout: holdoutItems,
                                     emit: emit, cancellation: cancellation)
        var train = extraction.train, validation = extraction.validation
        let holdout = extraction.holdout
        if !extraction.failures.isEmpty {
            emit(.skippedImages(extraction.failures))
            try dataset.checkBadImages(extraction.failures)
        }
        if !extraction.failedPaths.isEmpty { _ = try dataset.preflight(unusable: extraction.failedPaths) }
        emit(.featuresReady(extracted: extraction.extracted, cached: train.count + validation.count + holdout.count - extraction.extracted,
                            seconds: extraction.seconds))
        try cancellation.check()

        // The head.
        let labels = dataset.labels
        let labelIndex = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        guard let width = train.first?.features.count, width > 0 else {
            throw PipelineError.badInput(file: data.location ?? dataset.source, reason: "no usable training images")
        }
        func matrix(_ rows: [Featured]) -> [Float] {
            var m = [Float](); m.reserveCapacity(rows.count * width)
            for r in rows { m += r.features }
            return m
        }
        let fitStart = Date()
        // Memory: one matrix for training + validation rows (room reserved up front, so appending the validation
        // rows for the refit never copies it), standardised in place; the per-image copies are released once
        // they are in it. 60,000 Fashion-MNIST images peaked at 1.09 GiB before this, with four full copies.
        let nTrain = train.count, nValidation = validation.count
        var x = [Float]()
        x.reserveCapacity((nTrain + nValidation) * width)
        for r in train { x += r.features }
        let standardizer = try Standardizer.fit(x: x, rows: nTrain, cols: width)
        try standardizer.apply(&x, rows: nTrain)
        let yTrain = train.map { labelIndex[$0.item.label] ?? 0 }
        let yValidation = validation.map { labelIndex[$0.item.label] ?? 0 }
        let xValidation = validation.isEmpty ? [] : try standardizer.applied(matrix(validation), rows: nValidation)
        train = train.map { Featured(item: $0.item, sha256: $0.sha256, features: []) }
        validation = validation.map { Featured(item: $0.item, sha256: $0.sha256, features: []) }
        let validationData: (x: [Float], rows: Int, labels: [Int])? = validation.isEmpty ? nil
            : (xValidation, nValidation, yValidation)
        var options = LogisticRegressionOptions()
        options.l2 = p.l2
        options.maxIterations = p.maxIterations
        options.balanceClasses = p.balanceClasses
        options.earlyStoppingPatience = p.earlyStoppingPatience
        options.l2Grid = p.l2Grid
        options.tolerance = p.tolerance
        options.selection = .logLoss
        emit(.fitStarted)
        let fullIterations = options.maxIterations
        let refitting = options.l2 == .auto && !validation.isEmpty
        // Choosing the strength needs the validation loss of each candidate, not a fully converged fit: the
        // search stops each candidate early and the refit below converges.
        if refitting { options.maxIterations = min(fullIterations, p.searchIterations) }
        var fitted = try LogisticRegression.fit(
            x: x, rows: nTrain, cols: width, labels: yTrain, classes: labels.count, validation: validationData,
            options: options, progress: { emit(.iteration($0)) })
        try cancellation.check()
        if refitting {
            // The validation split chose the strength; the final head learns from training + validation images
            // (standardised with the training rows' statistics).
            x.append(contentsOf: xValidation)
            var refit = options
            refit.l2 = .fixed(fitted.chosenL2)
            refit.maxIterations = fullIterations
            let chosen = fitted
            // From the chosen fit: the added validation rows move the optimum only a little.
            fitted = try LogisticRegression.fit(
                x: x, rows: nTrain + nValidation, cols: width, labels: yTrain + yValidation, classes: labels.count,
                validation: nil, options: refit, warmStart: chosen, progress: nil)
            fitted.validationAccuracy = chosen.validationAccuracy
            fitted.validationLoss = chosen.validationLoss
        }
        // The standardisation stays a separate float affine step in the graph rather than being folded into the
        // weights: folding divides by tiny feature deviations, which leaves a few huge weights per class that an
        // int8 scale cannot share with the rest (measured: the folded head lost 32 points at int8).
        let head = fitted
        let fitSeconds = Date().timeIntervalSince(fitStart)

        // Metrics through the head exactly as the model computes it after extraction, a block of rows at a time.
        func accuracy(_ standardized: [Float], rows: Int, labels truth: [Int]) throws -> Double? {
            guard rows > 0 else { return nil }
            var correct = 0
            for start in stride(from: 0, to: rows, by: 4096) {
                let end = min(rows, start + 4096)
                let p = try head.probabilities(Array(standardized[(start * width)..<(end * width)]), rows: end - start)
                for i in 0..<(end - start) {
                    let row = Array(p[(i * labels.count)..<((i + 1) * labels.count)])
                    if Metrics.argmax(row) == truth[start + i] { correct += 1 }
                }
            }
            return Double(correct) / Double(rows)
        }
        var metrics = [String: Double]()
        metrics["train.accuracy"] = try accuracy(x, rows: nTrain, labels: yTrain)
        metrics["validation.accuracy"] = fitted.validationAccuracy
        metrics["holdout.accuracy"] = holdout.isEmpty ? nil : try accuracy(
            try standardizer.applied(matrix(holdout), rows: holdout.count), rows: holdout.count,
            labels: holdout.map { labelIndex[$0.item.label] ?? 0 })
        metrics["l2"] = head.chosenL2

        // The model: extractor up to the features, then dense + softmax.
        let (nodes, tensors, graph) = try extractor.truncated()
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
            trainCount: train.count, validationCount: validation.count, seed: p.seed)
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
            totalSeconds: Date().timeIntervalSince(started),
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

    /// The command line that does this training, recorded in the model's provenance: `mltool train DATA` with the
    /// test data and every parameter that differs from its default (the same for the CLI and a library call).
    func command() -> String {
        let d = ImageClassifierParameters(), p = parameters
        var parts = ["mltool", "train", data.location ?? "<memory>"]
        // The name comes from the output file's name (`-o x.bin` names the model "x"); the default is model.bin.
        if p.name != d.name { parts += ["-o", p.name + ".bin"] }
        if let t = testData { parts += ["--test", t.location ?? "<memory>"] }
        if testData == nil && p.holdoutFraction != d.holdoutFraction { parts += ["--holdout", "\(p.holdoutFraction)"] }
        if p.validation != d.validation {
            switch p.validation {
            case .auto: break
            case .none: parts += ["--validation", "none"]
            case .fraction(let f): parts += ["--validation", "\(f)"]
            }
        }
        if p.seed != d.seed { parts += ["--seed", "\(p.seed)"] }
        if let e = p.extractor { parts += ["--extractor", e] }
        if let f = p.featureLayer { parts += ["--feature-layer", f] }
        if case .fixed(let v) = p.l2 { parts += ["--l2", "\(v)"] }
        if p.maxIterations != d.maxIterations { parts += ["--max-iterations", "\(p.maxIterations)"] }
        if let e = p.earlyStoppingPatience { parts += ["--early-stopping", "\(e)"] }
        if p.balanceClasses { parts.append("--balance") }
        if !p.augmentations.isEmpty { parts += ["--augment", p.augmentations.map(\.rawValue).joined(separator: ",")] }
        if data.pathColumn != "path" { parts += ["--path-column", data.pathColumn] }
        if data.labelColumn != "label" { parts += ["--label-column", data.labelColumn] }
        return parts.joined(separator: " ")
    }

    // MARK: - Extraction

    struct Extraction {
        var train: [Featured], validation: [Featured], holdout: [Featured]
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
        var skipped = false
    }

    /// Features of every item (and of each augmented variant of the training items), from the cache where they
    /// are, computed where they are not. With `owns`, only the items it accepts are looked at (a shard's part:
    /// the others are neither read nor returned), each with the same key, variant and augmentation seed as in a
    /// full run.
    func extract(_ extractor: FeatureExtractor, train trainItems: [ImageItem], validation validationItems: [ImageItem],
                 holdout holdoutItems: [ImageItem], owns: (@Sendable (ImageItem) -> Bool)? = nil,
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
            func flush() throws {
                let feats = try extractor.features(pending.map(\.input))
                for (p, f) in zip(pending, feats) {
                    try cache.put(key: p.key, features: f)
                    slots[p.slot]?.features = f
                }
                extractedCount += pending.count
                emit(.progress(label: stage, advanced: pending.count, total: total))
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
                        l.hits = variants.map { v in
                            cache.get(key: FeatureCache.key(contentHash: l.hash, extractor: digest,
                                                            preprocessing: preprocessingKey, variant: v.0))
                        }
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
                    for (v, (variant, aug)) in variants.enumerated() {
                        let slot = index * variants.count + v
                        if let f = l.hits[v] {
                            slots[slot] = Featured(item: item, sha256: l.hash, features: f)
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
                        slots[slot] = Featured(item: item, sha256: l.hash, features: [])
                        let key = FeatureCache.key(contentHash: l.hash, extractor: digest, preprocessing: preprocessingKey,
                                                   variant: variant)
                        pending.append((slot, try extractor.preprocessor.process(image), key))
                        if pending.count == 32 { try flush() }
                    }
                }
                start += chunk.count
            }
            try flush()
            emit(.progressFinished(label: stage))
            return slots.compactMap { $0 }
        }
        let plain: [(String, Augmentation?)] = [("none", nil)]
        let augmented = plain + p.augmentations.map { ($0.variant(seed: p.seed), $0) }
        let train = try featurize(trainItems, variants: augmented, label: "train")
        let validation = try featurize(validationItems, variants: plain, label: "validation")
        let holdout = try featurize(holdoutItems, variants: plain, label: "holdout")
        return Extraction(train: train, validation: validation, holdout: holdout, failures: failures,
                          failedPaths: failedPaths, failedItems: failedItems, extracted: extractedCount,
                          seconds: Date().timeIntervalSince(extractStart))
    }
}
