import MLToolCore

/// Errors from text data and features: unreadable documents and tables (with their place), too little data, bad
/// settings, a damaged stored vocabulary, and malformed sparse matrices.
/// (Kept apart from the image/data-set errors so the two halves of MLToolData can grow independently.)
public enum TextError: MLToolError, Equatable {
    /// A `TextConfig` field is outside its domain.
    case invalidConfig(field: String, value: String, expected: String)
    /// The stored vocabulary tensor cannot be read back.
    case invalidVocabulary(tensor: String, offset: Int, reason: String)
    /// A stored tensor does not have the size the configuration needs.
    case sizeMismatch(what: String, expected: Int, actual: Int)
    /// A text file is not valid UTF-8: the first bad byte's offset (0-based) and its line (1-based).
    case invalidUTF8(file: String, offset: Int, line: Int)
    /// A JSON Lines record that is not an object with the needed string fields.
    case jsonLine(file: String, line: Int, message: String)
    /// A data set with no usable documents at all.
    case noDocuments(source: String, reason: String)
    /// The data set has fewer than two classes.
    case tooFewClasses(source: String, labels: [String])
    /// Classes with fewer documents than required, as "label (count)".
    case classesTooSmall(source: String, classes: [String], minimum: Int)
    /// Tagged data: a sentence starting at `line` with no tokens (only comments, or only multiword-token lines).
    case emptySentence(file: String, line: Int)
    /// Tagged data: a token with no tag (`column` names the missing tag, e.g. "UPOS" or "tag").
    case missingTag(file: String, line: Int, token: String, column: String)
    /// A CoNLL-U token line without exactly 10 tab-separated fields.
    case columnCount(file: String, line: Int, expected: Int, actual: Int)
    /// A CoNLL-U field that does not parse (`field` names it, e.g. "ID").
    case badField(file: String, line: Int, field: String, value: String, expected: String)
    /// Tagged JSON: a sentence whose token and label arrays differ in length.
    case lengthMismatch(file: String, sentence: Int, tokens: Int, labels: Int)
    /// Tagged JSON that is not an array of objects with string arrays (`place` says where).
    case jsonStructure(file: String, place: String, message: String)

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
        case let .invalidUTF8(file, offset, line):
            return "\(file):\(line): invalid UTF-8 at byte offset \(offset)"
        case let .jsonLine(file, line, message):
            return "\(file):\(line): \(message)"
        case let .noDocuments(source, reason):
            return "\(source): no documents: \(reason)"
        case let .tooFewClasses(source, labels):
            let found = labels.isEmpty ? "no classes" :
                "only \(labels.count) class\(labels.count == 1 ? "" : "es") (\(labels.joined(separator: ", ")))"
            return "\(source): found \(found); need at least 2"
        case let .classesTooSmall(source, classes, minimum):
            return "\(source): every class needs at least \(minimum) documents: \(classes.joined(separator: ", "))"
        case let .emptySentence(file, line):
            return "\(file):\(line): a sentence with no tokens"
        case let .missingTag(file, line, token, column):
            return "\(file):\(line): token '\(token)' has no \(column)"
        case let .columnCount(file, line, expected, actual):
            return "\(file):\(line): \(actual) tab-separated field\(actual == 1 ? "" : "s"), expected \(expected)"
        case let .badField(file, line, field, value, expected):
            return "\(file):\(line): \(field) '\(value)', expected \(expected)"
        case let .lengthMismatch(file, sentence, tokens, labels):
            return "\(file): sentence \(sentence): \(tokens) token\(tokens == 1 ? "" : "s") but \(labels) label\(labels == 1 ? "" : "s")"
        case let .jsonStructure(file, place, message):
            return "\(file): \(place): \(message)"
        }
    }
}
