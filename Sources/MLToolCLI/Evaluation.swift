import Foundation
import MLToolCore
import MLToolData
import MLToolEval

/// One labelled item to evaluate: a file (image or text document) or an inline text.
struct LabeledItem: Sendable {
    var path: String
    var label: String
    var text: String?
}

/// Shared by `eval`, `quantize` and `train`: which items to evaluate, and a model's probabilities on them.
enum Evaluation {
    /// The holdout recorded in `model`, re-hashed: missing or changed files are reported, never silently used.
    static func recordedHoldout(_ model: Model, modelPath: String, skipMissing: Bool) throws -> [LabeledItem] {
        guard let split = model.metadata.split, !split.holdout.isEmpty else {
            throw CLIError.usage(command: "eval", message: "\(modelPath) records no holdout split; give DATA (a label-folder tree or a CSV)")
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
        if !problems.isEmpty {
            let list = problems.prefix(20).map { "  " + $0 }.joined(separator: "\n")
                + (problems.count > 20 ? "\n  … and \(problems.count - 20) more" : "")
            if !skipMissing || items.isEmpty {
                throw CLIError.missingInput(
                    file: modelPath,
                    reason: "\(problems.count) of \(split.holdout.count) recorded holdout files cannot be used:\n\(list)\n"
                        + "Restore them, give DATA, or pass --skip-missing to evaluate on the other \(items.count).")
            }
            note("mltool: warning: \(problems.count) holdout files skipped:\n\(list)")
        }
        return items
    }

    /// Label indices of `items` in `labels`, or an error naming the first unknown label.
    static func truth(_ items: [LabeledItem], labels: [String], modelPath: String) throws -> [Int] {
        let index = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        return try items.map { item in
            guard let i = index[item.label] else {
                throw CLIError.badInput(file: item.path, reason: "label '\(item.label)' is not one of the model's \(labels.count) labels (\(modelPath))")
            }
            return i
        }
    }

    /// The model's probabilities on `items`, n × classes row-major.
    static func probabilities(_ model: Model, modelPath: String, items: [LabeledItem], threads: Int,
                              quiet: Bool) throws -> [Float] {
        if model.metadata.task == .textClassifier {
            return try TextPrediction.probabilities(model, modelPath: modelPath, texts: items.map { item in
                try item.text ?? TextPrediction.readDocument(item.path)
            })
        }
        let classifier = try ImageClassifier(model: model, path: modelPath, threads: threads)
        let progress = Progress("evaluating", total: items.count, quiet: quiet)
        var out = [Float]()
        out.reserveCapacity(items.count * max(model.metadata.labels.count, 1))
        var start = 0
        while start < items.count {
            let chunk = items[start..<min(items.count, start + 32)]
            let inputs = try chunk.map { try classifier.input(for: try ImageDecoder.decode(path: $0.path)) }
            for row in try classifier.run(inputs) { out += row }
            progress.advance(chunk.count)
            start += chunk.count
        }
        progress.finish()
        return out
    }
}
