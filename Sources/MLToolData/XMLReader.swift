/// A small XML reader for annotation files (Pascal VOC): elements, their text and line numbers. Attributes are
/// skipped, comments, processing instructions and a DOCTYPE ignored, CDATA kept as text, the five predefined
/// entities and numeric character references decoded. Malformed input throws `DataError.badAnnotation` with the line.
public struct XMLElement: Equatable, Sendable {
    public var name: String
    public var text: String
    public var children: [XMLElement]
    /// The 1-based line of the start tag.
    public var line: Int

    /// The first child named `name`.
    public func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }
    /// Every child named `name`.
    public func all(_ name: String) -> [XMLElement] { children.filter { $0.name == name } }
    /// The trimmed text of the first child named `name`.
    public func value(_ name: String) -> String? { child(name).map { $0.text.trimmingSpaces() } }
}

public enum XMLReader {
    /// The root element of the document in `bytes`.
    public static func parse(_ bytes: [UInt8], file: String) throws -> XMLElement {
        var p = Parser(b: bytes, file: file)
        return try p.document()
    }

    struct Parser {
        let b: [UInt8]
        let file: String
        var i = 0
        var line = 1
        var depth = 0

        func fail(_ expected: String, _ actual: String) -> DataError {
            .badAnnotation(file: file, place: "line \(line)", expected: expected, actual: actual)
        }

        mutating func advance() {
            if b[i] == UInt8(ascii: "\n") { line += 1 }
            i += 1
        }

        func starts(_ s: String) -> Bool {
            let u = Array(s.utf8)
            return i + u.count <= b.count && Array(b[i..<(i + u.count)]) == u
        }

        mutating func skip(past s: String) throws {
            while i < b.count && !starts(s) { advance() }
            guard i < b.count else { throw fail("'\(s)'", "the end of the file") }
            for _ in 0..<s.utf8.count { advance() }
        }

        mutating func skipMisc() throws {
            while i < b.count {
                if b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { advance() }
                else if starts("<?") { try skip(past: "?>") }
                else if starts("<!--") { try skip(past: "-->") }
                else if starts("<!DOCTYPE") { try skip(past: ">") }
                else { break }
            }
        }

        mutating func document() throws -> XMLElement {
            if starts("\u{FEFF}") { i += 3 }
            try skipMisc()
            guard i < b.count, b[i] == UInt8(ascii: "<") else { throw fail("an element", i < b.count ? "text" : "an empty file") }
            let root = try element()
            try skipMisc()
            guard i == b.count else { throw fail("the end of the document", "more content after the root element") }
            return root
        }

        mutating func name() throws -> String {
            let start = i
            while i < b.count, !" \t\r\n/>=".utf8.contains(b[i]) { i += 1 }
            guard i > start else { throw fail("a name", i < b.count ? "'\(Character(UnicodeScalar(b[i])))'" : "the end of the file") }
            return String(decoding: b[start..<i], as: UTF8.self)
        }

        mutating func element() throws -> XMLElement {
            depth += 1
            defer { depth -= 1 }
            guard depth <= 256 else { throw fail("elements nested at most 256 deep", "deeper") }
            let startLine = line
            i += 1  // <
            let n = try name()
            // Attributes: skipped up to the end of the tag, quoted values may hold '>'.
            var selfClosing = false
            while true {
                guard i < b.count else { throw fail("'>' closing <\(n)>", "the end of the file") }
                let c = b[i]
                if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                    advance()
                    while i < b.count && b[i] != c { advance() }
                    guard i < b.count else { throw fail("a closing quote in <\(n)>", "the end of the file") }
                    advance()
                } else if c == UInt8(ascii: "/"), i + 1 < b.count, b[i + 1] == UInt8(ascii: ">") {
                    i += 2; selfClosing = true; break
                } else if c == UInt8(ascii: ">") {
                    i += 1; break
                } else {
                    advance()
                }
            }
            var e = XMLElement(name: n, text: "", children: [], line: startLine)
            if selfClosing { return e }
            var text: [UInt8] = []
            while true {
                guard i < b.count else { throw fail("</\(n)>", "the end of the file") }
                if starts("</") {
                    i += 2
                    let close = try name()
                    guard close == n else { throw fail("</\(n)>", "</\(close)>") }
                    while i < b.count && b[i] != UInt8(ascii: ">") { advance() }
                    guard i < b.count else { throw fail("'>'", "the end of the file") }
                    i += 1
                    break
                } else if starts("<!--") {
                    try skip(past: "-->")
                } else if starts("<![CDATA[") {
                    i += 9
                    let start = i
                    while i < b.count && !starts("]]>") { advance() }
                    guard i < b.count else { throw fail("']]>'", "the end of the file") }
                    text += b[start..<i]
                    i += 3
                } else if starts("<?") {
                    try skip(past: "?>")
                } else if b[i] == UInt8(ascii: "<") {
                    e.children.append(try element())
                } else if b[i] == UInt8(ascii: "&") {
                    text += Array(try entity().utf8)
                } else {
                    text.append(b[i])
                    advance()
                }
            }
            e.text = String(decoding: text, as: UTF8.self)
            return e
        }

        mutating func entity() throws -> String {
            let start = i
            while i < b.count && b[i] != UInt8(ascii: ";") && i - start < 12 { i += 1 }
            guard i < b.count, b[i] == UInt8(ascii: ";") else { throw fail("an entity ending in ';'", "'&' alone") }
            let body = String(decoding: b[(start + 1)..<i], as: UTF8.self)
            i += 1
            switch body {
            case "lt": return "<"
            case "gt": return ">"
            case "amp": return "&"
            case "quot": return "\""
            case "apos": return "'"
            default:
                if body.hasPrefix("#"), let v = body.hasPrefix("#x") ? UInt32(body.dropFirst(2), radix: 16) : UInt32(body.dropFirst()),
                   let u = UnicodeScalar(v) {
                    return String(Character(u))
                }
                throw fail("a known entity", "'&\(body);'")
            }
        }
    }
}
