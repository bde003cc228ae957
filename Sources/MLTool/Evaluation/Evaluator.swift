import Foundation
import MLToolCore
import MLToolData
import MLToolEval

/// Evaluates one model, or compares two, on the holdout recorded in the first (re-hashed) or on other labelled
/// data: accuracy, top-k, log-loss, per-class precision/recall/F1 and the confusion matrix (equal to
/// scikit-learn's), and for two models their top-1 agreement, mean KL divergence and the items they disagree on.
public struct Evaluator: Sendable {
    public struct Parameters: Sendable {
        /// Top-k accuracy is reported for this k.
        public var topK = 5
        /// Threads for image models (0: all cores).
        public var threads = 0
        /// Evaluate on the recorded holdout files that remain when some are missing (else: an error).
        public var skipMissing = false
        public init() {}
    }

    /// What an evaluation found.
    public struct Outcome: Sendable {
        public var models: [Model]
        public var modelPaths: [String]
        public var items: [LabeledItem]
        public var truth: [Int]
        /// One n × classes row-major matrix per model.
        public var probabilities: [[Float]]
        public var reports: [EvaluationReport]
        public var comparison: ModelComparison?
        /// "recorded holdout" or the data path.
        public var source: String
        public var dataPath: String?
        /// Recorded holdout items that could not be used (with `skipMissing`).
        public var skipped: Evaluation.Holdout?

        /// Writes the self-contained HTML report (metrics, confusion matrix, most confident mistakes) to `path`.
        public func writeReport(to path: String) throws {
            try Evaluation.writeReport(to: path, models: models, modelPaths: modelPaths, items: items, truth: truth,
                                       probabilities: probabilities, reports: reports, comparison: comparison,
                                       dataSource: source, dataPath: dataPath)
        }
    }

    public var modelPaths: [String]
    public var dataPath: String?
    public var parameters: Parameters

    /// `modelPaths`: one model, or two to compare (same labels). `dataPath`: a label-folder tree or a table; nil
    /// evaluates on the holdout recorded in the first model.
    public init(modelPaths: [String], dataPath: String? = nil, parameters: Parameters = .init()) {
        self.modelPaths = modelPaths; self.dataPath = dataPath; self.parameters = parameters
    }

    /// Runs the evaluation, reporting `progress` (a warning for recorded holdout files skipped, then an
    /// "evaluating" progress stage per model).
    public func run(progress: ((PipelineEvent) -> Void)? = nil) throws -> Outcome {
        let emit = progress ?? { _ in }
        let models = try modelPaths.map { try ModelLoader.load($0) }
        guard let first = models.first else { throw PipelineError.invalidParameter(name: "models", reason: "no model to evaluate") }
        let labels = first.metadata.labels
        guard !labels.isEmpty else {
            throw PipelineError.badInput(file: modelPaths[0], reason: "the model has no class labels to evaluate against")
        }
        if models.count == 2 && models[1].metadata.labels != labels {
            throw PipelineError.badInput(file: modelPaths[1], reason: "its labels differ from \(modelPaths[0])'s; cannot compare")
        }
        var skipped: Evaluation.Holdout?
        let items: [LabeledItem]
        if let dataPath {
            items = try Evaluation.loadItems(dataPath, task: first.metadata.task)
        } else {
            let holdout = try Evaluation.recordedHoldout(first, modelPath: modelPaths[0], skipMissing: parameters.skipMissing)
            items = holdout.items
            if !holdout.problems.isEmpty {
                skipped = holdout
                emit(.warning(holdout.skippedText))
            }
        }
        let truth = try Evaluation.truth(items, labels: labels, modelPath: modelPaths[0])
        // Text models: the documents once, and accuracy by their length beside the usual metrics.
        let documents = first.metadata.task == .textClassifier ? try Evaluation.documents(items) : nil
        let lengths = documents?.map { $0.unicodeScalars.count }
        var probs = [[Float]]()
        var reports = [EvaluationReport]()
        for (m, p) in zip(models, modelPaths) {
            try checkCancellation()
            let pr = try Evaluation.probabilities(m, modelPath: p, items: items, threads: parameters.threads,
                                                  documents: documents,
                                                  progress: { emit(.progress(label: "evaluating", advanced: $0, total: $1)) })
            emit(.progressFinished(label: "evaluating"))
            probs.append(pr)
            var report = Metrics.evaluate(truth: truth, probabilities: pr, labels: labels, topK: parameters.topK)
            report.byLength = lengths.map {
                Metrics.accuracyByLength(lengths: $0, truth: truth, probabilities: pr, classes: labels.count)
            }
            reports.append(report)
        }
        let comparison = models.count == 2 ? ModelComparison.compare(probs[0], probs[1], classes: labels.count) : nil
        return Outcome(models: models, modelPaths: modelPaths, items: items, truth: truth, probabilities: probs,
                       reports: reports, comparison: comparison, source: dataPath ?? "recorded holdout",
                       dataPath: dataPath, skipped: skipped)
    }
}
