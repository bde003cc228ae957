import Foundation

/// One input of a prediction request: an encoded image (JPEG or PNG bytes) or a text.
public enum ServingInput: Sendable {
    /// `name` stands for the image in its answer (`predict --json`'s "file").
    case image(bytes: [UInt8], name: String)
    case text(String)
}

/// A model loaded for `mltool serve` (and `ModelServer`): a task's predictor that answers a batch of inputs at
/// once. `TaskKind.servingPredictor` makes one; `ModelServer` gathers concurrent requests into its batches.
public protocol ServingPredictor: Sendable {
    /// Whether it takes images (else texts).
    var takesImages: Bool { get }
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
