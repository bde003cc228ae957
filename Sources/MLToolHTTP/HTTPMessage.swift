import Foundation

/// What arrives before a request's body: its method, path (without the query), query arguments and headers (names in
/// lower case). A server decides from it alone whether to read the body at all.
public struct HTTPRequestHead: Sendable {
    public var method: String
    public var path: String
    public var headers: [String: String]
    /// The query's arguments, percent-decoded (a repeated name keeps its last value).
    public var arguments: [String: String]
    /// The length the client announced (nil for a chunked body or none).
    public var contentLength: Int? { headers["content-length"].flatMap { Int($0) } }

    public init(method: String, path: String, headers: [String: String] = [:], arguments: [String: String] = [:]) {
        self.method = method; self.path = path; self.headers = headers; self.arguments = arguments
    }

    /// A header's value; `name` in any case.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The media type of Content-Type, lower case, without parameters ("multipart/form-data").
    public var mediaType: String? {
        header("content-type").map { $0.split(separator: ";", maxSplits: 1).first.map(String.init) ?? "" }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    /// A parameter of Content-Type ("boundary"), unquoted.
    public func contentTypeParameter(_ name: String) -> String? {
        guard let type = header("content-type") else { return nil }
        for p in type.split(separator: ";").dropFirst() {
            let kv = p.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard kv.count == 2, kv[0].lowercased() == name else { continue }
            let v = kv[1]
            return v.count >= 2 && v.hasPrefix("\"") && v.hasSuffix("\"") ? String(v.dropFirst().dropLast()) : v
        }
        return nil
    }
}

/// A whole request: its head and its body (never more than the server's body limit).
public struct HTTPRequest: Sendable {
    public var head: HTTPRequestHead
    public var body: [UInt8]

    public init(head: HTTPRequestHead, body: [UInt8] = []) { self.head = head; self.body = body }
}

/// A response: status, headers and body.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status; self.headers = headers; self.body = body
    }

    /// A JSON body (`json` already encoded) with its content type.
    public static func json(_ status: Int, _ json: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array((json + "\n").utf8))
    }

    /// A plain-text body.
    public static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }
}

/// What a server built on `HTTPServer` does with requests. Both are called on the server's threads.
public protocol HTTPHandler: AnyObject, Sendable {
    /// Called when a head arrives, before any of its body is read: a response ends the request there (its body is
    /// never read; the connection is closed after it when a body was announced).
    func screen(_ head: HTTPRequestHead) -> HTTPResponse?
    /// Called with the whole request; `reply` exactly once, from any thread (the connection waits, suspended).
    func handle(_ request: HTTPRequest, reply: @escaping @Sendable (HTTPResponse) -> Void)
}
