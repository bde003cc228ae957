import Foundation
import MLToolCore
import MLToolData
import MLToolEval

/// One labelled item to evaluate: a file (image or text document) or an inline text.
public struct LabeledItem: Sendable, Equatable {
    public var path: String
    public var label: String
    public var text: String?

    public init(path: String, label: String, text: String? = nil) {
        self.path = path; self.label = label; self.text = text
    }
}

/// Shared by evaluation, quantization and training: which items to evaluate, and a model's probabilities on them.
public enum Evaluation {
    /// The holdout recorded in a model, re-hashed, and the recorded items that could not be used (missing or
    /// changed since training, one line each).
    public struct Holdout: Sendable {
        public var items: [LabeledItem]
        public var problems: [String]
        public var recorded: Int

        /// "N holdout files skipped:" and the first 20 problems, for a warning.
        public var skippedText: String {
            let list = problems.prefix(20).map { "  " + $0 }.joined(separator: "\n")
                + (problems.count > 20 ? "\n  … and \(problems.count - 20) more" : "")
            return "\(problems.count) holdout files skipped:\n\(list)"
        }
    }

    /// The holdout recorded in `model`, re-hashed: missing or changed files are reported, never silently used.
    /// With `skipMissing` the usable rest is returned with the problems; otherwise any problem is an error.
    public static func recordedHoldout(_ model: Model, modelPath: String, skipMissing: Bool) throws -> Holdout {
        guard let split = model.metadata.split, !split.holdout.isEmpty else {
            throw PipelineError.invalidParameter(name: "data", reason: "\(modelPath) records no holdout split; give DATA (a label-folder tree or a CSV)")
        }
        var items = [LabeledItem]()
        var problems = [String]()
        let resolver = HoldoutResolver(root: split.root)
        for item in split.holdout {
            switch try resolver.resolve(item) {
            case .item(let resolved): items.append(resolved)
            case .problem(let problem): problems.append(problem)
            }
        }
        if !problems.isEmpty, !skipMissing || items.isEmpty {
            let list = problems.prefix(20).map { "  " + $0 }.joined(separator: "\n")
                + (problems.count > 20 ? "\n  … and \(problems.count - 20) more" : "")
            throw PipelineError.missingInput(
                file: modelPath,
                reason: "\(problems.count) of \(split.holdout.count) recorded holdout files cannot be used:\n\(list)\n"
                    + "Restore them, give DATA, or pass --skip-missing to evaluate on the other \(items.count).")
        }
        return Holdout(items: items, problems: problems, recorded: split.holdout.count)
    }

    /// Label indices of `items` in `labels`, or an error naming the first unknown label.
    public static func truth(_ items: [LabeledItem], labels: [String], modelPath: String) throws -> [Int] {
        let index = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        return try items.map { item in
            guard let i = index[item.label] else {
                throw PipelineError.badInput(file: item.path, reason: "label '\(item.label)' is not one of the model's \(labels.count) labels (\(modelPath))")
            }
            return i
        }
    }

    /// The texts of text `items` (inline, or read from their files).
    public static func documents(_ items: [LabeledItem]) throws -> [String] {
        try items.map { item in try item.text ?? TextDataset.readDocument(item.path) }
    }

    /// The model's probabilities on `items`, n × classes row-major; `progress` gets (items just done, total) after
    /// each batch. A text model reads `documents` when given (`documents(items)`, read once by the caller).
    public static func probabilities(_ model: Model, modelPath: String, items: [LabeledItem], threads: Int,
                                     documents: [String]? = nil,
                                     progress: ((Int, Int) -> Void)? = nil) throws -> [Float] {
        if model.metadata.task == .textClassifier {
            return try TextClassifier(model: model, path: modelPath).probabilities(try documents ?? Self.documents(items))
        }
        if model.metadata.task == .soundClassifier {
            let classifier = try SoundClassifier(model: model, path: modelPath, threads: threads)
            var out = [Float]()
            for item in items {
                try checkCancellation()
                out += try classifier.classify(URL(fileURLWithPath: item.path)).probabilities
                progress?(1, items.count)
            }
            return out
        }
        let classifier = try ImageClassifier(model: model, path: modelPath, threads: threads)
        var out = [Float]()
        out.reserveCapacity(items.count * max(model.metadata.labels.count, 1))
        var start = 0
        while start < items.count {
            try checkCancellation()
            let chunk = items[start..<min(items.count, start + ImageClassifier.batchSize)]
            let inputs = try chunk.map { try classifier.input(for: try ImageDecoder.decode(path: $0.path)) }
            for row in try classifier.run(inputs) { out += row }
            start += chunk.count
            progress?(chunk.count, items.count)
        }
        return out
    }

    /// Items of a label-folder tree or a CSV (text data for text models: `.txt` folders, CSV/TSV/JSON Lines).
    public static func loadItems(_ path: String, task: ModelMetadata.Task? = nil) throws -> [LabeledItem] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw PipelineError.missingInput(file: path, reason: "no such file or directory")
        }
        if task == .textClassifier {
            return try TextDataset.load(path).items.map { LabeledItem(path: $0.reference, label: $0.label, text: $0.text) }
        }
        let dataset = task == .soundClassifier ? try SoundClassifierTrainer.dataset(.path(path)) : try ImageDataset.load(path)
        return dataset.items.map { LabeledItem(path: $0.path, label: $0.label) }
    }
}

/// Throws `CancellationError` when the current task was cancelled (pipelines check between stages and batches).
func checkCancellation() throws {
    if Task.isCancelled { throw CancellationError() }
}
