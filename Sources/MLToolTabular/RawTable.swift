import Foundation
import MLToolCore
import MLToolData

/// A table as its fields: a header and rows of strings, each row with the line it starts on (the header is line 1
/// of a CSV or TSV; a JSON Lines file has no header line, its rows are numbered from 1). Missing fields are "".
public struct RawTable: Sendable {
    public var file: String
    public var header: [String]
    public var rows: [[String]]
    public var lines: [Int]

    public init(file: String, header: [String], rows: [[String]], lines: [Int]) {
        self.file = file; self.header = header; self.rows = rows; self.lines = lines
    }

    /// Whether `path` names a table by its extension (.csv, .tsv, .jsonl, .ndjson).
    public static func isTable(_ path: String) -> Bool {
        ["csv", "tsv", "jsonl", "ndjson"].contains(URL(fileURLWithPath: path).pathExtension.lowercased())
    }

    /// The fields that mean "missing": empty, NA and NaN (JSON null reads as empty).
    public static func isMissing(_ field: String) -> Bool {
        field.isEmpty || field == "NA" || field == "NaN" || field == "nan"
    }

    /// Reads a CSV, TSV (by extension) or JSON Lines file; a ragged row, or a table without rows, is refused.
    public static func read(_ path: String) throws -> RawTable {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        let bytes = try TableFile.read(path)
        if ext == "jsonl" || ext == "ndjson" { return try jsonLines(bytes: bytes, file: path) }
        return try delimited(bytes: bytes, file: path, delimiter: UInt8(ascii: ext == "tsv" ? "\t" : ","))
    }

    /// A CSV or TSV with a header row.
    public static func delimited(bytes: [UInt8], file: String, delimiter: UInt8) throws -> RawTable {
        var records = try CSVReader.parse(bytes: bytes, file: file, delimiter: delimiter)
        guard !records.isEmpty else { throw TabularError.emptyTable(file: file) }
        let header = records.removeFirst().fields.map { $0.trimmingCharacters(in: .whitespaces) }
        guard !records.isEmpty else { throw TabularError.emptyTable(file: file) }
        for r in records where r.fields.count != header.count {
            throw TabularError.raggedRow(file: file, line: r.line, expected: header.count, actual: r.fields.count)
        }
        return RawTable(file: file, header: header, rows: records.map(\.fields), lines: records.map(\.line))
    }

    /// JSON Lines: one object per line; the columns are the keys of every row, in the order first seen (a key a row
    /// lacks is missing there). Numbers keep their JSON spelling, booleans read "true"/"false", null is missing.
    public static func jsonLines(bytes: [UInt8], file: String) throws -> RawTable {
        var header: [String] = [], index: [String: Int] = [:], objects: [[String: String]] = [], lines: [Int] = []
        var line = 0
        for chunk in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            line += 1
            guard chunk.contains(where: { $0 != 0x20 && $0 != 0x0D && $0 != 0x09 }) else { continue }
            let object: Any
            do { object = try JSONSerialization.jsonObject(with: Data(chunk), options: [.fragmentsAllowed]) } catch {
                throw TabularError.badJSONLine(file: file, line: line, reason: "not JSON")
            }
            guard let dict = object as? [String: Any] else { throw TabularError.badJSONLine(file: file, line: line, reason: "not a JSON object") }
            var row: [String: String] = [:]
            // Keys in the order of their first byte in the line, so that the header follows the file.
            let text = String(decoding: chunk, as: UTF8.self)
            let keys = dict.keys.sorted { a, b in
                (text.range(of: "\"\(a)\"")?.lowerBound ?? text.endIndex) < (text.range(of: "\"\(b)\"")?.lowerBound ?? text.endIndex)
            }
            for key in keys {
                switch dict[key] {
                case is NSNull: row[key] = ""
                case let n as NSNumber where String(cString: n.objCType) == "c": row[key] = n.boolValue ? "true" : "false"
                case let n as NSNumber: row[key] = "\(n)"
                case let s as String: row[key] = s
                default: throw TabularError.badJSONLine(file: file, line: line, reason: "field '\(key)' is not a string, number, boolean or null")
                }
                if index[key] == nil { index[key] = header.count; header.append(key) }
            }
            objects.append(row); lines.append(line)
        }
        guard !objects.isEmpty else { throw TabularError.emptyTable(file: file) }
        return RawTable(file: file, header: header, rows: objects.map { o in header.map { o[$0] ?? "" } }, lines: lines)
    }

    /// The index of the column named `name`.
    public func column(_ name: String) throws -> Int {
        guard let i = header.firstIndex(of: name) else { throw TabularError.missingColumn(file: file, name: name, available: header) }
        return i
    }
}
