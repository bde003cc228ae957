import MLToolCore

/// A table's feature values, one column per feature (feature-major): numbers as binary32, a categorical field as its
/// category's index; missing (empty, NA, NaN, not a number, an unknown category) is NaN. docs/FORMAT.md 4.5 says how
/// a field becomes a value; this is that rule.
public struct FeatureMatrix: Sendable {
    public var rowCount: Int
    public var columns: [[Float]]

    public init(rowCount: Int, columns: [[Float]]) { self.rowCount = rowCount; self.columns = columns }

    /// The features of `table`, found by name. The rows are read in order, each row's fields once (a column at a
    /// time would stride across every row: 785 fields apart in Fashion-MNIST's table).
    public init(table: RawTable, features: [TabularConfig.Feature]) throws {
        let n = table.rows.count, columnOf = try features.map { try table.column($0.name) }
        let index: [[String: Float]?] = features.map { f in
            guard f.kind == .categorical else { return nil }
            var index: [String: Float] = [:]
            for (i, s) in (f.categories ?? []).enumerated() { index[s] = Float(i) }
            return index
        }
        var flat = [Float](repeating: .nan, count: n * features.count)
        flat.withUnsafeMutableBufferPointer { out in
            for (r, row) in table.rows.enumerated() {
                for (f, c) in columnOf.enumerated() {
                    out[f * n + r] = index[f].map { $0[row[c]] ?? .nan } ?? Self.number(row[c])
                }
            }
        }
        rowCount = n
        columns = features.indices.map { f in Array(flat[(f * n)..<((f + 1) * n)]) }
    }

    /// A numeric field's value: NaN when missing or not a number.
    public static func number(_ field: String) -> Float {
        parse(field).map { Float($0) } ?? .nan
    }

    /// The number a field holds: `Double(field)`'s value, computed directly for a plain decimal (an optional sign,
    /// digits, an optional point and digits: at most 15 digits, so the digits are an exact integer m, and a power of
    /// ten 10^e with e ≤ 22, exact too, so m / 10^e is the correctly rounded value that strtod gives); anything
    /// else goes to `Double(field)`.
    public static func parse(_ field: String) -> Double? {
        var m: UInt64 = 0, digits = 0, fraction = 0, point = false, negative = false, plain = true, first = true
        for byte in field.utf8 {
            defer { first = false }
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                m = m &* 10 &+ UInt64(byte &- UInt8(ascii: "0")); digits += 1
                if point { fraction += 1 }
            case UInt8(ascii: ".") where !point: point = true
            case UInt8(ascii: "-") where first: negative = true
            case UInt8(ascii: "+") where first: break
            default: plain = false
            }
            if !plain || digits > 15 { return Double(field) }
        }
        guard digits > 0 else { return Double(field) }
        let value = Double(m) / powersOfTen[fraction]
        return negative ? -value : value
    }

    private static let powersOfTen: [Double] = (0...15).map { e in (0..<e).reduce(1.0) { r, _ in r * 10 } }

    /// The values row by row, [r · width + f] (a tree walk reads one row's features from one place).
    func rowMajor() -> [Float] {
        let width = columns.count
        var rows = [Float](repeating: 0, count: rowCount * width)
        for (f, column) in columns.enumerated() { for r in 0..<rowCount { rows[r * width + f] = column[r] } }
        return rows
    }

    /// Row `r` as one value per feature.
    public func row(_ r: Int) -> [Float] { columns.map { $0[r] } }
}
