/// A multipart/form-data body (RFC 7578 over RFC 2046's grammar), parsed strictly: the body starts with the first
/// delimiter, every part has its header lines, a blank line and content, and the body ends with the close delimiter.
/// A body that stops early or breaks the grammar is refused with the byte where it went wrong; nothing is guessed.
public struct MultipartBody: Sendable {
    public struct Part: Sendable, Equatable {
        /// Header names in lower case.
        public var headers: [String: String]
        public var content: ArraySlice<UInt8>

        /// The `name` of its Content-Disposition (the form field).
        public var name: String? { dispositionParameter("name") }
        public var filename: String? { dispositionParameter("filename") }

        private func dispositionParameter(_ key: String) -> String? {
            guard let d = headers["content-disposition"] else { return nil }
            for p in d.split(separator: ";").dropFirst() {
                let kv = p.split(separator: "=", maxSplits: 1).map { $0.trimmed(" \t") }
                guard kv.count == 2, kv[0].lowercased() == key else { continue }
                let v = kv[1]
                return v.count >= 2 && v.hasPrefix("\"") && v.hasSuffix("\"") ? String(v.dropFirst().dropLast()) : v
            }
            return nil
        }
    }

    public var parts: [Part]

    /// The most parts and the most header bytes of one part.
    public static let maxParts = 64
    public static let maxHeaderBytes = 8 << 10

    /// Parses `body` with `boundary` (Content-Type's parameter; 1–70 characters, RFC 2046 §5.1.1).
    public init(_ body: [UInt8], boundary: String, source: String = "request body") throws {
        func fail(_ at: Int, _ expected: String) -> HTTPError {
            let rest = body[min(at, body.count)...].prefix(16)
            let actual = rest.isEmpty ? "the end of the body" : "\"" + String(decoding: rest, as: UTF8.self) + "\""
            return HTTPError.malformedMultipart(source: source, offset: at, expected: expected, actual: actual)
        }
        guard (1...70).contains(boundary.utf8.count) else {
            throw HTTPError.malformedMultipart(source: source, offset: 0, expected: "a boundary of 1 to 70 characters",
                                               actual: "\(boundary.utf8.count) characters")
        }
        let dash = Array("--".utf8), crlf = Array("\r\n".utf8)
        let delimiter = dash + Array(boundary.utf8), separator = crlf + delimiter
        guard body.starts(with: delimiter) else { throw fail(0, "\"--\(boundary)\"") }
        var at = delimiter.count
        var parts = [Part]()
        while true {
            // After a delimiter: "--" closes the body, CRLF starts a part.
            if Self.matches(body, at, dash) { break }
            guard Self.matches(body, at, crlf) else { throw fail(at, "CRLF or \"--\" after the boundary") }
            at += 2
            guard parts.count < Self.maxParts else { throw fail(at, "at most \(Self.maxParts) parts") }
            var headers = [String: String]()
            let headerStart = at
            while !Self.matches(body, at, crlf) {
                guard let end = Self.find(crlf, in: body, from: at), end - headerStart <= Self.maxHeaderBytes else {
                    throw fail(at, "a header line ending in CRLF within \(Self.maxHeaderBytes) bytes")
                }
                let line = String(decoding: body[at..<end], as: UTF8.self)
                guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { throw fail(at, "a header line \"Name: value\"") }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmed(" \t")
                at = end + 2
            }
            at += 2
            guard let end = Self.find(separator, in: body, from: at) else {
                throw fail(body.count, "\"\\r\\n--\(boundary)\" ending the part that starts at byte \(at)")
            }
            parts.append(Part(headers: headers, content: body[at..<end]))
            at = end + separator.count
        }
        self.parts = parts
    }

    /// The first part named `name`.
    public func part(named name: String) -> Part? { parts.first { $0.name == name } }

    static func matches(_ body: [UInt8], _ at: Int, _ bytes: [UInt8]) -> Bool {
        at <= body.count - bytes.count && body[at..<(at + bytes.count)].elementsEqual(bytes)
    }

    /// The first index of `needle` in `body` at or after `from`.
    static func find(_ needle: [UInt8], in body: [UInt8], from: Int) -> Int? {
        guard let first = needle.first, needle.count <= body.count else { return nil }
        var i = from
        let last = body.count - needle.count
        while i <= last {
            if body[i] == first && body[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

private extension StringProtocol {
    func trimmed(_ set: String) -> String {
        let chars = Set(set)
        var s = Substring(self)
        while let c = s.first, chars.contains(c) { s = s.dropFirst() }
        while let c = s.last, chars.contains(c) { s = s.dropLast() }
        return String(s)
    }
}
