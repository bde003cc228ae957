import CMLToolTrainKernels
import Dispatch
import MLToolCore

/// A CSR matrix seen as training rows, optionally with its columns (the transpose, CSC) for the gradient.
/// Forward products split rows across threads; the transposed product splits columns; every output element is
/// summed in row order by one thread, so results do not depend on the thread count.
/// Sendable: a read-only view, shared by the tasks of one call.
struct SparseRows: FeatureMatrix, @unchecked Sendable {
    let offsets: UnsafePointer<Int>
    let columns: UnsafePointer<Int32>
    let values: UnsafePointer<Float>
    let rows: Int
    let cols: Int
    /// The same non-zeros by column; nil unless `with(_:transposed:_:)` built it.
    let transposed: SparseColumns?

    /// Calls `body` with a view of `m`, valid only inside it. `transposed` also builds the columns of `m` (memory:
    /// another copy of the non-zeros), which `transposedProduct` gathers from instead of scattering.
    static func with<R>(_ m: CSRMatrix, transposed: Bool = false, _ body: (SparseRows) throws -> R) rethrows -> R {
        let t = transposed ? SparseColumns(m) : nil
        return try m.rowOffsets.withUnsafeBufferPointer { o in
            try m.columns.withUnsafeBufferPointer { c in
                try m.values.withUnsafeBufferPointer { v in
                    // Empty arrays may have no base address; a one-element dummy keeps the pointers valid.
                    let dummyC: [Int32] = [0], dummyV: [Float] = [0]
                    return try dummyC.withUnsafeBufferPointer { dc in
                        try dummyV.withUnsafeBufferPointer { dv in
                            try body(SparseRows(offsets: o.baseAddress!, columns: c.baseAddress ?? dc.baseAddress!,
                                                values: v.baseAddress ?? dv.baseAddress!, rows: m.rows, cols: m.cols,
                                                transposed: t))
                        }
                    }
                }
            }
        }
    }

    func forward(rows r: Range<Int>, weights: UnsafePointer<Float>, classes k: Int,
                 into out: UnsafeMutablePointer<Float>) {
        forward(rows: r, weights: weights, classes: k, into: out, level: -1)
    }

    /// `forward` with the C kernel at `level` (-1: the best the CPU has, 0: portable C).
    func forward(rows r: Range<Int>, weights: UnsafePointer<Float>, classes k: Int,
                 into out: UnsafeMutablePointer<Float>, level: Int32) {
        let chunk = 64
        let o = SharedPointer(p: UnsafeMutablePointer(mutating: offsets))
        let c = SharedPointer(p: UnsafeMutablePointer(mutating: columns))
        let v = SharedPointer(p: UnsafeMutablePointer(mutating: values))
        let w = SharedPointer(p: UnsafeMutablePointer(mutating: weights)), z = SharedPointer(p: out)
        let first = r.lowerBound, end = r.upperBound
        DispatchQueue.concurrentPerform(iterations: (r.count + chunk - 1) / chunk) { t in
            let r0 = first &+ t &* chunk, r1 = min(r0 &+ chunk, end)
            UnsafeMutableRawPointer(o.p).withMemoryRebound(to: Int64.self, capacity: end &+ 1) { offsets in
                mlt_sparse_forward(offsets, c.p, v.p, Int64(r0), Int64(r1), w.p, Int32(k),
                                   z.p + (r0 &- first) &* k, level)
            }
        }
    }

    /// The plain loop `forward` is tested against.
    func forwardReference(rows r: Range<Int>, weights: UnsafePointer<Float>, classes k: Int,
                          into out: UnsafeMutablePointer<Float>) {
        for row in r {
            let dst = out + (row &- r.lowerBound) &* k
            dst.initialize(repeating: 0, count: k)
            for i in offsets[row]..<offsets[row &+ 1] {
                let x = values[i], src = weights + Int(columns[i]) &* k
                for j in 0..<k { dst[j] += x * src[j] }
            }
        }
    }

    /// The plain loop, scattering each non-zero into the gradient: the reference for `transposedProduct`, and its
    /// fallback without columns.
    func accumulateTransposed(rows r: Range<Int>, g: UnsafePointer<Float>, classes k: Int,
                              into grad: UnsafeMutablePointer<Float>) {
        for row in r {
            let src = g + (row &- r.lowerBound) &* k
            for i in offsets[row]..<offsets[row &+ 1] {
                let x = values[i], dst = grad + Int(columns[i]) &* k
                for j in 0..<k { dst[j] += x * src[j] }
            }
        }
    }

    /// Columns per task of `transposedProduct`: each output row is computed whole by one task, so the split only
    /// balances work; it cannot change a bit.
    static var columnChunks: Int { 32 }

    func transposedProduct(g: UnsafePointer<Float>, classes k: Int, into grad: UnsafeMutablePointer<Float>) {
        transposedProduct(g: g, classes: k, into: grad, level: -1, chunks: Self.columnChunks)
    }

    /// `transposedProduct` with the C kernel at `level` (-1: the best the CPU has, 0: portable C), the columns in
    /// `chunks` tasks of about equal non-zeros. Without columns: the scatter loop, one thread.
    func transposedProduct(g: UnsafePointer<Float>, classes k: Int, into grad: UnsafeMutablePointer<Float>,
                           level: Int32, chunks: Int) {
        guard let t = transposed else {
            grad.initialize(repeating: 0, count: cols &* k)
            accumulateTransposed(rows: 0..<rows, g: g, classes: k, into: grad)
            return
        }
        let out = SharedPointer(p: grad), gs = SharedPointer(p: UnsafeMutablePointer(mutating: g))
        let nnz = t.offsets[cols], tasks = max(1, min(chunks, cols))
        DispatchQueue.concurrentPerform(iterations: tasks) { task in
            let c0 = t.firstColumn(atNonZero: task &* nnz / tasks)
            let c1 = task &+ 1 == tasks ? t.cols : t.firstColumn(atNonZero: (task &+ 1) &* nnz / tasks)
            UnsafeMutableRawPointer(t.offsets).withMemoryRebound(to: Int64.self, capacity: t.cols &+ 1) { o in
                mlt_sparse_transposed(o, t.rowIndices, t.values, Int64(c0), Int64(c1), gs.p, Int32(k),
                                      out.p + c0 &* k, level)
            }
        }
    }
}
