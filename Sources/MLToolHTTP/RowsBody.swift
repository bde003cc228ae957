import Foundation
import MLToolCore

/// The JSON body of a prediction request to a tabular model: `{"row": {"column": value, …}}` (answered with one
/// object) or `{"rows": [{…}, …]}` (answered with an array), read strictly (`JSONValue`, nesting at most 8 deep).
/// A value is a string, a number, a boolean ("true"/"false") or null (missing, as an absent column is).
public struct RowsBody: Sendable, Equatable {
    /// Each row as column → field, the way `mltool predict` reads a JSON Lines table.
    public var rows: [[String: String]]
    /// `{"rows": […]}` rather than `{"row": …}`.
    public var isList: Bool

    /// `maxRows`: the most rows of one request.
    public init(_ body: [UInt8], maxRows: Int, source: String = "request body") throws {
        let value: JSONValue
        switch JSONValue.parse(body, depth: 8) {
        case .success(let v): value = v
        case .failure(let problem):
            throw HTTPError.malformedJSON(source: source, place: "byte \(problem.offset)", expected: "JSON", actual: problem.reason)
        }
        guard case .object(let top) = value else {
            throw HTTPError.malformedJSON(source: source, place: "the top level", expected: "an object {\"row\": …} or {\"rows\": […]}",
                                          actual: value.kind)
        }
        if let one = top["row"] {
            rows = [try Self.row(one, place: "\"row\"", source: source)]
            isList = false
        } else if let many = top["rows"] {
            guard case .array(let list) = many else {
                throw HTTPError.malformedJSON(source: source, place: "\"rows\"", expected: "an array of objects", actual: many.kind)
            }
            guard list.count <= maxRows else {
                throw HTTPError.tooLarge(source: source, what: "\"rows\" of \(list.count) rows", size: list.count, limit: maxRows)
            }
            rows = try list.enumerated().map { i, v in try Self.row(v, place: "\"rows\"[\(i)]", source: source) }
            isList = true
        } else {
            throw HTTPError.malformedJSON(source: source, place: "the top level", expected: "a key \"row\" or \"rows\"",
                                          actual: "keys " + top.keys.sorted().joined(separator: ", "))
        }
    }

    /// One row object's fields as text.
    static func row(_ value: JSONValue, place: String, source: String) throws -> [String: String] {
        guard case .object(let fields) = value else {
            throw HTTPError.malformedJSON(source: source, place: place, expected: "an object of column → value", actual: value.kind)
        }
        var row: [String: String] = [:]
        for (column, v) in fields {
            guard let text = field(v) else {
                throw HTTPError.malformedJSON(source: source, place: "\(place).\(column)", expected: "a string, number, boolean or null",
                                              actual: v.kind)
            }
            row[column] = text
        }
        return row
    }

    /// A value as a table field: numbers as Swift prints them (an integral one without a fraction, so that a
    /// category coded 3 reads the same sent as 3 or 3.0), booleans as "true"/"false", null as missing ("").
    static func field(_ v: JSONValue) -> String? {
        switch v {
        case .null: return ""
        case .bool(let b): return b ? "true" : "false"
        case .integer(let i): return "\(i)"
        case .number(let d):
            if d == d.rounded(), abs(d) < 9e15 { return "\(Int(d))" }
            return "\(d)"
        case .string(let s): return s
        case .array, .object: return nil
        }
    }
}
