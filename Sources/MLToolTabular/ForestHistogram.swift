import Foundation
import MLToolCore

/// A node's statistics per feature bin for averaged trees: K + 1 sums per bin (stride K + 1) and the row count.
/// Each row adds `value` to its channel (its class, or 0 for a regression) and its weight to channel K, so a bin holds
/// the weighted class counts and their total (classification) or the weighted residual sum and the weight (regression).
struct ForestHistogram {
    var sums: [Double]
    var counts: [Int32]

    init(bins: Int, channels k: Int) {
        sums = [Double](repeating: 0, count: bins * (k + 1)); counts = [Int32](repeating: 0, count: bins)
    }

    /// self − other, bin by bin (a parent's histogram less one child's is the other child's).
    mutating func subtract(_ other: ForestHistogram) {
        for i in sums.indices { sums[i] -= other.sums[i] }
        for i in counts.indices { counts[i] -= other.counts[i] }
    }

    /// Adds `rows` (their bins feature-major in `bins`, [f · n + r]) with per-row channel, value and weight. Features
    /// are split into blocks across `threads` workers, each adding its rows in the order of `rows`: the same bits for
    /// any thread count.
    mutating func add(bins: [UInt8], rowCount n: Int, offsets: [Int], k: Int, rows: ArraySlice<Int32>,
                      channel: [Int32], value: [Double], weight: [Double], threads: Int) {
        let features = offsets.count - 1, count = rows.count, stride = k + 1
        guard count > 0, features > 0 else { return }
        // The edge of the kernel: the bins cover the rows, the output covers the features' bins, and (checked where
        // the gather reads them) every row is below n and its channel below k. A bin at or past its feature's width,
        // which FeatureBins never makes, is not checked per update.
        precondition(bins.count >= features * n && offsets[features] <= counts.count && sums.count >= counts.count * stride,
                     "forest histogram: bins or output shorter than the rows")
        // The node's rows gathered once, in order.
        var ch = [Int](repeating: 0, count: count), v = [Double](repeating: 0, count: count), w = v
        var i = 0
        for r in rows {
            let r = Int(r)
            precondition(r >= 0 && r < n && channel[r] >= 0 && Int(channel[r]) < k, "forest histogram: row \(r) or its channel out of range")
            ch[i] = Int(channel[r]); v[i] = value[r]; w[i] = weight[r]; i += 1
        }
        let workers = max(1, min(threads, features, count / 1024 + 1))
        bins.withUnsafeBufferPointer { bp in
            rows.withUnsafeBufferPointer { rp in
                sums.withUnsafeMutableBufferPointer { sp in
                    counts.withUnsafeMutableBufferPointer { cp in
                        let shared = (SharedPointer(p: sp.baseAddress!), SharedPointer(p: cp.baseAddress!))
                        let input = (SharedPointer(p: UnsafeMutablePointer(mutating: bp.baseAddress!)),
                                     SharedPointer(p: UnsafeMutablePointer(mutating: rp.baseAddress!)))
                        ch.withUnsafeBufferPointer { chp in
                            v.withUnsafeBufferPointer { vp in
                                w.withUnsafeBufferPointer { wp in
                                    let gathered = (SharedPointer(p: UnsafeMutablePointer(mutating: chp.baseAddress!)),
                                                    SharedPointer(p: UnsafeMutablePointer(mutating: vp.baseAddress!)),
                                                    SharedPointer(p: UnsafeMutablePointer(mutating: wp.baseAddress!)))
                                    DispatchQueue.concurrentPerform(iterations: workers) { worker in
                                        let lo = features * worker / workers, hi = features * (worker + 1) / workers
                                        for f in lo..<hi {
                                            let column = input.0.p + f * n
                                            for j in 0..<count {
                                                let b = offsets[f] + Int(column[Int(input.1.p[j])])
                                                shared.0.p[b * stride + gathered.0.p[j]] += gathered.1.p[j]
                                                shared.0.p[b * stride + k] += gathered.2.p[j]
                                                shared.1.p[b] &+= 1
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
