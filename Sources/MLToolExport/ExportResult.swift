import MLToolCore

/// What an export produced: the file's bytes and notes for the user (weights stored uncompressed, …).
public struct ExportResult: Sendable {
    public var bytes: [UInt8]
    public var notes: [String]
}

extension ExportResult {
    /// The network graph of `model`, or the error an exporter to `format` gives for a model it cannot express:
    /// a text classifier (`textReason` says why) or a model without a graph.
    static func graph(of model: Model, name: String, format: String, textReason: String) throws -> Graph {
        guard model.metadata.task != .tabular else {
            throw ExportError.unsupported(model: name, format: format, place: "tree ensemble",
                                          reason: "\(format) has no tree-ensemble model; export a tabular model with --to onnx or --to coreml")
        }
        guard model.metadata.task != .textClassifier else {
            throw ExportError.unsupported(model: name, format: format, place: "text classifier", reason: textReason)
        }
        guard let graph = model.metadata.graph else {
            throw ExportError.unsupported(model: name, format: format, place: "model", reason: "it has no network graph")
        }
        return graph
    }
}
