import Foundation
import MLTool

extension CLI {
    static let eval = CommandSpec(
        name: "eval", abstract: "Evaluate a model (or compare two) on its recorded holdout or on DATA.",
        arguments: "[MODEL] [MODEL2] [DATA]",
        discussion: """
        MODEL defaults to ./model.bin. DATA defaults to the holdout split recorded in MODEL at training time; its
        files are re-hashed, and missing or changed ones are reported. DATA may be a label-folder tree or a CSV,
        or for a detector annotated photos (mAP@0.5, mAP@0.5:0.95 as pycocotools defines them, AP per class).
        With two models, both are evaluated on the same items and compared: top-1 agreement, mean KL divergence,
        and the items where they disagree.
        """,
        options: [
            OptionSpec("--json", help: "Print one JSON object with stable keys."),
            OptionSpec("--top", value: "K", help: "Also report top-K accuracy (default 5)."),
            OptionSpec("--report", value: "FILE", help: "Also write a self-contained HTML report (metrics, confusion matrix, mistakes)."),
            OptionSpec("--skip-missing", help: "Evaluate on the holdout files that remain when some are missing."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
            OptionSpec("--min-confidence", value: "F", help: "Detectors: precision and recall at this confidence (model's default)."),
            OptionSpec("--tag-column", value: "upos|xpos|misc:KEY", help: "Word taggers: the CoNLL-U column to score against (default upos)."),
            OptionSpec("--quiet", short: "-q", help: "No progress output."),
        ]
    ) { args in
        var modelPaths = [String]()
        var dataPath: String?
        for p in args.positionals {
            let kind = FileManager.default.fileExists(atPath: p) ? try FileKind.detect(path: p) : .unknown
            let isModel = [.mltool, .onnx, .hdf5, .coreml].contains(kind)
            if isModel && dataPath == nil && modelPaths.count < 2 { modelPaths.append(p) }
            else if dataPath == nil { dataPath = p }
            else { throw CLIError.usage(command: "eval", message: "unexpected argument '\(p)'") }
        }
        if modelPaths.isEmpty { modelPaths = ["model.bin"] }
        if modelPaths.count == 1, FileManager.default.fileExists(atPath: modelPaths[0]) {
            let model = try ModelLoader.load(modelPaths[0])
            if DetectorEvaluator.isDetector(model) { return try evalDetector(args, modelPaths[0], dataPath) }
            if model.metadata.task == .wordTagger { return try evalTagger(args, model, modelPaths[0], dataPath) }
        }
        var parameters = Evaluator.Parameters()
        parameters.threads = try args.int("--threads", default: parameters.threads)
        parameters.topK = try args.int("--top", default: parameters.topK)
        parameters.skipMissing = args.has("--skip-missing")
        let quiet = args.has("--quiet")
        let r = try Evaluator(modelPaths: modelPaths, dataPath: dataPath, parameters: parameters)
            .run(progress: EventPrinter(quiet: quiet).handle)
        if let reportPath = args.string("--report") {
            try r.writeReport(to: reportPath)
            if !quiet { note("mltool: wrote \(reportPath)") }
        }
        if args.has("--json") {
            struct Out: Encodable {
                var data: String; var models: [String]; var reports: [EvaluationReport]; var comparison: ModelComparison?
            }
            let e = JSONEncoder()
            e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try e.encode(Out(data: r.source, models: modelPaths, reports: r.reports, comparison: r.comparison)),
                         as: UTF8.self))
            return
        }
        for (report, p) in zip(r.reports, modelPaths) { print(report.text(title: "\(p) on \(r.source)")) }
        if let c = r.comparison {
            let k = r.models[0].metadata.labels.count, labels = r.models[0].metadata.labels
            print(String(format: "comparison: top-1 agreement %.4f, mean KL(A‖B) %.5f nats, accuracy %.4f → %.4f (%+.2f points)",
                         c.agreement, c.meanKL, r.reports[0].accuracy, r.reports[1].accuracy,
                         (r.reports[1].accuracy - r.reports[0].accuracy) * 100))
            for i in c.disagreements.prefix(10) {
                let a = Metrics.argmax(Array(r.probabilities[0][(i * k)..<((i + 1) * k)]))
                let b = Metrics.argmax(Array(r.probabilities[1][(i * k)..<((i + 1) * k)]))
                print("  \(r.items[i].path): true \(r.items[i].label), A \(labels[a]), B \(labels[b])")
            }
            if c.disagreements.count > 10 { print("  … \(c.disagreements.count - 10) more") }
        }
    }

    static func evalDetector(_ args: ParsedArguments, _ modelPath: String, _ dataPath: String?) throws {
        var p = DetectorEvaluator.Parameters()
        p.threads = try args.int("--threads", default: p.threads)
        p.skipMissing = args.has("--skip-missing")
        p.confidenceThreshold = try args.string("--min-confidence").map { _ in try args.double("--min-confidence", default: 0.25) }
        let r = try DetectorEvaluator(modelPath: modelPath, dataPath: dataPath, parameters: p).run(progress: EventPrinter(quiet: args.has("--quiet")).handle)
        if let reportPath = args.string("--report") {
            try r.writeReport(to: reportPath)
            if !args.has("--quiet") { note("mltool: wrote \(reportPath)") }
        }
        if args.has("--json") {
            let e = JSONEncoder()
            e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try e.encode(r.evaluation), as: UTF8.self))
        } else {
            print(r.text(), terminator: "")
        }
    }

    static func isDirectory(_ p: String) -> Bool {
        var d: ObjCBool = false
        return FileManager.default.fileExists(atPath: p, isDirectory: &d) && d.boolValue
    }

    /// A word tagger on tagged sentences: token accuracy, per-tag scores, entity scores for BIO/BIOES tags.
    static func evalTagger(_ args: ParsedArguments, _ model: Model, _ modelPath: String, _ dataPath: String?) throws {
        guard let dataPath else {
            throw CLIError.usage(command: "eval", message: "a word tagger is evaluated on tagged DATA (CoNLL-U, CoNLL or JSON)")
        }
        let ev = try WordTagging.evaluate(model: model, path: modelPath, data: dataPath,
                                          tagColumn: try TagColumn(parsing: args.string("--tag-column") ?? "upos"))
        if let reportPath = args.string("--report") {
            try ev.writeReport(to: reportPath)
            if !args.has("--quiet") { note("mltool: wrote \(reportPath)") }
        }
        let r = ev.report
        if args.has("--json") {
            let e = JSONEncoder()
            e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return print(String(decoding: try e.encode(r), as: UTF8.self))
        }
        print(r.text(title: "\(modelPath) on \(dataPath)"))
    }
}
