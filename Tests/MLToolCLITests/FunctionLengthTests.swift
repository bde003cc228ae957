import Foundation
import Testing

/// No function in Sources/ is over 80 lines (issue 50), counted from its `func` / `init` / `subscript` / `deinit`
/// line to its closing brace by a brace counter that skips strings and comments.
///
/// Exempt: the kernels (`Kernels+*.swift`: scalar references and SIMD paths read best as one loop nest) and
/// generated code. Only Swift is scanned, so the generated protobuf-c sources (`CCoreMLProto`, `COnnxProto`) and the C
/// kernels (`CMLToolKernels`, `CMLToolTrainKernels`) are outside it; a Swift file whose first line starts with
/// `// Generated` would be exempt too (none is today).
///
/// A function not yet split would be listed in `allowed` (none is today) with its length: one that grows past it fails, and
/// so does any other function over the limit. When one is split, its line goes (the list only shrinks).
struct FunctionLengthTests {
    static let limit = 80

    /// "path function" → its length today. Shrink this list; never add to it.
    static let allowed: [String: Int] = [:]

    struct Function: Equatable { var name: String, line: Int, length: Int }

    static func exempt(_ path: String, _ text: String) -> Bool {
        let file = (path as NSString).lastPathComponent
        return file.hasPrefix("Kernels+") || text.hasPrefix("// Generated")
    }

    /// The source with string literals (plain, multi-line, raw; interpolations kept as code) and comments blanked
    /// out, line breaks kept.
    static func code(_ text: String) -> [Character] {
        var scanner = CodeScanner(s: Array(text))
        scanner.code(untilParen: false)
        return scanner.out
    }

    struct CodeScanner {
        let s: [Character]
        var i = 0
        var out: [Character] = []

        func at(_ literal: String) -> Bool {
            var k = i
            for ch in literal {
                guard k < s.count, s[k] == ch else { return false }
                k += 1
            }
            return true
        }

        /// Code up to the end, or up to the `)` closing an interpolation (consumed).
        mutating func code(untilParen: Bool) {
            var parens = 0
            while i < s.count {
                if at("/*") {
                    blockComment()
                } else if at("//") {
                    while i < s.count, s[i] != "\n" { i += 1 }
                } else if s[i] == "#" || s[i] == "\"" {
                    var hashes = 0
                    while i + hashes < s.count, s[i + hashes] == "#" { hashes += 1 }
                    guard i + hashes < s.count, s[i + hashes] == "\"" else { out.append(s[i]); i += 1; continue }
                    i += hashes
                    let multiline = at("\"\"\"")
                    i += multiline ? 3 : 1
                    out.append("\"")
                    string(hashes: hashes, multiline: multiline)
                } else {
                    if untilParen && s[i] == ")" {
                        if parens == 0 { i += 1; return }
                        parens -= 1
                    }
                    if untilParen && s[i] == "(" { parens += 1 }
                    out.append(s[i])
                    i += 1
                }
            }
        }

        mutating func blockComment() {
            var depth = 0
            while i < s.count {
                if at("/*") { depth += 1; i += 2; continue }
                if at("*/") { depth -= 1; i += 2; if depth == 0 { return }; continue }
                if s[i] == "\n" { out.append("\n") }
                i += 1
            }
        }

        mutating func string(hashes: Int, multiline: Bool) {
            let pounds = String(repeating: "#", count: hashes)
            let close = (multiline ? "\"\"\"" : "\"") + pounds, interpolation = "\\" + pounds + "("
            while i < s.count {
                if at(close) { i += close.count; return }
                if at(interpolation) { i += interpolation.count; code(untilParen: true); continue }
                if hashes == 0 && s[i] == "\\" { i += 1 }
                if i < s.count && s[i] == "\n" { out.append("\n") }
                i += 1
            }
        }
    }

    /// Every function with a body: its name, first line and length in lines.
    static func functions(_ text: String) -> [Function] {
        let c = code(text)
        var lineOf = [Int](repeating: 1, count: c.count + 1)
        for k in c.indices { lineOf[k + 1] = lineOf[k] + (c[k] == "\n" ? 1 : 0) }
        func isWord(_ ch: Character) -> Bool { ch.isLetter || ch.isNumber || ch == "_" }
        func word(at k: Int) -> String {
            var e = k
            while e < c.count, isWord(c[e]) { e += 1 }
            return String(c[k..<e])
        }
        var found: [Function] = []
        var k = 0
        while k < c.count {
            guard isWord(c[k]), k == 0 || !isWord(c[k - 1]) else { k += 1; continue }
            let w = word(at: k)
            defer { k += max(w.count, 1) }
            guard ["func", "init", "subscript", "deinit"].contains(w) else { continue }
            var p = k - 1
            while p >= 0, c[p] == " " { p -= 1 }
            if p >= 0, c[p] == "." { continue }   // a call: self.init(…), Type.init
            var name = w
            if w == "func" {
                var n = k + w.count
                while n < c.count, c[n] == " " { n += 1 }
                var e = n
                while e < c.count, !"(<".contains(c[e]), c[e] != " " { e += 1 }
                name = String(c[n..<e])
            }
            if let close = bodyEnd(c, after: k + w.count) {
                found.append(Function(name: name, line: lineOf[k], length: lineOf[close] - lineOf[k] + 1))
            }
        }
        return found
    }

    /// The closing brace of the body of a declaration whose header starts at `start`; nil for a requirement with no
    /// body.
    static func bodyEnd(_ c: [Character], after start: Int) -> Int? {
        var k = start, parens = 0
        while k < c.count {
            switch c[k] {
            case "(", "[": parens += 1
            case ")", "]": parens -= 1
            case "}" where parens == 0: return nil
            case "{" where parens == 0:
                var depth = 0
                for e in k..<c.count {
                    if c[e] == "{" { depth += 1 } else if c[e] == "}" { depth -= 1; if depth == 0 { return e } }
                }
                return nil
            default:
                // A new declaration before any body: this one has none (a protocol requirement).
                if parens == 0, k > start, c[k - 1] == "\n",
                   String(c[k..<min(k + 200, c.count)]).trimmingCharacters(in: .whitespaces)
                       .range(of: #"^(@\w+\s+)*((public|private|fileprivate|internal|package|static|mutating|override|final)\s+)*(func|var|let|init|case|subscript|associatedtype)\b"#,
                              options: .regularExpression) != nil { return nil }
            }
            k += 1
        }
        return nil
    }

    static func sources() throws -> [(path: String, text: String)] {
        let root = ArchitectureDocTests.root
        let base = root.appendingPathComponent("Sources")
        guard let walk = FileManager.default.enumerator(atPath: base.path) else { return [] }
        var files: [(String, String)] = []
        for case let relative as String in walk where relative.hasSuffix(".swift") {
            let text = try String(contentsOf: base.appendingPathComponent(relative), encoding: .utf8)
            files.append(("Sources/" + relative, text))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    @Test func noFunctionIsOverTheLimit() throws {
        var over: [String] = []
        var seen = Set<String>()
        for (path, text) in try Self.sources() where !Self.exempt(path, text) {
            for f in Self.functions(text) where f.length > Self.limit {
                let key = "\(path) \(f.name)"
                seen.insert(key)
                if let allowed = Self.allowed[key], f.length <= allowed { continue }
                over.append("\(path):\(f.line): \(f.name): \(f.length) lines" + (Self.allowed[key].map { " (allowed \($0))" } ?? ""))
            }
        }
        #expect(over.isEmpty, "functions over \(Self.limit) lines (split them into named steps):\n\(over.joined(separator: "\n"))")
        let stale = Self.allowed.keys.filter { !seen.contains($0) }.sorted()
        #expect(stale.isEmpty, "allow-list entries now within \(Self.limit) lines or gone (remove them):\n\(stale.joined(separator: "\n"))")
    }

    /// The counter itself: braces in strings and comments do not count, a requirement has no body, nested functions
    /// are measured on their own, `self.init(…)` is a call.
    @Test func theCounterSkipsStringsAndComments() {
        let text = """
        protocol P { func f() }
        struct S {
            init() { self.init(x: "}") }
            func g() {
                let s = "{ // }"   // }
                /* } { */
                let r = #"\\"}"#
                let t = "\\(f("}"))"
                func inner() {
                }
                _ = \"""
                }
                \"""
            }
        }
        """
        let found = Self.functions(text)
        #expect(found == [Function(name: "init", line: 3, length: 1), Function(name: "g", line: 4, length: 11),
                          Function(name: "inner", line: 9, length: 2)])
    }
}
