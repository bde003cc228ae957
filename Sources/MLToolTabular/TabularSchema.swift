import MLToolCore

/// What a table's columns are: the features (numeric or categorical, in column order, the target and ignored
/// columns left out) and the target's kind. Inferred from the training table; `--categorical` and `--ignore`
/// override it.
public struct TabularSchema: Sendable, Equatable {
    public enum Objective: String, Sendable, CaseIterable {
        case binary, multiclass, regression
    }

    public var target: String
    public var features: [TabularConfig.Feature]
    public var objective: Objective
    /// The classes, in label order (sorted), for binary and multiclass targets; empty for regression.
    public var labels: [String]

    public init(target: String, features: [TabularConfig.Feature], objective: Objective, labels: [String]) {
        self.target = target; self.features = features; self.objective = objective; self.labels = labels
    }

    /// A categorical column with more distinct values than this is refused.
    public static let maxCategories = 65_536
    /// A numeric target with at most this many distinct integer values is a class label.
    public static let maxIntegerClasses = 10

    /// `regression` overrides how the target is told (true: a regression, false: classes; nil: inferred).
    /// Reads the roles of `table`'s columns: `target` must exist (and those named in `categorical` and `ignore`);
    /// every other column is numeric when each present field is a number, categorical when most are not, and refused
    /// when only a few (at most 1 %) are not: one bad field in a numeric column is a mistake to name, not a category.
    public static func infer(_ table: RawTable, target: String, categorical: Set<String> = [], ignore: Set<String> = [],
                             regression: Bool? = nil) throws -> TabularSchema {
        let t = try table.column(target)
        for name in categorical.union(ignore).sorted() { _ = try table.column(name) }
        var features: [TabularConfig.Feature] = []
        let candidates = table.header.indices.filter { $0 != t && !ignore.contains(table.header[$0]) }
        let counts = fieldKinds(table, columns: candidates.filter { !categorical.contains(table.header[$0]) })
        for c in candidates {
            let name = table.header[c]
            guard let (numbers, texts, firstText) = counts[c] else {
                features.append(.init(name: name, kind: .categorical, categories: try categories(table, column: c)))
                continue
            }
            if let r = firstText, texts * 100 <= numbers + texts {
                throw TabularError.notANumber(file: table.file, line: table.lines[r], column: c + 1, name: name,
                                              value: table.rows[r][c], count: texts)
            }
            features.append(texts == 0 ? .init(name: name, kind: .numeric)
                                       : .init(name: name, kind: .categorical, categories: try categories(table, column: c)))
        }
        // The target: every row has one; numbers are a regression unless they are few distinct integers.
        var allNumbers = true, fractional = false
        var distinct = Set<String>()
        for (r, row) in table.rows.enumerated() {
            let v = row[t]
            let d = Double(v)
            if RawTable.isMissing(v) || d.map({ !$0.isFinite }) == true {
                throw TabularError.badTarget(file: table.file, line: table.lines[r], column: t + 1, name: target, value: v)
            }
            if let d { fractional = fractional || d != d.rounded() } else { allNumbers = false }
            if distinct.count <= maxIntegerClasses { distinct.insert(v) }
        }
        let regression = regression ?? (allNumbers && (fractional || distinct.count > maxIntegerClasses))
        var labels: [String] = []
        if !regression {
            labels = Set(table.rows.map { $0[t] }).sorted { a, b in
                if let x = Double(a), let y = Double(b), x != y { return x < y }
                return a < b
            }
            guard labels.count >= 2 else {
                throw TabularError.oneClass(file: table.file, column: t + 1, name: target, label: labels.first ?? "")
            }
        } else {
            for (r, row) in table.rows.enumerated() where Double(row[t]) == nil {
                throw TabularError.badTarget(file: table.file, line: table.lines[r], column: t + 1, name: target, value: row[t])
            }
        }
        let objective: Objective = regression ? .regression : labels.count == 2 ? .binary : .multiclass
        return TabularSchema(target: target, features: features, objective: objective, labels: labels)
    }

    /// The distinct present values of column `c`, most frequent first (ties in string order).
    /// For each of `columns`: how many fields are numbers and how many are text (missing ones are neither), and the
    /// first text's row. The rows are read in order, each once.
    static func fieldKinds(_ table: RawTable, columns: [Int]) -> [Int: (numbers: Int, texts: Int, firstText: Int?)] {
        var numbers = [Int](repeating: 0, count: columns.count), texts = numbers
        var firstText = [Int?](repeating: nil, count: columns.count)
        for (r, row) in table.rows.enumerated() {
            for (i, c) in columns.enumerated() where !RawTable.isMissing(row[c]) {
                if FeatureMatrix.parse(row[c]) != nil { numbers[i] += 1 } else {
                    texts[i] += 1
                    if firstText[i] == nil { firstText[i] = r }
                }
            }
        }
        var out: [Int: (numbers: Int, texts: Int, firstText: Int?)] = [:]
        for (i, c) in columns.enumerated() { out[c] = (numbers[i], texts[i], firstText[i]) }
        return out
    }

    static func categories(_ table: RawTable, column c: Int) throws -> [String] {
        var counts: [String: Int] = [:]
        for row in table.rows where !RawTable.isMissing(row[c]) {
            counts[row[c], default: 0] += 1
            if counts.count > maxCategories {
                throw TabularError.tooManyCategories(file: table.file, column: c + 1, name: table.header[c], limit: maxCategories)
            }
        }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map(\.key)
    }
}

extension TabularSchema {
    /// The target of every row of `table`: the class's index in `labels`, or the number for a regression. A row
    /// whose target is missing, not finite, or a class the schema does not know is refused, naming it.
    public func targets(of table: RawTable) throws -> [Float] {
        let t = try table.column(target)
        var index: [String: Float] = [:]
        for (i, l) in labels.enumerated() { index[l] = Float(i) }
        return try table.rows.enumerated().map { r, row in
            let v = row[t]
            if objective == .regression, let d = Double(v), d.isFinite, Float(d).isFinite { return Float(d) }
            if objective != .regression, let i = index[v] { return i }
            throw TabularError.badTarget(file: table.file, line: table.lines[r], column: t + 1, name: target, value: v)
        }
    }

    /// The rows of `table` at `indices`, in that order.
    public static func rows(_ table: RawTable, _ indices: [Int]) -> RawTable {
        RawTable(file: table.file, header: table.header, rows: indices.map { table.rows[$0] }, lines: indices.map { table.lines[$0] })
    }
}
