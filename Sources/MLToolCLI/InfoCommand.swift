import Foundation
import MLToolCore

extension CLI {
    static let info = CommandSpec(
        name: "info", abstract: "Show a model's task, inputs, outputs, preprocessing, labels and sizes.",
        arguments: "MODEL",
        options: [OptionSpec("--json", help: "Print one JSON object.")]
    ) { args in
        throw CLIError.notSupported("info: waiting for the model format reader")
    }
}
