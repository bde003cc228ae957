import Foundation
import MLToolCore

/// Gradient histograms of one leaf: per feature and bin the sums of gradients and hessians and the row count,
/// laid out feature after feature (`offsets[f]` is feature f's bin 0).
public struct Histogram: Sendable, Equatable {
    public var g: [Double]
    public var h: [Double]
    public var c: [Int32]

    public init(bins: Int) {
        g = [Double](repeating: 0, count: bins); h = g; c = [Int32](repeating: 0, count: bins)
    }

    /// self − other, bin by bin (a parent's histogram less one child's is the other child's).
    public mutating func subtract(_ other: Histogram) {
        for i in g.indices { g[i] -= other.g[i]; h[i] -= other.h[i]; c[i] -= other.c[i] }
    }
}

/// Builds a leaf's histogram from the binned data (feature-major, [f · n + r]) and the rows it holds. Both kernels add
/// each bin's terms in the order of `rows`, so they give the same bits, for any number of threads.
public enum HistogramKernel {
    /// The scalar reference: one pass per row over every feature.
    public static func reference(bins: [UInt8], rowCount n: Int, offsets: [Int], rows: ArraySlice<Int32>,
                                 g: [Float], h: [Float], into hist: inout Histogram) {
        let features = offsets.count - 1
        for r in rows {
            let r = Int(r)
            for f in 0..<features {
                let b = offsets[f] + Int(bins[f * n + r])
                hist.g[b] += Double(g[r]); hist.h[b] += Double(h[r]); hist.c[b] += 1
            }
        }
    }

    /// The fast path: the leaf's gradients gathered in row order once, then features split into blocks across
    /// `threads` workers, each summing its own features (no shared bins, so no locks and a fixed order).
    public static func build(bins: [UInt8], rowCount n: Int, offsets: [Int], rows: ArraySlice<Int32>,
                             g: [Float], h: [Float], threads: Int, into hist: inout Histogram) {
        let features = offsets.count - 1, count = rows.count
        guard count > 0, features > 0 else { return }
        var og = [Double](repeating: 0, count: count), oh = og
        var i = 0
        for r in rows { og[i] = Double(g[Int(r)]); oh[i] = Double(h[Int(r)]); i += 1 }
        let workers = max(1, min(threads, features, count / 1024 + 1))
        bins.withUnsafeBufferPointer { bp in
            rows.withUnsafeBufferPointer { rp in
                og.withUnsafeBufferPointer { gp in
                    oh.withUnsafeBufferPointer { hp in
                        hist.g.withUnsafeMutableBufferPointer { hg in
                            hist.h.withUnsafeMutableBufferPointer { hh in
                                hist.c.withUnsafeMutableBufferPointer { hc in
                                    let hgp = hg.baseAddress!, hhp = hh.baseAddress!, hcp = hc.baseAddress!
                                    let shared = (SharedPointer(p: hgp), SharedPointer(p: hhp), SharedPointer(p: hcp))
                                    let b0 = SharedPointer(p: UnsafeMutablePointer(mutating: bp.baseAddress!))
                                    let r0 = SharedPointer(p: UnsafeMutablePointer(mutating: rp.baseAddress!))
                                    let g0 = SharedPointer(p: UnsafeMutablePointer(mutating: gp.baseAddress!))
                                    let h0 = SharedPointer(p: UnsafeMutablePointer(mutating: hp.baseAddress!))
                                    DispatchQueue.concurrentPerform(iterations: workers) { w in
                                        let lo = features * w / workers, hi = features * (w + 1) / workers
                                        for f in lo..<hi {
                                            let column = b0.p + f * n, base = offsets[f]
                                            let sg = shared.0.p + base, sh = shared.1.p + base, sc = shared.2.p + base
                                            for j in 0..<count {
                                                let b = Int(column[Int(r0.p[j])])
                                                sg[b] += g0.p[j]; sh[b] += h0.p[j]; sc[b] &+= 1
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

