import MLToolCore

/// Errors raised while fitting a classifier head: inputs whose shapes disagree, labels out of range, values that are
/// not finite, and options outside their domain.
public enum TrainError: MLToolError, Equatable {
    /// An array does not have the size its declared shape needs.
    case shapeMismatch(what: String, expected: String, actual: String)
    /// A label is not in `0..<classes`.
    case labelOutOfRange(what: String, row: Int, label: Int, classes: Int)
    /// A class has no training rows (or zero total weight), so its weights are undefined.
    case emptyClass(what: String, classIndex: Int)
    /// A feature or weight is NaN or infinite.
    case nonFiniteValue(what: String, row: Int, column: Int, value: String)
    /// An option has a value outside its domain.
    case invalidOption(name: String, value: String, expected: String)
    /// A feature that is planned but not built yet.
    case notYetSupported(what: String)
    /// A scratch file (out-of-core rows) could not be created, written or read.
    case io(file: String, operation: String, offset: Int, reason: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .invalidOption: return .usage
        case .notYetSupported: return .software
        case .io: return .ioError
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .shapeMismatch(what, expected, actual):
            return "\(what): expected \(expected), found \(actual)"
        case let .labelOutOfRange(what, row, label, classes):
            return "\(what): row \(row): label \(label), expected 0..<\(classes)"
        case let .emptyClass(what, classIndex):
            return "\(what): class \(classIndex) has no rows with positive weight"
        case let .nonFiniteValue(what, row, column, value):
            return "\(what): row \(row) column \(column): value \(value), expected a finite number"
        case let .invalidOption(name, value, expected):
            return "option \(name): \(value), expected \(expected)"
        case let .notYetSupported(what):
            return "\(what) is not yet supported"
        case let .io(file, operation, offset, reason):
            return "\(file): cannot \(operation) at byte \(offset): \(reason)"
        }
    }
}
