import Foundation
import MLToolCore
import MLToolData
import MLToolTrain

/// Trains a text classifier (Create ML's `MLTextClassifier`): documents → splits → word (and optional character)
/// n-gram features weighted by TF-IDF (or counts, binary, hashed) → max-entropy (multinomial logistic regression
/// with L2) fitted by seeded SGD and optional L-BFGS → one model holding the tokenizer settings, vocabulary, idf
/// and weights, so that `TextClassifier` works on raw strings. Stages: load → split → corpus → vocabulary →
/// vectorize → search (L2 on the validation split) → refit (training + validation) → metrics → assemble.
public struct TextClassifierTrainer: CancellableTrainer {
    public var data: TrainingData
    /// Held-out test data; nil holds out `parameters.holdoutFraction` of `data` instead.
    public var testData: TrainingData?
    public var parameters: TextClassifierParameters

    public init(data: TrainingData, testData: TrainingData? = nil, parameters: TextClassifierParameters = .init()) {
        self.data = data; self.testData = testData; self.parameters = parameters
    }

    /// Trains, reporting `progress`; stops with `CancellationError` when `cancellation` (or the current task) is
    /// cancelled.
    public func train(progress: ((PipelineEvent) -> Void)? = nil, cancellation: Cancellation = Cancellation()) throws -> TrainingResult {
        let started = Date()
        let emit = progress ?? { _ in }
        var lap = started
        func phase(_ name: String) {
            let now = Date()
            emit(.phase(name, seconds: now.timeIntervalSince(lap)))
            lap = now
        }
        let (dataset, testSet) = try load(emit: emit)
        // The features follow the documents' length (`TextClassifierParameters.shortTexts`).
        let resolved = parameters.resolvingShortTexts(dataset.items.map(\.text))
        phase("load")
        if let t = testSet { try Self.checkTestSet(t, labels: dataset.labels, emit: emit) }
        try cancellation.check()

        let (train, validation, holdout) = try Self.split(dataset, testSet: testSet, parameters)

        // Features and the head: the resolved feature set, or for short texts both, the validation split choosing.
        let labels = dataset.labels
        let labelIndex = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        func y(_ items: [TextItem]) -> [Int] { items.map { labelIndex[$0.label] ?? 0 } }
        let options = try Self.headOptions(parameters, trainCount: train.count, validating: !validation.isEmpty)
        emit(.fitStarted)
        let fitStart = Date()
        let refits = options.l2 == .auto && !validation.isEmpty
        let splits = Splits(train: train, validation: validation, holdout: holdout, trainLabels: y(train),
                            validationLabels: y(validation))
        var candidates = [resolved.parameters]
        if resolved.short && parameters.shortTexts == .auto && !validation.isEmpty { candidates.append(parameters) }
        let embeddings = try Self.embeddingCandidates(parameters, splits, medianWords: resolved.medianWords,
                                                      cancellation: cancellation, emit: emit, phase: phase)
        var fits = [FeatureFit]()
        for c in candidates {
            fits += try embeddings.map { e in
                try cancellation.check()
                return try Self.fitFeatures(c, splits, embedded: e, classes: labels.count, options: options, refits: refits,
                                            source: data.location ?? dataset.source, emit: emit, phase: phase)
            }
        }
        let chosen = Self.choose(fits)
        if resolved.short || fits.count > candidates.count {
            emit(.note(Self.shortTextNote(fits, chosen: chosen, medianWords: resolved.medianWords)))
        }
        let fit = fits[chosen], featureSeconds = fits.map(\.featureSeconds).reduce(0, +)
        fits = []
        let final = try Self.refit(fit, splits, options: refits ? options : nil, yAll: y(train + validation), classes: labels.count,
                                   source: testSet?.source ?? dataset.source)
        let head = final.head
        let fitSeconds = Date().timeIntervalSince(fitStart)
        phase("refit")

        var metrics = try Self.metrics(head, labels: labels, train: refits ? nil : (train, fit.fitMatrix),
                                       holdout: (holdout, final.holdoutMatrix))
        metrics["validation.accuracy"] = head.validationAccuracy
        phase("metrics")

        // The model: no graph; the text section names the tensors.
        var md = ModelMetadata(task: .textClassifier, labels: labels)
        md.name = fit.parameters.name
        md.outputKind = "probabilities"
        md.text = fit.config
        md.metrics = metrics
        md.provenance = Provenance(seed: fit.parameters.seed, command: command())
        md.split = final.manifest
        let d = fit.rows.featureCount
        var tensors = Self.tensors(fit.config, head: head, features: d, classes: labels.count, idf: fit.fitted.idf,
                                   vocabulary: final.vocabularyBytes)
        var inputs = [dataset.source] + (testSet.map { [$0.source] } ?? [])
        if let e = fit.rows.embedded, let block = fit.rows.block {
            try Self.attach(e.source, block, to: &md, tensors: &tensors)
            inputs.append(e.source.path)
        }
        return TrainingResult(
            model: Model(metadata: md, tensors: tensors), metrics: metrics, trainCount: train.count,
            validationCount: validation.count, holdoutCount: holdout.count, l2: head.chosenL2,
            iterations: head.iterations, stopReason: head.stopReason, extractedCount: fit.rows.embedded?.encoded ?? 0,
            featureSeconds: featureSeconds,
            fitSeconds: fitSeconds, totalSeconds: Date().timeIntervalSince(started), featureCount: d, inputs: inputs)
    }

    /// The training and test files, read side by side; a problem in the training data is reported first.
    private func load(emit: (PipelineEvent) -> Void) throws -> (TextDataset, TextDataset?) {
        _ = try parameters.textConfig()  // bad settings fail before any file is read
        let (data, testData) = (self.data, self.testData)
        let (dataset, testSet) = try Parallel.both({ try data.textDataset() }, { try testData.map { try $0.textDataset() } })
        if dataset.skippedEmpty > 0 { emit(.skippedDocuments(source: dataset.source, count: dataset.skippedEmpty)) }
        for w in try dataset.preflight() { emit(.warning(w)) }
        return (dataset, testSet)
    }

    /// Test data holds no label the training data lacks.
    private static func checkTestSet(_ t: TextDataset, labels: [String], emit: (PipelineEvent) -> Void) throws {
        if t.skippedEmpty > 0 { emit(.skippedDocuments(source: t.source, count: t.skippedEmpty)) }
        let unknown = Set(t.items.map(\.label)).subtracting(labels)
        if !unknown.isEmpty {
            throw PipelineError.badInput(file: t.source, reason: "labels not in the training data: \(unknown.sorted().joined(separator: ", "))")
        }
    }

    /// The chosen fit's head, refitted (when `options`, the search's) at its strength on training + validation
    /// documents; and, beside it, the holdout rows, the split manifest and the vocabulary bytes.
    private static func refit(_ fit: FeatureFit, _ s: Splits, options: LogisticRegressionOptions?, yAll: [Int], classes: Int,
                              source: String) throws
        -> (head: LogisticRegressionModel, holdoutMatrix: CSRMatrix?, manifest: SplitManifest, vocabularyBytes: [UInt8]) {
        let refits = options != nil
        var head = fit.head
        let trainCount = refits ? s.train.count + s.validation.count : s.train.count
        let holdoutRows = Array((s.train.count + s.validation.count)..<fit.corpus.documentCount)
        // The refit on one core; the holdout rows, the split manifest and the vocabulary bytes on the other.
        var refit = options
        refit?.l2 = .fixed(head.chosenL2)
        let refitOptions = refit, fitMatrix = fit.fitMatrix, rows = fit.rows, fitted = fit.fitted
        let validationCount = s.validation.count, seed = fit.parameters.seed
        let heldOut = s.holdout
        let storeVocabulary = fit.config.vocabularyTensor != nil
        let (refitted, (holdoutMatrix, manifest, vocabularyBytes)) = try Parallel.both({ () -> LogisticRegressionModel? in
            guard let refitOptions else { return nil }
            // The validation split chose the strength; the final model learns from training + validation documents.
            return try LogisticRegression.fit(sparse: fitMatrix, labels: yAll, classes: classes, validation: nil,
                                              options: refitOptions, progress: nil)
        }, {
            (holdoutRows.isEmpty ? nil : rows.matrix(holdoutRows),
             try Self.manifest(heldOut, source: source, trainCount: trainCount, validationCount: validationCount,
                               seed: seed),
             storeVocabulary ? fitted.vocabularyBytes() : [])
        })
        if var refitted {
            refitted.validationAccuracy = head.validationAccuracy
            head = refitted
        }
        return (head, holdoutMatrix, manifest, vocabularyBytes)
    }

    /// Holdout first (kept out of everything; none with test data), then validation from the rest: stratified, seeded.
    static func split(_ dataset: TextDataset, testSet: TextDataset?, _ p: TextClassifierParameters) throws
        -> (train: [TextItem], validation: [TextItem], holdout: [TextItem]) {
        var train = dataset.items, holdout = testSet?.items ?? []
        if testSet == nil {
            guard p.holdoutFraction >= 0, p.holdoutFraction < 1 else {
                throw PipelineError.invalidParameter(name: "holdoutFraction", reason: "--holdout must be in [0, 1)")
            }
            if p.holdoutFraction > 0 {
                let split = try DataSplit.stratified(labels: train.map(\.label), fraction: p.holdoutFraction, seed: p.seed)
                (train, holdout) = (split.train.map { dataset.items[$0] }, split.held.map { dataset.items[$0] })
            }
        }
        var validation = [TextItem]()
        let vf = p.validation.fraction(count: train.count)
        if vf > 0 {
            let all = train
            let split = try DataSplit.stratified(labels: all.map(\.label), fraction: vf, seed: p.seed &+ 1)
            (train, validation) = (split.train.map { all[$0] }, split.held.map { all[$0] })
        }
        return (train, validation, holdout)
    }

    /// The head's settings: λ = c/n for each c of `l2Factors`, ranked by validation log-loss.
    static func headOptions(_ p: TextClassifierParameters, trainCount: Int, validating: Bool) throws -> LogisticRegressionOptions {
        var options = LogisticRegressionOptions()
        options.l2 = p.l2
        options.sgdEpochs = p.epochs
        options.maxIterations = p.maxIterations
        guard options.sgdEpochs >= 0, options.maxIterations >= 0, options.sgdEpochs + options.maxIterations > 0 else {
            throw PipelineError.invalidParameter(name: "epochs", reason: "--epochs and --max-iterations must be ≥ 0, not both 0")
        }
        options.seed = p.seed
        options.lossTolerance = p.lossTolerance
        options.balanceClasses = p.balanceClasses
        options.earlyStoppingPatience = p.earlyStoppingPatience
        options.l2Grid = p.l2Factors.map { $0 / Double(max(trainCount, 1)) }
        // With no validation split (under 50 documents, or --validation none) there is nothing to rank on: `auto`
        // takes the first, stronger factor. On the ten training sets of bench/short_texts.py the validation split
        // chose c = 0.1 five times and 0.01 five times (0.01 on the long descriptions at every size), so neither wins
        // in general; the stronger is the safer guess for the few documents that have no validation split.
        if options.l2 == .auto && !validating, let first = options.l2Grid.first { options.l2 = .fixed(first) }
        options.selection = .logLoss
        return options
    }

    /// Train and holdout accuracy through the model on the rows predict would compute (the same bits as
    /// `vectorizer.transform`); `train` nil after a refit, which measured it on training + validation documents.
    static func metrics(_ head: LogisticRegressionModel, labels: [String], train: ([TextItem], CSRMatrix)?,
                        holdout: ([TextItem], CSRMatrix?)) throws -> [String: Double] {
        let labelIndex = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        func accuracy(_ items: [TextItem], _ matrix: CSRMatrix?) throws -> Double? {
            guard !items.isEmpty, let matrix else { return nil }
            let probabilities = try head.probabilities(sparse: matrix)
            let k = labels.count
            var correct = 0
            for (i, item) in items.enumerated() {
                // Metrics.argmax (the first largest) on the row in place, without a copy per document.
                var best = 0
                for c in 1..<max(k, 1) where probabilities[i * k + c] > probabilities[i * k + best] { best = c }
                if best == labelIndex[item.label] { correct += 1 }
            }
            return Double(correct) / Double(items.count)
        }
        var metrics = [String: Double]()
        if let (items, matrix) = train {
            metrics["train.accuracy"] = try accuracy(items, matrix)
        } else {
            metrics["train.accuracy"] = head.trainAccuracy
        }
        metrics["holdout.accuracy"] = try accuracy(holdout.0, holdout.1)
        metrics["l2"] = head.chosenL2
        return metrics
    }

    /// The model's tensors: vocabulary (unless hashed), idf (tf-idf), weights [d, k] and bias.
    static func tensors(_ config: TextConfig, head: LogisticRegressionModel, features d: Int, classes k: Int, idf: [Float],
                        vocabulary: [UInt8]) -> [StoredTensor] {
        var tensors = [StoredTensor]()
        if let name = config.vocabularyTensor {
            tensors.append(StoredTensor(name: name, dtype: .u8, shape: [vocabulary.count], bytes: TensorBytes(copying: vocabulary)))
        }
        if let name = config.idfTensor { tensors.append(StoredTensor(name: name, tensor: Tensor(shape: [idf.count], data: idf))) }
        tensors.append(StoredTensor(name: config.weightsTensor, tensor: Tensor(shape: [d, k], data: head.weights)))
        tensors.append(StoredTensor(name: config.biasTensor, tensor: Tensor(shape: [k], data: head.bias)))
        return tensors
    }

    /// The command line that does this training, recorded in the model's provenance (see
    /// `ImageClassifierTrainer.command`).
    func command() -> String {
        var s = TextClassificationTask.Setup(data: data.location ?? "<memory>", test: testData.map { $0.location ?? "<memory>" },
                                             parameters: parameters)
        s.textColumn = data.textColumn; s.labelColumn = data.labelColumn
        return s.command(TextClassificationTask.options)
    }

    /// The holdout as evaluation finds it again: files relative to the folder (hashed as bytes), table rows as
    /// "data.csv#row=N" relative to the table's folder (hashed as the document text).
    static func manifest(_ holdout: [TextItem], source: String, trainCount: Int, validationCount: Int,
                         seed: UInt64) throws -> SplitManifest {
        let abs = URL(fileURLWithPath: source).standardized.path
        var isDirectory: ObjCBool = false
        let root = FileManager.default.fileExists(atPath: abs, isDirectory: &isDirectory) && isDirectory.boolValue
            ? abs : (abs as NSString).deletingLastPathComponent
        // Table rows share one path: resolve each distinct path once (standardizing a path costs ~0.1 ms).
        var relative: [String: String] = [:]
        let items = try holdout.map { item -> SplitManifest.Item in
            let path = relative[item.path] ?? SplitManifest.relative(item.path, to: root)
            relative[item.path] = path
            if let row = item.row {
                return SplitManifest.Item(path: "\(path)#row=\(row)", label: item.label, sha256: SHA256.hex(Array(item.text.utf8)))
            }
            return SplitManifest.Item(path: path, label: item.label, sha256: try SHA256.hex(fileAt: item.path))
        }
        return SplitManifest(root: root, holdout: items, trainCount: trainCount, validationCount: validationCount, seed: seed)
    }
}

/// Running two pieces of work side by side.
enum Parallel {
    /// Runs `a` and `b` side by side (one thread each when two cores are free) and returns both results; an error
    /// of `a` is thrown first.
    static func both<A, B>(_ a: @Sendable () throws -> A, _ b: @Sendable () throws -> B) throws -> (A, B) {
        let ra = Slots<Result<A, Error>>(count: 1), rb = Slots<Result<B, Error>>(count: 1)
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            if i == 0 { ra.set(0, Result { try a() }) } else { rb.set(0, Result { try b() }) }
        }
        guard let x = ra.values.first, let y = rb.values.first else {
            throw PipelineError.notSupported("internal: a concurrent task did not run")
        }
        return (try x.get(), try y.get())
    }
}
