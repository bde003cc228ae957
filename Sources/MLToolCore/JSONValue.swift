import Foundation

/// A JSON value read strictly: integers, fractions and booleans stay apart (Foundation's `JSONSerialization` gives
/// `NSNumber` for all three on Linux, and a `1` passes as `true`), for readers of outside JSON whose errors must say
/// what a field held. Decode it with `JSONValue.parse`, which also refuses nesting deeper than `depth` with the byte
/// offset first (`InputLimits.firstTooDeepJSON`): Foundation's parser stops at 512 without saying where.
public indirect enum JSONValue: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        if var a = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            if let n = a.count { items.reserveCapacity(n) }
            while !a.isAtEnd { items.append(try a.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        if let o = try? decoder.container(keyedBy: AnyKey.self) {
            var fields: [String: JSONValue] = [:]
            for k in o.allKeys { fields[k.stringValue] = try o.decode(JSONValue.self, forKey: k) }
            self = .object(fields)
            return
        }
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int.self) { self = .integer(i) }
        else if let d = try? c.decode(Double.self) { self = .number(d) }
        else { self = .string(try c.decode(String.self)) }
    }

    /// Parses `bytes` as one JSON value nested at most `depth` deep. Returns the value, or the byte offset and the
    /// reason it was refused.
    public static func parse(_ bytes: [UInt8], depth: Int) -> Result<JSONValue, JSONProblem> {
        if let at = bytes.withUnsafeBytes({ InputLimits.firstTooDeepJSON($0, limit: depth) }) {
            return .failure(JSONProblem(offset: at, reason: "nesting deeper than \(depth)"))
        }
        do {
            return .success(try JSONDecoder().decode(JSONValue.self, from: Data(bytes)))
        } catch {
            return .failure(JSONProblem(offset: 0, reason: "not valid JSON (\(error.localizedDescription))"))
        }
    }

    /// The byte offset in `bytes` of the first `"key"` used as an object key (followed by `:`), for errors about a
    /// field; nil when the key is not written plainly (escapes) or absent.
    public static func offset(ofKey key: String, in bytes: [UInt8]) -> Int? {
        let needle = Array(("\"" + key + "\"").utf8)
        guard let first = needle.first, needle.count <= bytes.count else { return nil }
        var i = 0
        while i + needle.count <= bytes.count {
            if bytes[i] == first, bytes[i..<(i + needle.count)].elementsEqual(needle) {
                var j = i + needle.count
                while j < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[j]) { j += 1 }
                if j < bytes.count, bytes[j] == UInt8(ascii: ":") { return i }
            }
            i += 1
        }
        return nil
    }

    /// What the value is, for error messages: "an integer", "a string", …
    public var kind: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer: return "an integer"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    public var string: String? { if case let .string(s) = self { return s } else { return nil } }
    public var integer: Int? { if case let .integer(i) = self { return i } else { return nil } }
    public var bool: Bool? { if case let .bool(b) = self { return b } else { return nil } }
    public var array: [JSONValue]? { if case let .array(a) = self { return a } else { return nil } }
    public var object: [String: JSONValue]? { if case let .object(o) = self { return o } else { return nil } }

    /// The integers of an array of integers, else nil.
    public var integers: [Int]? {
        guard let a = array else { return nil }
        var out: [Int] = []
        out.reserveCapacity(a.count)
        for v in a {
            guard let i = v.integer else { return nil }
            out.append(i)
        }
        return out
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

/// Why outside JSON was refused, and where (byte offset in the JSON text).
public struct JSONProblem: Error, Equatable, Sendable {
    public var offset: Int
    public var reason: String
}
