import MLToolCore

/// Errors raised while reading tables and training or loading tree ensembles. Every message names the file and,
/// where there is one, the line (1-based, the header is line 1) and the column (1-based, with its name).
public enum TabularError: MLToolError, Equatable {
    /// The table has a header and no rows (or no header).
    case emptyTable(file: String)
    /// A row with more or fewer fields than the header.
    case raggedRow(file: String, line: Int, expected: Int, actual: Int)
    /// A column read as numbers holds one or a few fields that are not (`count` of them; the first is named).
    case notANumber(file: String, line: Int, column: Int, name: String, value: String, count: Int)
    /// A column named by --target, --categorical or --ignore that the header lacks.
    case missingColumn(file: String, name: String, available: [String])
    /// A categorical column with more than 65,536 distinct values.
    case tooManyCategories(file: String, column: Int, name: String, limit: Int)
    /// The target of a row is missing, NaN or infinite.
    case badTarget(file: String, line: Int, column: Int, name: String, value: String)
    /// A classification target with fewer than two classes.
    case oneClass(file: String, column: Int, name: String, label: String)
    /// A JSON Lines row that is not a JSON object of strings, numbers, booleans and nulls.
    case badJSONLine(file: String, line: Int, reason: String)
    /// A tree ensemble in a model that cannot be used (checked beyond the format's rules).
    case invalidModel(file: String, what: String, expected: String, actual: String)
    /// A feature of this release that is not there yet.
    case notYetSupported(what: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .missingColumn: return .usage
        case .notYetSupported: return .usage
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case .emptyTable(let f): return "\(f): the table has no rows"
        case let .raggedRow(f, line, expected, actual):
            return "\(f):\(line): \(actual) fields; the header has \(expected)"
        case let .notANumber(f, line, column, name, value, count):
            let others = count == 1 ? "the only field" : "the first of \(count) fields"
            return "\(f):\(line):\(column): column '\(name)' is numeric but '\(value)' is not a number (\(others) that is not; "
                + "fix the row, or give --categorical \(name) or --ignore \(name))"
        case let .missingColumn(f, name, available):
            return "\(f): no column '\(name)' (columns: \(available.joined(separator: ", ")))"
        case let .tooManyCategories(f, column, name, limit):
            return "\(f): column \(column) '\(name)' has more than \(limit) categories (give --ignore \(name), or make it numeric)"
        case let .badTarget(f, line, column, name, value):
            return "\(f):\(line):\(column): target '\(name)' is '\(value)': every row needs a finite target"
        case let .oneClass(f, column, name, label):
            return "\(f): column \(column) target '\(name)' has one class ('\(label)'); a classifier needs at least 2"
        case let .badJSONLine(f, line, reason): return "\(f):\(line): \(reason)"
        case let .invalidModel(f, what, expected, actual): return "\(f): \(what): expected \(expected), found \(actual)"
        case .notYetSupported(let what): return "\(what) is not yet supported"
        }
    }
}
