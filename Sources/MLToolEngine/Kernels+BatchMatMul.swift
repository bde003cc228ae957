import CMLToolKernels
import MLToolCore

// batchMatMul: a (…, M, K) · b (…, K, N) → (…, M, N), the batch axes broadcast (numpy rules). Both operands are
// plain row-major (rank-4 ones in whatever order the importer put them).

extension Program {
    /// The output shape of a batchMatMul of `a` and `b`, or nil when they do not fit.
    static func batchMatMulShape(_ a: [Int], _ b: [Int]) -> [Int]? {
        guard a.count >= 2, b.count >= 2, a[a.count - 1] == b[b.count - 2],
              let batch = broadcast(Array(a.dropLast(2)), Array(b.dropLast(2))) else { return nil }
        return batch + [a[a.count - 2], b[b.count - 1]]
    }

    /// For each output matrix (in order), the index of a's matrix and of b's matrix it multiplies.
    static func batchMatMulPairs(_ a: [Int], _ b: [Int], _ y: [Int]) -> [(Int, Int)] {
        let batch = Array(y.dropLast(2))
        let pa = [Int](repeating: 1, count: batch.count - (a.count - 2)) + a.dropLast(2)
        let pb = [Int](repeating: 1, count: batch.count - (b.count - 2)) + b.dropLast(2)
        let total = batch.reduce(1, *)
        return (0..<total).map { o in
            var rest = o, ia = 0, ib = 0, sa = 1, sb = 1
            for d in stride(from: batch.count - 1, through: 0, by: -1) {
                let i = rest % batch[d]
                rest /= batch[d]
                if pa[d] != 1 { ia += i * sa }
                if pb[d] != 1 { ib += i * sb }
                sa *= pa[d]
                sb *= pb[d]
            }
            return (ia, ib)
        }
    }
}

extension Reference {
    static func batchMatMul(_ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let (m, k, n) = (xs[0][xs[0].count - 2], xs[0][xs[0].count - 1], ys[ys.count - 1])
        for (o, (ia, ib)) in Program.batchMatMulPairs(xs[0], xs[1], ys).enumerated() {
            gemm(x[0] + ia * m * k, x[1] + ib * k * n, y + o * m * n, rows: m, k: k, n: n, bias: nil, act: .none)
        }
    }
}

extension Fast {
    /// Floats of scratch: one b matrix packed for `mlk_pack`, per thread (see `batchMatMul`).
    static func batchMatMulScratch(_ xs: [[Int]], threads: Int) -> Int {
        guard xs.count == 2, xs[1].count >= 2 else { return 0 }
        return Int(mlk_packed_count(Int64(xs[1][xs[1].count - 2]), Int64(xs[1][xs[1].count - 1]))) &* max(threads, 1)
    }

    /// Each output matrix as a packed GEMM; b is packed once for the consecutive outputs that share it. With at least
    /// as many output matrices as threads (attention's heads), each thread takes a contiguous group of them, packing
    /// into its own part of scratch, with no hand-off inside one; otherwise each matrix's rows or column groups are
    /// split across threads. A matrix's values do not depend on which thread computes it.
    static func batchMatMul(_ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                            scratch: UnsafeMutablePointer<Float>, threads: Int) {
        let (m, k, n) = (xs[0][xs[0].count - 2], xs[0][xs[0].count - 1], ys[ys.count - 1])
        if k == 0 { y.initialize(repeating: 0, count: ys.reduce(1, &*)); return }   // empty sums
        let pairs = Program.batchMatMulPairs(xs[0], xs[1], ys)
        nonisolated(unsafe) let (a, b, y, scratch) = (x[0], x[1], y, scratch)
        /// Output matrices [lo, hi) on one thread, packing into `packed`.
        @Sendable func matrices(_ lo: Int, _ hi: Int, _ packed: UnsafeMutablePointer<Float>, threads: Int) {
            var packedB = -1
            for o in lo..<hi {
                let (ia, ib) = pairs[o]
                if ib != packedB {
                    mlk_pack(b + ib &* k &* n, Int64(k), Int64(n), packed)
                    packedB = ib
                }
                packedGemm(a + ia &* m &* k, lda: k, packed, rows: m, n: n, k: k, bias: nil, y + o &* m &* n, act: .none,
                           threads: threads)
            }
        }
        let groups = min(threads, pairs.count)
        guard groups > 1, pairs.count &* m &* k &* n >= parallelThreshold else {
            matrices(0, pairs.count, scratch, threads: threads)
            return
        }
        let room = Int(mlk_packed_count(Int64(k), Int64(n)))
        WorkerPool.shared(helpers: threads - 1).run(groups) { g in
            let (q, r) = pairs.count.quotientAndRemainder(dividingBy: groups)
            let lo = g &* q &+ min(g, r)
            matrices(lo, lo &+ q &+ (g < r ? 1 : 0), scratch + g &* room, threads: 1)
        }
    }
}
