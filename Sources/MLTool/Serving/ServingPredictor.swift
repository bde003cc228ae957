import Foundation

/// One input of a prediction request: an encoded image (JPEG or PNG bytes), a text, or a table row.
public enum ServingInput: Sendable {
    /// `name` stands for the image in its answer (`predict --json`'s "file").
    case image(bytes: [UInt8], name: String)
    case text(String)
    /// A tabular row as column → field (a column it lacks is missing).
    case row([String: String])

    /// What a model takes, and the request bodies (media types) that carry it.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case images, texts, rows

        /// The Content-Types a predict request to such a model may have (anything else: 415).
        public var mediaTypes: [String] {
            switch self {
            case .images: return ["image/jpeg", "image/png", "application/octet-stream", "multipart/form-data"]
            case .texts: return ["application/json", "text/plain"]
            case .rows: return ["application/json", "text/csv", "application/x-ndjson"]
            }
        }
    }
}

/// What a model takes, in `mltool serve` and in the studio's preview form: its input kind and, for table rows, the
/// columns it reads (a categorical one with the categories it knows). `TaskKind.previewInput` says it.
public struct PreviewInput: Codable, Sendable, Equatable {
    public struct Column: Codable, Sendable, Equatable {
        public var name: String
        public var categories: [String]?
        public init(name: String, categories: [String]? = nil) { self.name = name; self.categories = categories }
    }

    public var takes: ServingInput.Kind
    public var columns: [Column]?
    public init(takes: ServingInput.Kind, columns: [Column]? = nil) { self.takes = takes; self.columns = columns }
}

/// A model loaded for `mltool serve` (and `ModelServer`): a task's predictor that answers a batch of inputs at
/// once. `TaskKind.servingPredictor` makes one; `ModelServer` gathers concurrent requests into its batches.
public protocol ServingPredictor: Sendable {
    /// One JSON object per input, in order, each as `mltool predict --json` prints it for that input; an input
    /// that cannot be read fails alone. Called from one thread at a time.
    func predict(_ inputs: [ServingInput]) -> [Result<String, Error>]
}

extension ServingInput {
    /// The text, or a refusal naming the model for an image sent to a text model.
    func text(for model: String) throws -> String {
        guard case .text(let t) = self else { throw PipelineError.badInput(file: model, reason: "a text model takes texts, not images") }
        return t
    }
}
