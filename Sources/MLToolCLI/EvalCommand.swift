import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolFormat

extension CLI {
    static let eval = CommandSpec(
        name: "eval", abstract: "Evaluate a model (or compare two) on its recorded holdout or on DATA.",
        arguments: "[MODEL] [MODEL2] [DATA]",
        discussion: """
        MODEL defaults to ./model.bin. DATA defaults to the holdout split recorded in MODEL at training time; its
        files are re-hashed, and missing or changed ones are reported. DATA may be a label-folder tree or a CSV.
        With two models, both are evaluated on the same items and compared: top-1 agreement, mean KL divergence,
        and the items where they disagree.
        """,
        options: [
            OptionSpec("--json", help: "Print one JSON object with stable keys."),
            OptionSpec("--top", value: "K", help: "Also report top-K accuracy (default 5)."),
            OptionSpec("--report", value: "FILE", help: "Also write a self-contained HTML report (metrics, confusion matrix, mistakes)."),
            OptionSpec("--skip-missing", help: "Evaluate on the holdout files that remain when some are missing."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
            OptionSpec("--quiet", short: "-q", help: "No progress output."),
        ]
    ) { args in
        var modelPaths = [String]()
        var dataPath: String?
        for p in args.positionals {
            let kind = FileManager.default.fileExists(atPath: p) && !isDirectory(p) ? try FileKind.detect(path: p) : .unknown
            let isModel = [.mltool, .onnx, .hdf5].contains(kind)
            if isModel && dataPath == nil && modelPaths.count < 2 { modelPaths.append(p) }
            else if dataPath == nil { dataPath = p }
            else { throw CLIError.usage(command: "eval", message: "unexpected argument '\(p)'") }
        }
        if modelPaths.isEmpty { modelPaths = ["model.bin"] }
        let models = try modelPaths.map { try ModelLoading.load($0) }
        let labels = models[0].metadata.labels
        guard !labels.isEmpty else {
            throw CLIError.badInput(file: modelPaths[0], reason: "the model has no class labels to evaluate against")
        }
        if models.count == 2 && models[1].metadata.labels != labels {
            throw CLIError.badInput(file: modelPaths[1], reason: "its labels differ from \(modelPaths[0])'s; cannot compare")
        }
        let items = try dataPath.map { try loadItems($0, task: models[0].metadata.task) }
            ?? Evaluation.recordedHoldout(models[0], modelPath: modelPaths[0], skipMissing: args.has("--skip-missing"))
        let truth = try Evaluation.truth(items, labels: labels, modelPath: modelPaths[0])
        let threads = try args.int("--threads", default: 0)
        let topK = try args.int("--top", default: 5)
        var probs = [[Float]]()
        var reports = [EvaluationReport]()
        for (m, p) in zip(models, modelPaths) {
            let pr = try Evaluation.probabilities(m, modelPath: p, items: items, threads: threads, quiet: args.has("--quiet"))
            probs.append(pr)
            reports.append(Metrics.evaluate(truth: truth, probabilities: pr, labels: labels, topK: topK))
        }
        let comparison = models.count == 2 ? ModelComparison.compare(probs[0], probs[1], classes: labels.count) : nil
        let source = dataPath ?? "recorded holdout"
        if let reportPath = args.string("--report") {
            try Evaluation.writeReport(to: reportPath, models: models, modelPaths: modelPaths, items: items, truth: truth,
                                       probabilities: probs, reports: reports, comparison: comparison,
                                       dataSource: source, dataPath: dataPath)
            if !args.has("--quiet") { note("mltool: wrote \(reportPath)") }
        }
        if args.has("--json") {
            struct Out: Encodable {
                var data: String; var models: [String]; var reports: [EvaluationReport]; var comparison: ModelComparison?
            }
            let e = JSONEncoder()
            e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try e.encode(Out(data: source, models: modelPaths, reports: reports, comparison: comparison)),
                         as: UTF8.self))
            return
        }
        for (r, p) in zip(reports, modelPaths) { print(r.text(title: "\(p) on \(source)")) }
        if let c = comparison {
            print(String(format: "comparison: top-1 agreement %.4f, mean KL(A‖B) %.5f nats, accuracy %.4f → %.4f (%+.2f points)",
                         c.agreement, c.meanKL, reports[0].accuracy, reports[1].accuracy,
                         (reports[1].accuracy - reports[0].accuracy) * 100))
            for i in c.disagreements.prefix(10) {
                let a = Metrics.argmax(Array(probs[0][(i * labels.count)..<((i + 1) * labels.count)]))
                let b = Metrics.argmax(Array(probs[1][(i * labels.count)..<((i + 1) * labels.count)]))
                print("  \(items[i].path): true \(items[i].label), A \(labels[a]), B \(labels[b])")
            }
            if c.disagreements.count > 10 { print("  … \(c.disagreements.count - 10) more") }
        }
    }

    static func isDirectory(_ p: String) -> Bool {
        var d: ObjCBool = false
        return FileManager.default.fileExists(atPath: p, isDirectory: &d) && d.boolValue
    }

    /// Items of a label-folder tree or a CSV (text data for text models: `.txt` folders, CSV/TSV/JSON Lines).
    static func loadItems(_ path: String, task: ModelMetadata.Task? = nil) throws -> [LabeledItem] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError.missingInput(file: path, reason: "no such file or directory")
        }
        if task == .textClassifier {
            return try TextDataset.load(path).items.map { LabeledItem(path: $0.reference, label: $0.label, text: $0.text) }
        }
        let dataset = try ImageDataset.load(path)
        return dataset.items.map { LabeledItem(path: $0.path, label: $0.label) }
    }
}
