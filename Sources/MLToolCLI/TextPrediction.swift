import Foundation
import MLToolCore

/// Text classifiers at prediction time: raw strings → the model's own tokenizer and vectorizer → probabilities.
enum TextPrediction {
    /// The model's probabilities for `texts`, n × classes row-major.
    static func probabilities(_ model: Model, modelPath: String, texts: [String]) throws -> [Float] {
        throw CLIError.notSupported("\(modelPath): evaluating text models")
    }

    /// The contents of a text document (UTF-8), with errors naming the file and byte offset.
    static func readDocument(_ path: String) throws -> String {
        throw CLIError.notSupported("\(path): reading text documents")
    }
}
