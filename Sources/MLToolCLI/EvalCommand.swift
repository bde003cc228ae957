import Foundation
import MLTool

extension CLI {
    /// `mltool eval [MODEL] [MODEL2] [DATA]`: the model's task (from the registry) evaluates.
    static func eval(_ tasks: TaskRegistry) -> CommandSpec {
        CommandSpec(
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
                OptionSpec("--report", value: "FILE", help: "Also write a self-contained HTML report (metrics, confusion matrix, mistakes)."),
                OptionSpec("--skip-missing", help: "Evaluate on the holdout files that remain when some are missing."),
                OptionSpec("--threads", value: "T", kind: .integer, help: "Threads (default: all cores)."),
                OptionSpec("--quiet", short: "-q", help: "No progress output."),
            ] + tasks.tasks.flatMap { $0.evaluationOptions }.uniqued
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
            // A model that is not there is reported by the first task's evaluation (it names the file).
            let task = FileManager.default.fileExists(atPath: modelPaths[0])
                ? tasks.handling(model: try ModelLoader.load(modelPaths[0])) : tasks.tasks[0]
            let printer = EventPrinter(quiet: args.has("--quiet"))
            try task.evaluate(TaskRequest(arguments: args.positionals, values: args.optionValues, progress: printer.handle,
                                          output: { print($0) }), models: modelPaths, data: dataPath)
        }
    }
}
