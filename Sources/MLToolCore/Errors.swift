/// Process exit statuses, after BSD sysexits(3). The CLI maps every error to one of these.
public enum ExitStatus: Int32, Sendable {
    case ok = 0
    case usage = 64        // EX_USAGE: bad command line
    case dataError = 65    // EX_DATAERR: input data was malformed
    case noInput = 66      // EX_NOINPUT: an input file did not exist or was unreadable
    case software = 70     // EX_SOFTWARE: internal error
    case osError = 71      // EX_OSERR: the operating system refused something mltool needs (e.g. a sandbox)
    case cannotCreate = 73 // EX_CANTCREAT: an output file could not be created
    case ioError = 74      // EX_IOERR: an error while doing I/O
}

/// Every module's error enum conforms: a message that names the file and the place, and an exit status.
public protocol MLToolError: Error, CustomStringConvertible {
    var exitStatus: ExitStatus { get }
}

/// Errors raised by MLToolCore itself (byte readers, checked arithmetic, tensor access).
public enum CoreError: MLToolError, Equatable {
    /// A read of `needed` bytes at `offset` ran past the end of `length` bytes.
    case truncated(file: String, offset: Int, needed: Int, length: Int, what: String)
    /// A size computed from input data overflowed Int.
    case overflow(file: String, what: String)
    /// A value is outside what the format allows.
    case invalidValue(file: String, offset: Int?, what: String, expected: String, actual: String)
    /// A tensor's dtype cannot be used where it was asked for.
    case unsupportedDType(tensor: String, dtype: String, operation: String)
    /// Shapes do not agree.
    case shapeMismatch(what: String, expected: [Int], actual: [Int])
    /// A file could not be read.
    case cannotRead(file: String, reason: String)
    /// Arrays that do not form a valid CSR matrix.
    case invalidSparseMatrix(what: String, index: Int, expected: String, actual: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .cannotRead: return .noInput
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .truncated(file, offset, needed, length, what):
            return "\(file): \(what): truncated at byte \(offset): needs \(needed) bytes, only \(max(0, length - offset)) remain"
        case let .overflow(file, what):
            return "\(file): \(what): size overflows"
        case let .invalidValue(file, offset, what, expected, actual):
            let at = offset.map { " at byte \($0)" } ?? ""
            return "\(file)\(at): \(what): expected \(expected), found \(actual)"
        case let .unsupportedDType(tensor, dtype, operation):
            return "tensor '\(tensor)': dtype \(dtype) is not supported by \(operation)"
        case let .shapeMismatch(what, expected, actual):
            return "\(what): shape \(actual), expected \(expected)"
        case let .cannotRead(file, reason):
            return "\(file): cannot read: \(reason)"
        case let .invalidSparseMatrix(what, index, expected, actual):
            return "sparse matrix \(what)[\(index)]: \(actual), expected \(expected)"
        }
    }
}
