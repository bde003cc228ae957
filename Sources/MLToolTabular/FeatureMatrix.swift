import MLToolCore

/// A table's feature values, one column per feature (feature-major): numbers as binary32, a categorical field as its
/// category's index; missing (empty, NA, NaN, not a number, an unknown category) is NaN. docs/FORMAT.md 4.5 says how
/// a field becomes a value; this is that rule.
public struct FeatureMatrix: Sendable {
    public var rowCount: Int
    public var columns: [[Float]]

    public init(rowCount: Int, columns: [[Float]]) { self.rowCount = rowCount; self.columns = columns }

    /// The features of `table`, found by name.
    public init(table: RawTable, features: [TabularConfig.Feature]) throws {
        rowCount = table.rows.count
        columns = try features.map { f in
            let c = try table.column(f.name)
            switch f.kind {
            case .numeric:
                return table.rows.map { row in Self.number(row[c]) }
            case .categorical:
                var index: [String: Float] = [:]
                for (i, s) in (f.categories ?? []).enumerated() { index[s] = Float(i) }
                return table.rows.map { row in index[row[c]] ?? .nan }
            }
        }
    }

    /// A numeric field's value: NaN when missing or not a number.
    public static func number(_ field: String) -> Float {
        RawTable.isMissing(field) ? .nan : Double(field).map { Float($0) } ?? .nan
    }

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
