import MLToolCore

/// The columns of a CSR matrix (its transpose, CSC): column c holds the non-zeros `offsets[c]..<offsets[c + 1]`,
/// their rows increasing. The gradient's product Xᵀ·G gathers each output row from these, instead of scattering
/// every non-zero into the d × k gradient. Owns its storage; immutable, so shared by the tasks of one call.
final class SparseColumns: @unchecked Sendable {
    let cols: Int
    let offsets: UnsafeMutablePointer<Int>
    let rowIndices: UnsafeMutablePointer<Int32>
    let values: UnsafeMutablePointer<Float>

    /// A counting sort of the non-zeros by column; visiting rows in order keeps them increasing within a column.
    /// Nil when row indices do not fit 32 bits.
    init?(_ m: CSRMatrix) {
        guard m.rows <= Int(Int32.max) else { return nil }
        let nnz = m.nonZeros
        cols = m.cols
        offsets = .allocate(capacity: m.cols &+ 1)
        rowIndices = .allocate(capacity: max(nnz, 1))
        values = .allocate(capacity: max(nnz, 1))
        offsets.initialize(repeating: 0, count: m.cols &+ 1)
        let co = offsets, tr = rowIndices, tv = values
        m.rowOffsets.withUnsafeBufferPointer { ro in
            m.columns.withUnsafeBufferPointer { mc in
                m.values.withUnsafeBufferPointer { mv in
                    // co[c + 1] counts column c, then becomes its start; the fill advances it to the column's end,
                    // which is the start of column c + 1.
                    for q in 0..<nnz { co[Int(mc[q]) &+ 1] &+= 1 }
                    var start = 0
                    for c in 0..<m.cols {
                        let count = co[c &+ 1]
                        co[c &+ 1] = start
                        start &+= count
                    }
                    for r in 0..<m.rows {
                        for q in ro[r]..<ro[r &+ 1] {
                            let at = Int(mc[q]) &+ 1, p = co[at]
                            (tr + p).initialize(to: Int32(truncatingIfNeeded: r))
                            (tv + p).initialize(to: mv[q])
                            co[at] = p &+ 1
                        }
                    }
                }
            }
        }
    }

    /// The first column whose non-zeros start at or after `q` (binary search; `cols` when none).
    func firstColumn(atNonZero q: Int) -> Int {
        var lo = 0, hi = cols
        while lo < hi {
            let mid = (lo &+ hi) / 2
            if offsets[mid] < q { lo = mid &+ 1 } else { hi = mid }
        }
        return lo
    }

    deinit {
        offsets.deallocate()
        rowIndices.deallocate()
        values.deallocate()
    }
}
