import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolFormat
import MLToolTrain

/// `mltool train` for images: data → splits → cached features → logistic-regression head → one model file.
struct ImageTraining {
    let args: ParsedArguments
    let quiet: Bool
    let seed: UInt64

    init(args: ParsedArguments) throws {
        self.args = args
        quiet = args.has("--quiet")
        let s = try args.int("--seed", default: 42)
        guard s >= 0 else { throw CLIError.usage(command: "train", message: "--seed must be ≥ 0") }
        seed = UInt64(s)
    }

    /// An item with its features and the content hash recorded in the split manifest.
    struct Featured {
        var item: ImageItem
        var sha256: String
        var features: [Float]
    }

    func run() throws {
        let started = Date()
        let dataPath = args.positionals[0]
        let out = args.string("--out") ?? "model.bin"
        let pathColumn = args.string("--path-column") ?? "path", labelColumn = args.string("--label-column") ?? "label"
        let dataset = try ImageDataset.load(dataPath, pathColumn: pathColumn, labelColumn: labelColumn)
        for w in try dataset.preflight() { note("mltool: warning: \(w)") }
        let testSet = try args.string("--test").map { try ImageDataset.load($0, pathColumn: pathColumn, labelColumn: labelColumn) }
        if let t = testSet {
            let unknown = Set(t.items.map(\.label)).subtracting(dataset.labels)
            if !unknown.isEmpty {
                throw CLIError.badInput(file: t.source, reason: "labels not in the training data: \(unknown.sorted().joined(separator: ", "))")
            }
        }
        let augment = try args.string("--augment").map { try Augmentation.parseList($0) } ?? []
        let extractor = try Extractor(explicit: args.string("--extractor"), featureLayer: args.string("--feature-layer"),
                                      threads: try args.int("--threads", default: 0))

        // Splits: holdout first (kept out of everything), then validation from the rest.
        var trainItems = dataset.items
        var holdoutItems = [ImageItem]()
        if let t = testSet {
            holdoutItems = t.items
        } else {
            let fraction = try args.double("--holdout", default: 0.2)
            guard fraction >= 0, fraction < 1 else { throw CLIError.usage(command: "train", message: "--holdout must be in [0, 1)") }
            if fraction > 0 {
                let split = try DataSplit.stratified(dataset.items, fraction: fraction, seed: seed)
                trainItems = split.train; holdoutItems = split.held
            }
        }
        let rule = try ValidationRule.parse(args.string("--validation") ?? "auto")
        var validationItems = [ImageItem]()
        let vf = rule.fraction(count: trainItems.count)
        if vf > 0 {
            let split = try DataSplit.stratified(trainItems, fraction: vf, seed: seed &+ 1)
            trainItems = split.train; validationItems = split.held
        }

        // Features.
        let extractStart = Date()
        var extractedCount = 0
        let cache = FeatureCache(directory: FeatureCache.defaultDirectory())
        var failures = [DataError]()
        var failedPaths = Set<String>()
        let maxPixels = try args.int("--max-pixels", default: ImageDecoder.defaultMaxPixels)
        let digest = extractor.digest
        // The tool version is part of the key: a release whose kernels round differently never mixes its
        // features with an older release's cached ones.
        let preprocessingKey = extractor.preprocessor.digest + "|" + extractor.featureTensor + "|mltool " + MLTool.version
        /// What the parallel look-up pass learns about one file: its content hash and the cached features of each
        /// variant (nil: a miss), or why it could not be read.
        struct Lookup: Sendable {
            var hash = ""
            var error: DataError?
            var hits: [[Float]?] = []
        }
        func featurize(_ items: [ImageItem], variants: [(String, Augmentation?)], label: String) throws -> [Featured] {
            // One slot per (item, variant) in data set order, so the result never depends on what was cached.
            var slots = [Featured?](repeating: nil, count: items.count * variants.count)
            var pending = [(slot: Int, input: [Float], key: String)]()
            let progress = Progress("extracting \(label)", total: items.count * variants.count, quiet: quiet)
            func flush() throws {
                let feats = try extractor.features(pending.map(\.input))
                for (p, f) in zip(pending, feats) {
                    try cache.put(key: p.key, features: f)
                    slots[p.slot]?.features = f
                }
                extractedCount += pending.count
                progress.advance(pending.count)
                pending.removeAll(keepingCapacity: true)
            }
            var start = 0
            while start < items.count {
                // Reading, hashing and cache look-ups run on every core, a bounded chunk at a time (no pixels kept).
                let chunk = Array(items[start..<min(items.count, start + 256)])
                var lookups = [Lookup](repeating: Lookup(), count: chunk.count)
                lookups.withUnsafeMutableBufferPointer { buffer in
                    nonisolated(unsafe) let out = buffer.baseAddress!
                    DispatchQueue.concurrentPerform(iterations: chunk.count) { i in
                        var l = Lookup()
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
                        out[i] = l
                    }
                }
                for (offset, item) in chunk.enumerated() {
                    let index = start + offset, l = lookups[offset]
                    if let e = l.error { try record(e, item.path); continue }
                    var decoded: RGBImage?
                    for (v, (variant, aug)) in variants.enumerated() {
                        let slot = index * variants.count + v
                        if let f = l.hits[v] {
                            slots[slot] = Featured(item: item, sha256: l.hash, features: f)
                            progress.advance()
                            continue
                        }
                        do {
                            if decoded == nil { decoded = try ImageDecoder.decode(path: item.path, maxPixels: maxPixels) }
                        } catch let e as DataError {
                            try record(e, item.path); break
                        }
                        guard var image = decoded else { break }
                        if let a = aug { image = a.apply(to: image, seed: seed &+ UInt64(index) &* 7919) }
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
            progress.finish()
            return slots.compactMap { $0 }
        }
        func record(_ e: DataError, _ path: String) throws {
            if args.has("--strict") { throw e }
            failures.append(e)
            failedPaths.insert(path)
        }
        let plain: [(String, Augmentation?)] = [("none", nil)]
        let augmented = plain + augment.map { ($0.variant(seed: seed), $0) }
        var train = try featurize(trainItems, variants: augmented, label: "train")
        var validation = try featurize(validationItems, variants: plain, label: "validation")
        let holdout = try featurize(holdoutItems, variants: plain, label: "holdout")
        if !failures.isEmpty {
            note("mltool: \(failures.count) image\(failures.count == 1 ? "" : "s") skipped:")
            for f in failures.prefix(20) { note("  \(f.description)") }
            if failures.count > 20 { note("  … and \(failures.count - 20) more") }
            try dataset.checkBadImages(failures)
        }
        if !failedPaths.isEmpty { _ = try dataset.preflight(unusable: failedPaths) }
        let extractSeconds = Date().timeIntervalSince(extractStart)
        if !quiet {
            note(String(format: "features: %d extracted, %d from cache, %.1f s", extractedCount,
                        train.count + validation.count + holdout.count - extractedCount, extractSeconds))
        }

        // The head.
        let labels = dataset.labels
        let labelIndex = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        guard let width = train.first?.features.count, width > 0 else {
            throw CLIError.badInput(file: dataPath, reason: "no usable training images")
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
        options.l2 = try CLI.l2Option(args)
        options.maxIterations = try args.int("--max-iterations", default: options.maxIterations)
        options.balanceClasses = args.has("--balance")
        // Converged fits generalise better here than early-stopped ones (measured on Fashion-MNIST small: the
        // validation split is small and noisy), so early stopping is opt-in.
        options.earlyStoppingPatience = try args.string("--early-stopping").map { _ in try args.int("--early-stopping", default: 20) }
        options.l2Grid = [1, 0.3, 0.1, 0.03, 0.01, 1e-3]
        // scikit-learn's default `tol` on the same ‖∇J‖∞: on Fashion-MNIST small 1e-5 took 64 iterations instead of
        // 37 for the same holdout accuracy (0.865 at l2 5e-4).
        options.tolerance = 1e-4
        if !quiet { note("  l2        iter        loss   train acc   valid acc   seconds") }
        let progress: ((IterationRecord) -> Void)? = quiet ? nil : { r in
            guard r.iteration % 10 == 0 else { return }
            note(String(format: "  %-8.0e  %4d  %10.5f  %10.4f  %10@  %7.2f", r.l2, r.iteration, r.loss, r.trainAccuracy,
                        r.validationAccuracy.map { String(format: "%.4f", $0) } ?? "-", r.elapsed))
        }
        options.selection = .logLoss
        let fullIterations = options.maxIterations
        let refitting = options.l2 == .auto && !validation.isEmpty
        // Choosing the strength needs the validation loss of each candidate, not a fully converged fit: the
        // search stops each candidate early and the refit below converges.
        // Warm-started along the path, each value's loss is flat to 1e-5 within ~20 iterations (Fashion-MNIST small).
        if refitting { options.maxIterations = min(fullIterations, 25) }
        var fitted = try LogisticRegression.fit(
            x: x, rows: nTrain, cols: width, labels: yTrain, classes: labels.count, validation: validationData,
            options: options, progress: progress)
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
        md.name = URL(fileURLWithPath: out).deletingPathExtension().lastPathComponent
        md.outputKind = "probabilities"
        md.featureTensor = extractor.featureTensor
        md.image = extractor.preprocessing
        md.metrics = metrics
        md.provenance = Provenance(sources: [Provenance.Source(path: extractor.path, sha256: extractor.digest)], seed: seed,
                                   command: "mltool train " + CommandLine.arguments.dropFirst(2).joined(separator: " "))
        let root = (URL(fileURLWithPath: testSet?.source ?? dataset.source).path as NSString).standardizingPath
        md.split = SplitManifest(
            root: root,
            holdout: holdout.map { SplitManifest.Item(path: Self.relative($0.item.path, to: root), label: $0.item.label, sha256: $0.sha256) },
            trainCount: train.count, validationCount: validation.count, seed: seed)
        let model = Model(metadata: md, tensors: tensors + [
            StoredTensor(name: "head.mean", tensor: Tensor(shape: [width], data: standardizer.mean)),
            StoredTensor(name: "head.inverseStd", tensor: Tensor(shape: [width], data: standardizer.std.map { 1 / $0 })),
            StoredTensor(name: "head.weights", tensor: Tensor(shape: [width, labels.count], data: head.weights)),
            StoredTensor(name: "head.bias", tensor: Tensor(shape: [labels.count], data: head.bias)),
        ])
        let inputs = dataset.items.map(\.path) + holdoutItems.map(\.path) + [extractor.path]
        try ModelFile.write(model, to: out, inputs: inputs)

        // Summary on stdout.
        func pct(_ v: Double?) -> String { v.map { String(format: "%.4f", $0) } ?? "-" }
        print("trained \(labels.count) classes on \(train.count) images (\(validation.count) validation, \(holdout.count) holdout)")
        print("  accuracy   train \(pct(metrics["train.accuracy"])), validation \(pct(metrics["validation.accuracy"])), holdout \(pct(metrics["holdout.accuracy"]))")
        print(String(format: "  l2 %.0e, %d iterations (%@)", head.chosenL2, head.iterations, head.stopReason.rawValue))
        print(String(format: "  seconds    features %.1f (%d extracted), head %.2f, total %.1f", extractSeconds, extractedCount,
                     fitSeconds, Date().timeIntervalSince(started)))
        print("  wrote      \(out)")
    }

    /// `path` relative to `root` when it lies below it, else absolute.
    static func relative(_ path: String, to root: String) -> String {
        let abs = (URL(fileURLWithPath: path).path as NSString).standardizingPath
        return abs.hasPrefix(root + "/") ? String(abs.dropFirst(root.count + 1)) : abs
    }
}
