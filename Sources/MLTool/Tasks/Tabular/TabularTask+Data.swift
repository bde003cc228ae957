import Foundation
import MLToolTabular

extension TabularTask {
    /// A table is tabular data when --target names its column, or, without it, when it has neither an image path
    /// column nor a text column (those make it image or text classification data): `mltool train table.csv` then
    /// says which column to give, and the studio shows its columns.
    public static func recognizes(data: String, values: OptionValues) -> Bool {
        guard RawTable.isTable(data) else { return false }
        if values.has("--target") { return true }
        guard let header = header(of: data), !header.isEmpty else { return false }
        let taken = [values.string("--path-column") ?? "path", values.string("--text-column") ?? "text"]
        return !header.contains { taken.contains($0) }
    }

    /// The column names of a table, from its first line only (nil when it cannot be read): CSV and TSV headers read
    /// as training reads them (RFC 4180: a quoted name may hold the delimiter), a JSON Lines file's first object's keys.
    static func header(of path: String) -> [String]? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 1 << 16), !head.isEmpty else { return nil }
        let line = head.prefix { $0 != UInt8(ascii: "\n") }
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        if ext == "jsonl" || ext == "ndjson" {
            return ((try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any]).map { $0.keys.sorted() }
        }
        let delimiter = UInt8(ascii: ext == "tsv" ? "\t" : ",")
        let record = try? CSVReader.parse(bytes: Array(line), file: path, delimiter: delimiter).first
        return record.map { $0.fields.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } }
    }

    /// Each column as training reads it (numeric when every present field is a number), with what it would be as
    /// the --target; a numeric column with a few non-numbers is named with its first one, as training refuses it.
    public static func dataSummary(_ data: String) throws -> DataSummary {
        let table = try RawTable.read(data)
        var s = DataSummary()
        s.rows = table.rows.count
        for (c, name) in table.header.enumerated() {
            let (column, problem) = summary(of: table, column: c, name: name)
            s.columns.append(column)
            if let problem { s.badFiles.append(problem) }
        }
        s.note = "Pick the column to predict (--target): the others are the features."
        return s
    }

    static func summary(of table: RawTable, column c: Int, name: String) -> (DataSummary.TableColumn, String?) {
        var counts = [String: Int](), missing = 0, numbers = [Double](), texts = 0, firstText: Int?
        for (r, row) in table.rows.enumerated() {
            let v = row[c]
            if RawTable.isMissing(v) { missing += 1; continue }
            counts[v, default: 0] += 1
            if let d = Double(v) { numbers.append(d) } else {
                texts += 1
                if firstText == nil { firstText = r }
            }
        }
        // Numeric as training reads it: every present field a number, or all but a few (≤ 1 %, which it refuses).
        let numeric = !numbers.isEmpty && texts * 100 <= numbers.count + texts
        let top = numeric ? [] : counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
            .prefix(DataSummary.samplesPerClass).map { "\($0.key) (\($0.value))" }
        let fractional = numbers.contains { $0 != $0.rounded() }
        let asTarget = missing > 0 ? "not a target: \(missing) rows have no value"
            : texts == 0 && (fractional || counts.count > TabularSchema.maxIntegerClasses) ? "regression"
            : counts.count >= 2 ? "\(counts.count) classes" : "not a target: one value"
        let column = DataSummary.TableColumn(
            name: name, kind: numeric ? "numeric" : "categorical", missing: missing, distinct: counts.count,
            min: numeric ? numbers.min() : nil, max: numeric ? numbers.max() : nil,
            mean: numeric ? numbers.reduce(0, +) / Double(numbers.count) : nil, top: top, asTarget: asTarget)
        guard numeric, let r = firstText else { return (column, nil) }
        return (column, "\(table.file) line \(table.lines[r]), column \(c + 1) (\(name)): \"\(table.rows[r][c])\" is not a "
                        + "number, in a numeric column (\(texts) such fields): training refuses it unless it is the target")
    }
}
