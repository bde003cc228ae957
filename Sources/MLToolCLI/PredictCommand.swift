import Foundation
import MLTool

extension CLI {
    /// `mltool predict MODEL INPUT...`: the model's task (from the registry) predicts.
    static func predict(_ tasks: TaskRegistry) -> CommandSpec {
        CommandSpec(
            name: "predict", abstract: "Classify images (JPEG/PNG) or texts, or find objects in photos, with a model.",
            arguments: "MODEL INPUT...",
            discussion: "Images go through the model's own decoding and preprocessing. Text models take files or --text. "
                + "A folder stands for every file below it (for text models, every .txt file), in sorted order. "
                + "A detector prints one line per object: label, confidence, box in pixels (x, y from the top-left, width, "
                + "height); --json adds Vision's normalised box (origin bottom-left).",
            options: [
                OptionSpec("--json", help: "One JSON object per input, one per line."),
                OptionSpec("--threads", value: "T", kind: .integer, help: "Threads (default: all cores)."),
                OptionSpec("--shard", value: "I/N|auto", help: "Only the files of shard I of N (docs/SCALE.md); merge: cat part-* | LC_ALL=C sort."),
            ] + tasks.tasks.flatMap { $0.predictionOptions }.uniqued
        ) { args in
            guard let modelPath = args.positionals.first else {
                throw CLIError.usage(command: "predict", message: "expected MODEL and at least one INPUT")
            }
            let given = Array(args.positionals.dropFirst())
            guard !given.isEmpty || args.has("--text") else {
                throw CLIError.usage(command: "predict", message: "expected at least one INPUT after MODEL")
            }
            let model = try ModelLoader.load(modelPath)
            let task = tasks.handling(model: model)
            let shard = try args.string("--shard").map { try ShardSpec.parse($0) } ?? .whole
            let inputs = try shard.files(expanding: given, keep: { task.predictsOn(file: $0, model: model) })
            guard !inputs.isEmpty || args.has("--text") || shard.count > 1 else {
                throw CLIError.missingInput(file: given[0], reason: "the folder holds no files to classify")
            }
            try task.predict(TaskRequest(arguments: args.positionals, values: args.optionValues, progress: EventPrinter(quiet: true).handle,
                                         output: { print($0) }), model: model, modelPath: modelPath, inputs: inputs)
        }
    }
}
