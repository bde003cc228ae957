import MLToolCore

/// Errors of the detection pipeline. Each names the model or tensor and what was expected.
public enum DetectError: MLToolError, Equatable {
    /// The model is not an object detector (no detection settings).
    case notADetector(model: String, task: String)
    /// A graph output does not have the shape the decoder reads.
    case badOutput(tensor: String, expected: String, actual: [Int])
    /// An option outside its range.
    case invalidOption(what: String, value: String, expected: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .invalidOption: return .usage
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .notADetector(model, task):
            return "\(model): not an object detector (task \(task)); import it with detection settings or train one"
        case let .badOutput(tensor, expected, actual):
            return "detector output '\(tensor)': shape \(actual), expected \(expected)"
        case let .invalidOption(what, value, expected):
            return "\(what): '\(value)', expected \(expected)"
        }
    }
}
