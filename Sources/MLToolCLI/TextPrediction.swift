import Foundation
import MLToolCore
import MLToolData

/// Text classifiers at prediction time: raw strings → the model's own tokenizer and vectorizer → probabilities.
enum TextPrediction {
    /// The model's probabilities for `texts`, n × classes row-major.
    static func probabilities(_ model: Model, modelPath: String, texts: [String]) throws -> [Float] {
        try TextClassifier(model: model, path: modelPath).probabilities(texts)
    }

    /// The contents of a text document (UTF-8), with errors naming the file and byte offset.
    static func readDocument(_ path: String) throws -> String {
        try TextDataset.readDocument(path)
    }

    /// `mltool predict` on a text model: each file in `files` is one document, each of `texts` one string.
    static func predict(_ model: Model, modelPath: String, files: [String], texts: [String], k: Int, json: Bool) throws {
        let classifier = try TextClassifier(model: model, path: modelPath)
        var inputs = [(name: String, isFile: Bool, text: String)]()
        var failures = [Error]()
        for file in files {
            do { inputs.append((file, true, try readDocument(file))) } catch {
                failures.append(error)
                note("mltool: error: \((error as? MLToolError)?.description ?? "\(error)")")
            }
        }
        inputs += texts.map { ($0, false, $0) }
        let probs = try classifier.probabilities(inputs.map(\.text))
        let n = classifier.labels.count
        for (i, input) in inputs.enumerated() {
            let row = Array(probs[(i * n)..<((i + 1) * n)])
            if input.isFile {
                CLI.printPrediction(file: input.name, row: row, labels: classifier.labels, k: k, json: json)
            } else {
                CLI.printPrediction(file: input.name, row: row, labels: classifier.labels, k: k, json: json, key: "text",
                                    title: "\"" + snippet(input.name) + "\"")
            }
        }
        if let first = failures.first {
            if failures.count == files.count && texts.isEmpty { throw first }
            throw CLIError.badInput(file: "predict", reason: "\(failures.count) of \(files.count) files could not be read")
        }
    }

    /// The first line of `text`, at most 60 characters, for display.
    static func snippet(_ text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.count > 60 ? String(line.prefix(59)) + "…" : line
    }
}
