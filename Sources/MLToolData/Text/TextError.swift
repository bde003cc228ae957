import MLToolCore

/// Errors from text feature extraction: bad settings, a damaged stored vocabulary, and malformed sparse matrices.
/// (Kept apart from the image/data-set errors so the two halves of MLToolData can grow independently.)
public enum TextError: MLToolError, Equatable {
    /// A `TextConfig` field is outside its domain.
    case invalidConfig(field: String, value: String, expected: String)
    /// The stored vocabulary tensor cannot be read back.
    case invalidVocabulary(tensor: String, offset: Int, reason: String)
    /// A stored tensor does not have the size the configuration needs.
    case sizeMismatch(what: String, expected: Int, actual: Int)
    /// Arrays that do not form a valid CSR matrix.
    case invalidSparseMatrix(what: String, index: Int, expected: String, actual: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .invalidConfig: return .usage
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .invalidConfig(field, value, expected):
            return "text settings: \(field): \(value), expected \(expected)"
        case let .invalidVocabulary(tensor, offset, reason):
            return "tensor '\(tensor)' at byte \(offset): \(reason)"
        case let .sizeMismatch(what, expected, actual):
            return "\(what): \(actual) values, expected \(expected)"
        case let .invalidSparseMatrix(what, index, expected, actual):
            return "sparse matrix \(what)[\(index)]: \(actual), expected \(expected)"
        }
    }
}
