import Foundation
import MLToolAudio
import MLToolCore
import MLToolData
import MLToolTrain

/// Trains a sound classifier (Create ML's `MLSoundClassifier`): label folders of recordings → splits (holdout, then
/// validation) → the frozen speech embedding over each recording's windows (cached) → a logistic-regression head on
/// the windows (one row each, its recording's label). Stages: split → for each windowing of `parameters.windowings`,
/// extract and fit, scored by the validation recordings' log-loss (a recording's probabilities: the mean of its
/// windows') → refit the chosen windowing and L2 on training + validation recordings → holdout → assemble (the
/// embedding's graph + standardisation + head, the windowing in `sound`, the holdout recorded).
public struct SoundClassifierTrainer: CancellableTrainer {
    public var data: TrainingData
    /// Held-out test data; nil holds out `parameters.holdoutFraction` of `data` instead.
    public var testData: TrainingData?
    /// Validation recordings instead of a split of `data` (nil: `parameters.validationData`, else the split).
    public var validationData: TrainingData?
    public var parameters: SoundClassifierParameters

    public init(data: TrainingData, testData: TrainingData? = nil, validationData: TrainingData? = nil,
                parameters: SoundClassifierParameters = .init()) {
        self.data = data; self.testData = testData; self.parameters = parameters
        self.validationData = validationData ?? parameters.validationData.map {
            .path($0, pathColumn: data.pathColumn, labelColumn: data.labelColumn)
        }
    }

    /// Trains, reporting `progress`; stops with `CancellationError` when `cancellation` is cancelled.
    public func train(progress: ((PipelineEvent) -> Void)? = nil, cancellation: Cancellation = Cancellation()) throws -> TrainingResult {
        let started = Date()
        let p = parameters
        let emit = progress ?? { _ in }
        guard let fallback = p.windowings.first else {
            throw PipelineError.invalidParameter(name: "windowings", reason: "no windowing to try")
        }
        let (dataset, testSet) = (try Self.dataset(data), try testData.map(Self.dataset))
        let validationSet = try validationData.map(Self.dataset)
        for w in try dataset.preflight() { emit(.warning(w)) }
        for t in [testSet, validationSet].compactMap({ $0 }) { try Self.checkLabels(t, known: dataset.labels) }
        let features = try SoundFeatures(explicit: p.embedding, threads: p.threads, cacheDirectory: p.cacheDirectory)
        let (trainItems, validationItems, holdoutItems) = try split(dataset, testSet: testSet, validationSet: validationSet)
        let labelIndex = Dictionary(dataset.labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let classes = dataset.labels.count

        /// The clips of `items` cut by `w`: the unreadable ones skipped and named (once, on the first pass).
        var reported = Set<String>(), failures = [(path: String, error: Error)]()
        let total = dataset.items.count + (testSet?.items.count ?? 0) + (validationSet?.items.count ?? 0)
        func clips(_ items: [ImageItem], _ w: SoundClassifierParameters.Windowing, _ stage: String) throws -> Clips {
            let r = try features.embed(items.map(\.path), w, cancellation: cancellation) {
                emit(.progress(label: stage, advanced: $0, total: $1))
            }
            emit(.progressFinished(label: stage))
            let failed = r.failures.filter { !reported.contains($0.path) }
            reported.formUnion(failed.map(\.path))
            failures += failed
            try checkFailures(failures, new: failed.count, of: total, source: dataset.source, emit: emit)
            var out = Clips()
            for (e, item) in zip(r.embeddings, items) {
                guard let e else { continue }
                out.embeddings.append(e)
                out.labels.append(labelIndex[item.label] ?? 0)
            }
            return out
        }

        // The windowing and the L2, on the validation recordings.
        let featureStart = Date()
        var best: (windowing: SoundClassifierParameters.Windowing, head: Head, train: Clips, validation: Clips, score: Score)?
        for w in validationItems.isEmpty ? [fallback] : p.windowings {
            let train = try clips(trainItems, w, "extracting train"), validation = try clips(validationItems, w, "extracting validation")
            guard !train.labels.isEmpty else { throw PipelineError.badInput(file: dataset.source, reason: "no usable training recordings") }
            let head = try fitHead(train: train, validation: validation, classes: classes, options: headOptions, emit: emit)
            let score = try head.score(validation) ?? Score(accuracy: 0, logLoss: .infinity)
            if !validation.labels.isEmpty {
                emit(.status(String(format: "windowing %@: validation accuracy %.4f, log-loss %.4f", w.description, score.accuracy, score.logLoss)))
            }
            if best.map({ score.isBetter(than: $0.score) }) ?? true { best = (w, head, train, validation, score) }
        }
        guard let chosen = best else { throw PipelineError.invalidParameter(name: "windowings", reason: "no windowing to try") }
        let featureSeconds = Date().timeIntervalSince(featureStart)
        try cancellation.check()

        // The refit on training + validation recordings with the chosen strength.
        let fitStart = Date()
        let head = try refit(chosen.head, train: chosen.train, validation: chosen.validation, classes: classes, emit: emit)
        let holdout = try clips(holdoutItems, chosen.windowing, "extracting holdout")
        var metrics = [String: Double]()
        metrics["train.accuracy"] = try head.score(chosen.train)?.accuracy
        metrics["validation.accuracy"] = try chosen.head.score(chosen.validation)?.accuracy
        metrics["holdout.accuracy"] = try head.score(holdout)?.accuracy
        metrics["l2"] = head.model.chosenL2
        let fitSeconds = Date().timeIntervalSince(fitStart)

        let usable = holdoutItems.filter { !reported.contains($0.path) }
        let model = try assemble(features, head: head, labels: dataset.labels, windowing: chosen.windowing, metrics: metrics,
                                 holdout: usable, source: testSet?.source ?? dataset.source,
                                 counts: (chosen.train.labels.count, chosen.validation.labels.count))
        return TrainingResult(
            model: model, metrics: metrics, trainCount: chosen.train.labels.count, validationCount: chosen.validation.labels.count,
            holdoutCount: holdout.labels.count, l2: head.model.chosenL2, iterations: head.model.iterations,
            stopReason: head.model.stopReason, extractedCount: 0, featureSeconds: featureSeconds, fitSeconds: fitSeconds,
            totalSeconds: Date().timeIntervalSince(started),
            inputs: dataset.items.map(\.path) + holdoutItems.map(\.path) + [features.path])
    }

    /// Test or validation recordings hold no label the training data lacks.
    private static func checkLabels(_ t: ImageDataset, known: [String]) throws {
        let unknown = Set(t.items.map(\.label)).subtracting(known)
        if !unknown.isEmpty {
            throw PipelineError.badInput(file: t.source, reason: "labels not in the training data: \(unknown.sorted().joined(separator: ", "))")
        }
    }

    /// With validation recordings, `head` refitted on training + validation recordings with its strength.
    private func refit(_ chosen: Head, train: Clips, validation: Clips, classes: Int, emit: @escaping (PipelineEvent) -> Void) throws -> Head {
        guard !validation.labels.isEmpty else { return chosen }
        var refit = headOptions
        refit.l2 = .fixed(chosen.model.chosenL2)
        var head = try fitHead(train: train + validation, validation: Clips(), classes: classes, options: refit, emit: emit)
        head.model.validationAccuracy = chosen.model.validationAccuracy
        return head
    }

    /// The audio files of a label-folder tree or table (other files are left out).
    static func dataset(_ data: TrainingData) throws -> ImageDataset {
        var d = try data.imageDataset()
        d.items = d.items.filter { SoundFeatures.isAudio($0.path) }
        return d
    }

    /// Recordings that could not be read so far (the last `new` of them not yet named): named one by one, an error
    /// past 10 % of the `total` recordings (training and test data), or at the first with `strict`.
    func checkFailures(_ failures: [(path: String, error: Error)], new: Int, of total: Int, source: String,
                       emit: (PipelineEvent) -> Void) throws {
        guard let first = failures.first, new > 0 else { return }
        if parameters.strict { throw first.error }
        for f in failures.suffix(new) { emit(.warning("skipped: \((f.error as? MLToolError)?.description ?? "\(f.path): \(f.error)")")) }
        guard failures.count * 100 > total * 10 else { return }
        let text = (first.error as? MLToolError)?.description ?? "\(first.error)"
        throw PipelineError.badInput(file: source, reason: "\(failures.count) of \(total) recordings could not be decoded (more than 10%); first: \(text)")
    }

    /// Holdout first (kept out of everything; the test data when given), then validation from the rest (the
    /// validation data when given): stratified, seeded.
    func split(_ dataset: ImageDataset, testSet: ImageDataset?, validationSet: ImageDataset?) throws
        -> (train: [ImageItem], validation: [ImageItem], holdout: [ImageItem]) {
        let p = parameters
        var train = dataset.items, holdout = testSet?.items ?? []
        if testSet == nil {
            guard p.holdoutFraction >= 0, p.holdoutFraction < 1 else {
                throw PipelineError.invalidParameter(name: "holdoutFraction", reason: "--holdout must be in [0, 1)")
            }
            if p.holdoutFraction > 0 {
                let s = try DataSplit.stratified(dataset.items, fraction: p.holdoutFraction, seed: p.seed)
                (train, holdout) = (s.train, s.held)
            }
        }
        var validation = validationSet?.items ?? []
        let vf = validationSet == nil ? p.validation.fraction(count: train.count) : 0
        if vf > 0 {
            let s = try DataSplit.stratified(train, fraction: vf, seed: p.seed &+ 1)
            (train, validation) = (s.train, s.held)
        }
        return (train, validation, holdout)
    }

    /// The command line that does this training, recorded in the model's provenance.
    func command() -> String {
        var s = SoundClassificationTask.Setup(data: data.location ?? "<memory>", test: testData.map { $0.location ?? "<memory>" },
                                              parameters: parameters)
        s.pathColumn = data.pathColumn; s.labelColumn = data.labelColumn
        return s.command(SoundClassificationTask.options)
    }
}
