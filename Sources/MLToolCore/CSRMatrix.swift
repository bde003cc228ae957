/// A sparse matrix in compressed sparse row form: row r holds `columns[rowOffsets[r]..<rowOffsets[r+1]]` with
/// `values` at the same positions, columns strictly increasing within a row. Memory is proportional to the non-zeros.
public struct CSRMatrix: Sendable, Equatable {
    public let rows: Int
    public let cols: Int
    /// rows + 1 offsets into `columns` / `values`, starting at 0, non-decreasing.
    public let rowOffsets: [Int]
    public let columns: [Int32]
    public let values: [Float]

    /// Validates the arrays: offsets, column range and order, finite values.
    public init(rows: Int, cols: Int, rowOffsets: [Int], columns: [Int32], values: [Float]) throws {
        guard rows >= 0, cols >= 0, cols <= Int(Int32.max) else {
            throw CoreError.invalidSparseMatrix(what: "shape", index: 0, expected: "rows ≥ 0, 0 ≤ cols < 2^31",
                                                actual: "\(rows) × \(cols)")
        }
        guard rowOffsets.count == rows + 1, rowOffsets.first == 0 else {
            throw CoreError.invalidSparseMatrix(what: "rowOffsets", index: 0,
                                                expected: "\(rows + 1) offsets starting at 0",
                                                actual: "\(rowOffsets.count) offsets starting at \(rowOffsets.first ?? -1)")
        }
        guard columns.count == values.count, rowOffsets[rows] == columns.count else {
            throw CoreError.invalidSparseMatrix(what: "rowOffsets", index: rows,
                                                expected: "\(columns.count) (columns) = \(values.count) (values)",
                                                actual: "\(rowOffsets[rows])")
        }
        for r in 0..<rows {
            let lo = rowOffsets[r], hi = rowOffsets[r + 1]
            guard lo <= hi else {
                throw CoreError.invalidSparseMatrix(what: "rowOffsets", index: r + 1, expected: "≥ \(lo)",
                                                    actual: "\(hi)")
            }
            var previous = -1
            for i in lo..<hi {
                let c = Int(columns[i])
                guard c > previous, c < cols else {
                    throw CoreError.invalidSparseMatrix(what: "columns", index: i,
                                                        expected: "in \(previous + 1)..<\(cols) (row \(r))",
                                                        actual: "\(c)")
                }
                guard values[i].isFinite else {
                    throw CoreError.invalidSparseMatrix(what: "values", index: i, expected: "a finite number",
                                                        actual: "\(values[i])")
                }
                previous = c
            }
        }
        self.rows = rows; self.cols = cols; self.rowOffsets = rowOffsets; self.columns = columns; self.values = values
    }

    /// Stored entries.
    public var nonZeros: Int { values.count }

    /// The matrix as dense row-major values (for tests and small inputs).
    public func dense() -> [Float] {
        var out = [Float](repeating: 0, count: rows * cols)
        for r in 0..<rows {
            for i in rowOffsets[r]..<rowOffsets[r + 1] { out[r * cols + Int(columns[i])] = values[i] }
        }
        return out
    }

    /// The rows at `indices`, in that order (for splits).
    public func rows(_ indices: [Int]) -> CSRMatrix {
        var offsets = [0], cols32: [Int32] = [], vals: [Float] = []
        for r in indices where r >= 0 && r < rows {
            cols32 += columns[rowOffsets[r]..<rowOffsets[r + 1]]
            vals += values[rowOffsets[r]..<rowOffsets[r + 1]]
            offsets.append(cols32.count)
        }
        // Every piece came from a valid matrix, so the result is valid by construction.
        return CSRMatrix(unchecked: offsets.count - 1, cols: cols, rowOffsets: offsets, columns: cols32, values: vals)
    }

    /// The contiguous rows `range` (clamped to the matrix), sharing nothing with it.
    public func rows(_ range: Range<Int>) -> CSRMatrix {
        let r = range.clamped(to: 0..<rows)
        let lo = rowOffsets[r.lowerBound], hi = rowOffsets[r.upperBound]
        return CSRMatrix(unchecked: r.count, cols: cols, rowOffsets: rowOffsets[r.lowerBound...r.upperBound].map { $0 - lo },
                         columns: Array(columns[lo..<hi]), values: Array(values[lo..<hi]))
    }

    /// For builders that produce valid arrays by construction (inside this package only: callers outside get the checked init).
    package init(unchecked rows: Int, cols: Int, rowOffsets: [Int], columns: [Int32], values: [Float]) {
        self.rows = rows; self.cols = cols; self.rowOffsets = rowOffsets; self.columns = columns; self.values = values
    }
}
