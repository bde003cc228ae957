import Foundation
import MLToolCore

/// What image and text classification share as tasks: their evaluation (one model, or two compared, on the recorded
/// holdout or on data), their `--top` ranking and their prediction lines.
public enum ClassifierTasks {
    /// `--top K` of `mltool eval`.
    static let evaluationOptions = [OptionDeclaration("--top", value: "K", kind: .integer, help: "Also report top-K accuracy (default 5).")]
    /// `--top K` of `mltool predict`.
    static let top = OptionDeclaration("--top", value: "K", kind: .integer, help: "Show the K most probable labels (default 3).")

    static func accuracyLine(_ r: TrainingResult) -> String {
        func pct(_ v: Double?) -> String { v.map { String(format: "%.4f", $0) } ?? "-" }
        return "  accuracy   train \(pct(r.metrics["train.accuracy"])), validation \(pct(r.metrics["validation.accuracy"])), holdout \(pct(r.metrics["holdout.accuracy"]))"
    }

    /// The head's line of a classifier's training summary: its L2 strength, iterations and why it stopped.
    static func headLine(_ r: TrainingResult) -> String {
        String(format: "  l2 %.0e, %d iterations (%@)", r.l2, r.iterations, r.stopReason.rawValue)
    }

    /// A classifier's training summary: its classes and how many `items` went where, the task's own `details` lines,
    /// accuracy, the head, the `seconds` line's text and where the model was written.
    static func printSummary(_ request: TaskRequest, _ r: TrainingResult, items: String, details: [String] = [],
                             seconds: String, output: String) {
        request.print("trained \(r.model.metadata.labels.count) classes on \(r.trainCount) \(items) (\(r.validationCount) validation, \(r.holdoutCount) holdout)")
        for line in details { request.print(line) }
        request.print(accuracyLine(r))
        request.print(headLine(r))
        request.print("  seconds    " + seconds)
        request.print("  wrote      \(output)")
    }

    static func threads(_ values: OptionValues) throws -> Int {
        try values.int("--threads") ?? 0
    }

    /// How many labels `predict` (and `mltool serve`) give per input unless `--top` says otherwise.
    static let defaultTop = 3

    /// `--top K` of `predict` (default `defaultTop`).
    static func rankingOptions(_ values: OptionValues) throws -> ClassificationOptions {
        let k = try values.int("--top") ?? defaultTop
        guard k >= 1 else { throw OptionText.refuse("--top", "--top must be ≥ 1") }
        return ClassificationOptions(maximumCount: k)
    }

    /// One classifier (or two compared) on `data` or the first model's recorded holdout: the report text, or one
    /// JSON object with `--json`; `--report FILE` also writes the HTML report.
    static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws {
        let v = request.values
        var parameters = Evaluator.Parameters()
        parameters.threads = try threads(v)
        parameters.topK = try v.int("--top") ?? parameters.topK
        parameters.skipMissing = v.has("--skip-missing")
        let r = try Evaluator(modelPaths: models, dataPath: data, parameters: parameters).run(progress: request.progress)
        try request.writeReport(r.writeReport(to:))
        if v.has("--json") {
            struct Out: Encodable {
                var data: String; var models: [String]; var reports: [EvaluationReport]; var comparison: ModelComparison?
            }
            request.print(try TaskOutput.json(Out(data: r.source, models: models, reports: r.reports, comparison: r.comparison)))
            return
        }
        for (report, p) in zip(r.reports, models) { request.print(report.text(title: "\(p) on \(r.source)")) }
        if let c = r.comparison { printComparison(request, r, c) }
    }

    private static func printComparison(_ request: TaskRequest, _ r: Evaluator.Outcome, _ c: ModelComparison) {
        let k = r.models[0].metadata.labels.count, labels = r.models[0].metadata.labels
        request.print(String(format: "comparison: top-1 agreement %.4f, mean KL(A‖B) %.5f nats, accuracy %.4f → %.4f (%+.2f points)",
                             c.agreement, c.meanKL, r.reports[0].accuracy, r.reports[1].accuracy,
                             (r.reports[1].accuracy - r.reports[0].accuracy) * 100))
        for i in c.disagreements.prefix(10) {
            let a = Metrics.argmax(Array(r.probabilities[0][(i * k)..<((i + 1) * k)]))
            let b = Metrics.argmax(Array(r.probabilities[1][(i * k)..<((i + 1) * k)]))
            request.print("  \(r.items[i].path): true \(r.items[i].label), A \(labels[a]), B \(labels[b])")
        }
        if c.disagreements.count > 10 { request.print("  … \(c.disagreements.count - 10) more") }
    }

    /// One prediction: the name and its ranked labels, or one JSON line with `--json` (`key` names the input).
    static func printPrediction(_ request: TaskRequest, _ name: String, _ ranked: [Classification], key: String = "file",
                                title: String? = nil) {
        if request.values.has("--json") {
            request.print(predictionJSON(name, ranked, key: key))
        } else {
            request.print(title ?? name)
            for c in ranked { request.print(String(format: "  %7.4f  %@", c.confidence, c.identifier)) }
        }
    }

    /// One prediction as `predict --json` prints it (and `mltool serve` answers it): `{"<key>": name, "top": […]}`.
    static func predictionJSON(_ name: String, _ ranked: [Classification], key: String = "file") -> String {
        let items = ranked.map { "{\"label\": \(TaskOutput.jsonString($0.identifier)), \"index\": \($0.index), \"probability\": \($0.confidence)}" }
        return "{\"\(key)\": \(TaskOutput.jsonString(name)), \"top\": [\(items.joined(separator: ", "))]}"
    }

    /// Inputs that could not be read: each reported as it happens, then one error for all.
    struct Failures {
        let progress: @Sendable (PipelineEvent) -> Void
        private(set) var errors: [Error] = []

        init(progress: @escaping @Sendable (PipelineEvent) -> Void) { self.progress = progress }

        mutating func add(_ error: Error) {
            errors.append(error)
            progress(.inputFailed((error as? MLToolError)?.description ?? "\(error)"))
        }

        /// Throws the one error when every input failed and `allFatal`, else a count of the failures.
        func check(of count: Int, noun: String, allFatal: Bool) throws {
            guard let first = errors.first else { return }
            if errors.count == count && allFatal { throw first }
            throw PipelineError.badInput(file: "predict", reason: "\(errors.count) of \(count) \(noun) could not be read")
        }
    }
}
