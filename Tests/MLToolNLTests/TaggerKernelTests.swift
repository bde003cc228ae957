import Foundation
import MLToolCore
import Testing
@testable import MLToolNL

/// The emission kernel against its scalar reference, and Viterbi against brute force.
@Suite struct TaggerKernelTests {
    @Test(arguments: [2, 7, 8, 9, 17, 24, 31, 32, 33, 50, 70])
    func emissionsMatchTheReference(tags t: Int) {
        var rng = SplitMix64(seed: UInt64(t))
        let rows = 40
        let ints = (0..<(rows * t + 8)).map { _ in Int32(truncatingIfNeeded: rng.next() % 2001) - 1000 }
        let floats = (0..<(rows * t + 8)).map { _ in rng.nextUnit() * 2 - 1 }
        for count in [0, 1, 5, 48] {
            let picked = (0..<count).map { _ in Int32(rng.next() % UInt64(rows)) }
            var fast = [Int32](repeating: 7, count: t), slow = [Int32](repeating: 9, count: t)
            var fastF = [Float](repeating: 7, count: t), slowF = [Float](repeating: 9, count: t)
            picked.withUnsafeBufferPointer { r in
                let r = r.baseAddress ?? UnsafePointer(bitPattern: 8)!
                ints.withUnsafeBufferPointer { w in
                    TaggerKernels.emissions(w.baseAddress!, t: t, rows: r, count: count, out: &fast)
                    TaggerKernels.emissionsReference(w.baseAddress!, t: t, rows: r, count: count, out: &slow)
                }
                floats.withUnsafeBufferPointer { w in
                    TaggerKernels.emissions(w.baseAddress!, t: t, rows: r, count: count, out: &fastF)
                    TaggerKernels.emissionsReference(w.baseAddress!, t: t, rows: r, count: count, out: &slowF)
                }
            }
            #expect(fast == slow, "t \(t), \(count) rows")
            #expect(fastF.map(\.bitPattern) == slowF.map(\.bitPattern), "t \(t), \(count) rows")
            #expect(fastF.allSatisfy { $0.isFinite })
        }
    }

    /// Every tag sequence scored by hand; Viterbi must return the best (the smallest tags on ties).
    @Test(arguments: [(1, 3), (2, 2), (3, 3), (4, 2), (5, 3)])
    func viterbiFindsTheBestSequence(_ shape: (n: Int, t: Int)) {
        let (n, t) = shape
        var rng = SplitMix64(seed: UInt64(n * 10 + t))
        for trial in 0..<20 {
            // Small integers make ties common, which checks the tie rule too.
            let e = (0..<(n * t)).map { _ in Int32(rng.next() % 4) }
            let a = (0..<((t + 2) * t)).map { _ in Int32(rng.next() % 4) }
            var best: [Int32] = [], bestScore = Int32.min
            var y = [Int32](repeating: 0, count: n)
            for code in 0..<Int(pow(Double(t), Double(n))) {
                var c = code
                for i in stride(from: n - 1, through: 0, by: -1) { y[i] = Int32(c % t); c /= t }
                var s = a[t * t + Int(y[0])] + a[(t + 1) * t + Int(y[n - 1])]
                for i in 0..<n { s += e[i * t + Int(y[i])] }
                for i in 1..<max(n, 1) { s += a[Int(y[i - 1]) * t + Int(y[i])] }
                if s > bestScore || (s == bestScore && y.lexicographicallyPrecedes(best)) { best = y; bestScore = s }
            }
            var delta = [Int32](repeating: 0, count: n * t), back = [Int32](repeating: 0, count: n * t)
            var out = [Int32](repeating: -1, count: n)
            SequenceDecoder.viterbi(emissions: e, n: n, tags: t, transitions: a, scratch: &delta, back: &back, out: &out)
            var score = a[t * t + Int(out[0])] + a[(t + 1) * t + Int(out[n - 1])]
            for i in 0..<n { score += e[i * t + Int(out[i])] }
            for i in 1..<max(n, 1) { score += a[Int(out[i - 1]) * t + Int(out[i])] }
            #expect(score == bestScore, "trial \(trial)")
        }
    }
}
