import Foundation
import MLTool

extension CLI {
    static let info = CommandSpec(
        name: "info", abstract: "Show a model's task, inputs, outputs, preprocessing, labels and sizes.",
        arguments: "MODEL",
        options: [OptionSpec("--json", help: "Print one JSON object instead of text.")]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "info", message: "expected one MODEL, got \(args.positionals.count)")
        }
        let path = args.positionals[0]
        let summary = try ModelSummary(path: path)
        if args.has("--json") {
            print(try summary.json())
        } else {
            print(summary.text(path: path), terminator: "")
        }
    }
}
