import MLToolCore

/// Errors raised while reading images, data sets and the feature cache. Every message names the file and, where
/// there is one, the line and column.
public enum DataError: MLToolError, Equatable {
    /// The file does not exist or cannot be read.
    case cannotRead(file: String, reason: String)
    /// A file could not be written.
    case cannotWrite(file: String, reason: String)
    /// The file has no bytes at all.
    case emptyFile(file: String)
    /// The content is neither JPEG nor PNG (files are recognised by content, never by extension).
    case notAnImage(file: String, head: [UInt8])
    /// The image data ends early.
    case truncatedImage(file: String, format: String, place: String)
    /// The decoder rejected the data.
    case corruptImage(file: String, format: String, reason: String)
    /// width × height exceeds the decompression-bomb cap.
    case tooManyPixels(file: String, width: Int, height: Int, limit: Int)
    /// A CSV syntax error at a 1-based line and column.
    case csvSyntax(file: String, line: Int, column: Int, message: String)
    /// A CSV record has the wrong number of fields.
    case csvFieldCount(file: String, line: Int, expected: Int, actual: Int)
    /// A named CSV column is not in the header.
    case csvMissingColumn(file: String, column: String, available: [String])
    /// A CSV record names an image that does not exist.
    case missingFile(file: String, line: Int, path: String)
    /// The data set has fewer than two classes.
    case tooFewClasses(source: String, labels: [String])
    /// Classes with fewer usable images than required, as "label (count)".
    case classesTooSmall(source: String, classes: [String], minimum: Int)
    /// More than the allowed share of a data set's images could not be decoded; `first` is the first reason.
    case tooManyBadImages(source: String, bad: Int, total: Int, limitPercent: Int, first: String)
    /// An image preprocessing description that cannot be applied.
    case invalidPreprocessing(what: String)
    /// An annotation file that cannot be used: malformed, or a field missing or of the wrong kind (`place` is a
    /// line, an image entry or an object).
    case badAnnotation(file: String, place: String, expected: String, actual: String)
    /// More than the allowed share of a data set's objects were skipped; `first` is the first skip.
    case tooManyBadAnnotations(source: String, skipped: Int, total: Int, limitPercent: Int, first: String)
    /// A line of a table longer than `InputLimits.maxLineBytes`; `line` is 1-based, `offset` the byte it starts at.
    case lineTooLong(file: String, line: Int, offset: Int, limit: Int)
    /// A file larger than `InputLimits.maxFileBytes` that would be read whole.
    case fileTooLarge(file: String, size: Int, limit: Int)
    /// JSON nested deeper than `InputLimits.maxJSONDepth`; `offset` is the byte of the first bracket too deep.
    case jsonTooDeep(file: String, offset: Int, limit: Int)
    /// An argument outside its allowed range (fractions, rules).
    case invalidArgument(what: String, value: String, expected: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .cannotRead, .missingFile: return .noInput
        case .invalidArgument: return .usage
        case .cannotWrite: return .cannotCreate
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .cannotRead(file, reason):
            return "\(file): cannot read: \(reason)"
        case let .cannotWrite(file, reason):
            return "\(file): cannot write: \(reason)"
        case let .emptyFile(file):
            return "\(file): empty file (0 bytes)"
        case let .notAnImage(file, head):
            let hex = head.prefix(8).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            return "\(file): not a JPEG or PNG image: byte 0: starts \(hex.joined(separator: " ")), neither the PNG signature (89 50 4e 47 0d 0a 1a 0a) nor a JPEG SOI marker (ff d8)"
        case let .truncatedImage(file, format, place):
            return "\(file): truncated \(format): \(place)"
        case let .corruptImage(file, format, reason):
            return "\(file): corrupt \(format): \(reason)"
        case let .tooManyPixels(file, width, height, limit):
            return "\(file): \(width)×\(height) is \(width * height) pixels, over the limit of \(limit)"
        case let .csvSyntax(file, line, column, message):
            return "\(file):\(line):\(column): \(message)"
        case let .csvFieldCount(file, line, expected, actual):
            return "\(file):\(line): \(actual) field\(actual == 1 ? "" : "s"), expected \(expected)"
        case let .csvMissingColumn(file, column, available):
            return "\(file): no column '\(column)' (columns: \(available.joined(separator: ", ")))"
        case let .missingFile(file, line, path):
            return "\(file):\(line): no such file: \(path)"
        case let .tooFewClasses(source, labels):
            let found = labels.isEmpty ? "no classes" :
                "only \(labels.count) class\(labels.count == 1 ? "" : "es") (\(labels.joined(separator: ", ")))"
            return "\(source): found \(found); need at least 2"
        case let .classesTooSmall(source, classes, minimum):
            return "\(source): every class needs at least \(minimum) usable images: \(classes.joined(separator: ", "))"
        case let .tooManyBadImages(source, bad, total, limitPercent, first):
            return "\(source): \(bad) of \(total) images could not be decoded (more than \(limitPercent)%); first: \(first)"
        case let .invalidPreprocessing(what):
            return "image preprocessing: \(what)"
        case let .badAnnotation(file, place, expected, actual):
            return "\(file): \(place): expected \(expected), found \(actual)"
        case let .tooManyBadAnnotations(source, skipped, total, limitPercent, first):
            return "\(source): \(skipped) of \(total) annotations were skipped (more than \(limitPercent)%); first: \(first)"
        case let .lineTooLong(file, line, offset, limit):
            return "\(file):\(line): line longer than \(limit) bytes (it starts at byte \(offset)); MLTOOL_MAX_LINE_BYTES sets the limit"
        case let .fileTooLarge(file, size, limit):
            return "\(file): \(size) bytes, more than the \(limit) read whole into memory; MLTOOL_MAX_FILE_BYTES sets the limit"
        case let .jsonTooDeep(file, offset, limit):
            return "\(file): byte \(offset): JSON nesting deeper than \(limit) arrays and objects"
        case let .invalidArgument(what, value, expected):
            return "\(what): '\(value)', expected \(expected)"
        }
    }
}
