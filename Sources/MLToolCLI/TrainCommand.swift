import Foundation
import MLTool

extension CLI {
    /// Options of the command itself, not of a task.
    static let trainCommandOptions = [
        OptionSpec("--quiet", short: "-q", help: "No progress output."), noProvenance,
    ]

    /// `mltool train DATA`: the task told from DATA (or --task) trains; its options and help come from the registry.
    static func train(_ tasks: TaskRegistry) -> CommandSpec {
        let declared = tasks.tasks.map { $0.trainOptions }
        // Options every task declares alike are shown once; the rest under their task.
        let shared = declared[0].filter { o in declared.allSatisfy { $0.contains(o) } }
        let taskOption = OptionSpec("--task", value: tasks.names.joined(separator: "|"), help: "Override the task told from DATA's content.")
        return CommandSpec(
            name: "train", abstract: "Train a model from labelled data: \(titles(tasks)).",
            arguments: "DATA",
            discussion: """
            The task is told from DATA's content (or --task). A seeded holdout (--holdout) is kept out of training and
            recorded in the model, so `mltool eval` re-evaluates on it; or give --test. Same data, seed and threads give
            a byte-identical model. `mltool help train TASK` shows one task's options.
            """,
            options: shared + [taskOption] + trainCommandOptions,
            groups: tasks.tasks.map { t in
                OptionGroup(name: t.name, title: t.title, discussion: t.trainingHelp, options: t.trainOptions.filter { !shared.contains($0) })
            }
        ) { args in
            guard args.positionals.count == 1 else {
                throw CLIError.usage(command: "train", message: "expected one DATA folder or CSV")
            }
            let path = args.positionals[0], values = args.optionValues
            let task = try chosenTask(tasks, args, data: path)
            let own = Set((task.trainOptions + [taskOption] + trainCommandOptions).map(\.flag))
            if let o = values.flags.first(where: { !own.contains($0) }) {
                throw CLIError.usage(command: "train", message: "\(o) is not an option of \(task.title.lowercased()) (\(path) is \(task.name) data); see 'mltool help train \(task.name)'")
            }
            let printer = EventPrinter(quiet: args.has("--quiet"))
            try task.train(TaskRequest(arguments: [path], values: values, progress: printer.handle, output: { print($0) }))
        }
    }

    /// "image classification, …, or word tagging".
    static func titles(_ tasks: TaskRegistry) -> String {
        let t = tasks.tasks.map { $0.title.lowercased() }
        return t.count < 2 ? t.joined() : t.dropLast().joined(separator: ", ") + " or " + (t.last ?? "")
    }

    /// The task `--task` names, else the one DATA's content is.
    static func chosenTask(_ tasks: TaskRegistry, _ args: ParsedArguments, data: String) throws -> any TaskKind.Type {
        guard let name = args.string("--task") else { return tasks.recognizing(data: data, values: args.optionValues) }
        guard let task = tasks.named(name) else {
            throw CLIError.usage(command: "train", message: "--task must be one of \(tasks.names.joined(separator: ", "))")
        }
        return task
    }
}
