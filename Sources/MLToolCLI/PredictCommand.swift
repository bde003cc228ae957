import Foundation
import MLTool

extension CLI {
    static let predict = CommandSpec(
        name: "predict", abstract: "Classify images (JPEG/PNG) or texts, or find objects in photos, with a model.",
        arguments: "MODEL INPUT...",
        discussion: "Images go through the model's own decoding and preprocessing. Text models take files or --text. "
            + "A folder stands for every file below it (for text models, every .txt file), in sorted order. "
            + "A detector prints one line per object: label, confidence, box in pixels (x, y from the top-left, width, "
            + "height); --json adds Vision's normalised box (origin bottom-left).",
        options: [
            OptionSpec("--top", value: "K", help: "Show the K most probable labels (default 3)."),
            OptionSpec("--text", value: "STRING", repeats: true, help: "Classify this string (text models)."),
            OptionSpec("--json", help: "One JSON object per input, one per line."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
            OptionSpec("--draw", value: "OUT", help: "Detectors: write the photo with boxes drawn (PNG; a folder for several photos)."),
            OptionSpec("--shard", value: "I/N|auto", help: "Only the files of shard I of N (docs/SCALE.md); merge: cat part-* | LC_ALL=C sort."),
        ] + detectionOptions
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
        let model = try ModelLoader.load(modelPath)
        let json = args.has("--json")
        let isTagger = model.metadata.task == .wordTagger, isText = model.metadata.task == .textClassifier || isTagger
        let shard = try args.string("--shard").map { try ShardSpec.parse($0) } ?? .whole
        let inputs = try shard.files(expanding: given, keep: { !isText || $0.lowercased().hasSuffix(".txt") })
        guard !inputs.isEmpty || args.has("--text") || shard.count > 1 else {
            throw CLIError.missingInput(file: given[0], reason: "the folder holds no \(isText ? ".txt " : "")files to classify")
        }
        if DetectorEvaluator.isDetector(model) {
            return try predictObjects(args, modelPath, inputs, json: json)
        }
        if isTagger { return try predictTags(args, model, modelPath, inputs, json: json) }
        if !isText && args.has("--text") {
            throw CLIError.usage(command: "predict", message: "--text needs a text model; \(modelPath) is a \(model.metadata.task.rawValue) model")
        }
        var failures = [Error]()
        func failed(_ error: Error) {
            failures.append(error)
            note("mltool: error: \((error as? MLToolError)?.description ?? "\(error)")")
        }
        let options = ClassificationOptions(maximumCount: k)
        if isText {
            let classifier = try TextClassifier(model: model, path: modelPath)
            var texts = [(name: String, isFile: Bool, text: String)]()
            for file in inputs {
                do { texts.append((file, true, try TextDataset.readDocument(file))) } catch { failed(error) }
            }
            texts += args.strings("--text").map { ($0, false, $0) }
            let probs = try classifier.probabilities(texts.map(\.text))
            let n = classifier.labels.count
            for (i, t) in texts.enumerated() {
                let ranked = Classification.ranked(Array(probs[(i * n)..<((i + 1) * n)]), labels: classifier.labels, options: options)
                if t.isFile {
                    printPrediction(t.name, ranked, json: json)
                } else {
                    printPrediction(t.name, ranked, json: json, key: "text", title: "\"" + snippet(t.name) + "\"")
                }
            }
        } else {
            let classifier = try ImageClassifier(model: model, path: modelPath, threads: try args.int("--threads", default: 0))
            // Batches of 16 files: each batch decodes on every core and is one run of the network.
            for start in stride(from: 0, to: inputs.count, by: 16) {
                let files = Array(inputs[start..<min(inputs.count, start + 16)])
                let results = classifier.classify(batch: files.map { .path($0) }, options: options)
                for (file, result) in zip(files, results) {
                    switch result {
                    case .success(let ranked): printPrediction(file, ranked, json: json)
                    case .failure(let error): failed(error)
                    }
                }
            }
        }
        if let first = failures.first {
            if failures.count == inputs.count && !args.has("--text") { throw first }
            throw CLIError.badInput(file: "predict", reason: "\(failures.count) of \(inputs.count) \(isText ? "files" : "inputs") could not be read")
        }
    }

    static func printPrediction(_ name: String, _ ranked: [Classification], json: Bool, key: String = "file",
                                title: String? = nil) {
        if json {
            let items = ranked.map { "{\"label\": \(jsonString($0.identifier)), \"index\": \($0.index), \"probability\": \($0.confidence)}" }
            print("{\"\(key)\": \(jsonString(name)), \"top\": [\(items.joined(separator: ", "))]}")
        } else {
            print(title ?? name)
            for c in ranked { print(String(format: "  %7.4f  %@", c.confidence, c.identifier)) }
        }
    }

    /// The first line of `text`, at most 60 characters, for display.
    static func snippet(_ text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.count > 60 ? String(line.prefix(59)) + "…" : line
    }

    /// Each text's tokens with their tags (`--json`: Unicode-scalar and UTF-8 offsets too).
    static func predictTags(_ args: ParsedArguments, _ model: Model, _ modelPath: String, _ inputs: [String], json: Bool) throws {
        let texts = try inputs.map { (name: $0, key: "file", text: try TextDataset.readDocument($0)) }
            + args.strings("--text").map { (name: $0, key: "text", text: $0) }
        for (t, tokens) in zip(texts, try WordTagging.tag(model: model, path: modelPath, texts: texts.map(\.text))) {
            guard json else {
                print(t.key == "file" ? t.name : "\"" + snippet(t.name) + "\"")
                print("  " + tokens.map { "\($0.span.text)/\($0.tag)" }.joined(separator: " "))
                continue
            }
            let items = tokens.map {
                "{\"token\": \(jsonString($0.span.text)), \"tag\": \(jsonString($0.tag)), \"start\": \($0.span.scalars.lowerBound), "
                    + "\"end\": \($0.span.scalars.upperBound), \"utf8\": [\($0.span.utf8.lowerBound), \($0.span.utf8.upperBound)]}"
            }
            print("{\"\(t.key)\": \(jsonString(t.name)), \"tokens\": [\(items.joined(separator: ", "))]}")
        }
    }

    static func predictObjects(_ args: ParsedArguments, _ modelPath: String, _ inputs: [String], json: Bool) throws {
        let results = try ObjectDetection.detect(modelPath: modelPath, photos: inputs, options: try detectorOptions(args))
        for r in results {
            if json {
                let e = JSONEncoder()
                e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try e.encode(r), as: UTF8.self))
                continue
            }
            print("\(r.path): \(r.objects.count) object\(r.objects.count == 1 ? "" : "s") (\(r.width)×\(r.height))")
            for o in r.objects {
                print(String(format: "  %7.4f  %@  x %.1f y %.1f w %.1f h %.1f", o.confidence, o.label, o.box.x, o.box.y, o.box.width, o.box.height))
            }
        }
        guard let out = args.string("--draw") else { return }
        if results.count == 1 && !isDirectory(out) {
            try ObjectDetection.drawObjects(results[0], to: out)
            return
        }
        try AtomicFile.makeDirectory(out)
        for r in results {
            try ObjectDetection.drawObjects(r, to: out + "/" + URL(fileURLWithPath: r.path).deletingPathExtension().lastPathComponent + ".png")
        }
    }
}
