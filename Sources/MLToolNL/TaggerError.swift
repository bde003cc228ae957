import MLToolCore

/// Errors from word tagging: bad settings, unusable training data, and models that cannot be read back.
public enum TaggerError: MLToolError, Equatable {
    case invalidParameter(name: String, value: String, expected: String)
    /// Training data that cannot train a tagger (`reason` says why).
    case unusableData(source: String, reason: String)
    /// A stored tagger that does not hold together (`what` names the part).
    case invalidModel(file: String, what: String, expected: String, actual: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .invalidParameter: return .usage
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .invalidParameter(name, value, expected):
            return "tagger settings: \(name): \(value), expected \(expected)"
        case let .unusableData(source, reason):
            return "\(source): \(reason)"
        case let .invalidModel(file, what, expected, actual):
            return "\(file): tagger \(what): \(actual), expected \(expected)"
        }
    }
}
