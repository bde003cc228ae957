import CMLToolTrainKernels
import Dispatch
import MLToolData

/// A CSR matrix seen as training rows. Products loop over the non-zeros; rows (forward) and class columns
/// (backward) are split across threads so that every output element is summed in row order by one thread.
/// Sendable: a read-only view, shared by the tasks of one call.
struct SparseRows: FeatureMatrix, @unchecked Sendable {
    static var fusesRowBlocks: Bool { false }
    let offsets: UnsafePointer<Int>
    let columns: UnsafePointer<Int32>
    let values: UnsafePointer<Float>
    let rows: Int
    let cols: Int

    /// Calls `body` with a view of `m`, valid only inside it.
    static func with<R>(_ m: CSRMatrix, _ body: (SparseRows) throws -> R) rethrows -> R {
        try m.rowOffsets.withUnsafeBufferPointer { o in
            try m.columns.withUnsafeBufferPointer { c in
                try m.values.withUnsafeBufferPointer { v in
                    // Empty arrays may have no base address; a one-element dummy keeps the pointers valid.
                    let dummyC: [Int32] = [0], dummyV: [Float] = [0]
                    return try dummyC.withUnsafeBufferPointer { dc in
                        try dummyV.withUnsafeBufferPointer { dv in
                            try body(SparseRows(offsets: o.baseAddress!, columns: c.baseAddress ?? dc.baseAddress!,
                                                values: v.baseAddress ?? dv.baseAddress!, rows: m.rows, cols: m.cols))
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

    func accumulateTransposed(rows r: Range<Int>, g: UnsafePointer<Float>, classes k: Int,
                              into grad: UnsafeMutablePointer<Float>) {
        let parts = min(k, 4)
        let o = SharedPointer(p: UnsafeMutablePointer(mutating: offsets))
        let c = SharedPointer(p: UnsafeMutablePointer(mutating: columns))
        let v = SharedPointer(p: UnsafeMutablePointer(mutating: values))
        let gs = SharedPointer(p: UnsafeMutablePointer(mutating: g)), out = SharedPointer(p: grad)
        let first = r.lowerBound, end = r.upperBound
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let j0 = part &* k / parts, j1 = (part &+ 1) &* k / parts
            for row in first..<end {
                let src = gs.p + (row &- first) &* k
                for i in o.p[row]..<o.p[row &+ 1] {
                    let x = v.p[i], dst = out.p + Int(c.p[i]) &* k
                    for j in j0..<j1 { dst[j] += x * src[j] }
                }
            }
        }
    }
}
