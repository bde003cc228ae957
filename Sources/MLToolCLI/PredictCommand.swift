import Foundation
import MLToolCore
import MLToolData

extension CLI {
    static let predict = CommandSpec(
        name: "predict", abstract: "Classify images (JPEG/PNG) or texts with a model.",
        arguments: "MODEL INPUT...",
        discussion: "Images go through the model's own decoding and preprocessing. Text models take files or --text. "
            + "A folder stands for every file below it (for text models, every .txt file), in sorted order.",
        options: [
            OptionSpec("--top", value: "K", help: "Show the K most probable labels (default 3)."),
            OptionSpec("--text", value: "STRING", repeats: true, help: "Classify this string (text models)."),
            OptionSpec("--json", help: "One JSON object per input, one per line."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
        ]
    ) { args in
        guard let modelPath = args.positionals.first else {
            throw CLIError.usage(command: "predict", message: "expected MODEL and at least one INPUT")
        }
        let given = Array(args.positionals.dropFirst())
        guard !given.isEmpty || args.has("--text") else {
            throw CLIError.usage(command: "predict", message: "expected at least one INPUT after MODEL")
        }
        let k = try args.int("--top", default: 3)
        guard k >= 1 else { throw CLIError.usage(command: "predict", message: "--top must be ≥ 1") }
        let model = try ModelLoading.load(modelPath)
        let json = args.has("--json")
        let isText = model.metadata.task == .textClassifier
        let inputs = try DirectoryWalk.expand(given, keep: { !isText || $0.lowercased().hasSuffix(".txt") })
        guard !inputs.isEmpty || args.has("--text") else {
            throw CLIError.missingInput(file: given[0], reason: "the folder holds no \(isText ? ".txt " : "")files to classify")
        }
        if isText {
            return try TextPrediction.predict(model, modelPath: modelPath, files: inputs, texts: args.strings("--text"),
                                              k: k, json: json)
        }
        if args.has("--text") {
            throw CLIError.usage(command: "predict", message: "--text needs a text model; \(modelPath) is a \(model.metadata.task.rawValue) model")
        }
        let classifier = try ImageClassifier(model: model, path: modelPath, threads: try args.int("--threads", default: 0))
        var failures = [Error]()
        var batch = [(String, [Float])]()
        func flush() throws {
            let rows = try classifier.run(batch.map { $0.1 })
            for (item, row) in zip(batch, rows) {
                printPrediction(file: item.0, row: row, labels: classifier.labels, k: k, json: json)
            }
            batch.removeAll()
        }
        for file in inputs {
            do {
                let image = try ImageDecoder.decode(path: file)
                batch.append((file, try classifier.input(for: image)))
            } catch {
                failures.append(error)
                note("mltool: error: \((error as? MLToolError)?.description ?? "\(error)")")
            }
            if batch.count == 16 { try flush() }
        }
        try flush()
        if let first = failures.first {
            if failures.count == inputs.count { throw first }
            throw CLIError.badInput(file: "predict", reason: "\(failures.count) of \(inputs.count) inputs could not be read")
        }
    }

    static func printPrediction(file: String, row: [Float], labels: [String], k: Int, json: Bool, key: String = "file",
                                title: String? = nil) {
        let top = ImageClassifier.top(row, k)
        func name(_ i: Int) -> String { i < labels.count ? labels[i] : String(i) }
        if json {
            let items = top.map { "{\"label\": \(jsonString(name($0.0))), \"index\": \($0.0), \"probability\": \($0.1)}" }
            print("{\"\(key)\": \(jsonString(file)), \"top\": [\(items.joined(separator: ", "))]}")
        } else {
            print(title ?? file)
            for (i, p) in top { print(String(format: "  %7.4f  %@", p, name(i))) }
        }
    }
}
