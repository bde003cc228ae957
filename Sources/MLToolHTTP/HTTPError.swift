import MLToolCore

/// Errors of the HTTP layer: the server that cannot start, and request bodies mltool parses itself (multipart, JSON)
/// that are malformed. `source` names the request ("request body", or a part), `offset` the byte where it went wrong.
public enum HTTPError: MLToolError, Equatable {
    /// The bind address is not an IPv4 or IPv6 literal.
    case badAddress(host: String)
    /// libmicrohttpd could not start (port taken, no permission, …).
    case cannotStart(host: String, port: Int, reason: String)
    /// A multipart body that breaks RFC 7578's grammar at `offset`.
    case malformedMultipart(source: String, offset: Int, expected: String, actual: String)
    /// A JSON body that is not what the endpoint takes (`place`: a byte offset or a key).
    case malformedJSON(source: String, place: String, expected: String, actual: String)
    /// A body, part or text over its limit.
    case tooLarge(source: String, what: String, size: Int, limit: Int)

    public var exitStatus: ExitStatus {
        switch self {
        case .badAddress: return .usage
        case .cannotStart: return .osError
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .badAddress(host):
            return "--host \(host): expected an IPv4 or IPv6 address (such as 127.0.0.1 or ::1)"
        case let .cannotStart(host, port, reason):
            return "cannot listen on \(host):\(port): \(reason)"
        case let .malformedMultipart(source, offset, expected, actual):
            return "\(source): byte \(offset): expected \(expected), found \(actual)"
        case let .malformedJSON(source, place, expected, actual):
            return "\(source): \(place): expected \(expected), found \(actual)"
        case let .tooLarge(source, what, size, limit):
            return "\(source): \(what) of \(size) bytes is over the limit of \(limit)"
        }
    }
}
