import Foundation
import MLToolCore
import Testing
@testable import MLToolTrain

/// The L-BFGS vector operations split long vectors into parallel chunks; the results must be the bits of the
/// one-task computation (plain elementwise loops; sums of 512-element blocks added in order).
@Suite struct LBFGSVectorTests {
    /// Three and a bit chunks, so that several tasks and a ragged end run.
    let n = 3 * vectorChunk + 1234

    func vector(seed: UInt64) -> [Float] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { _ in (rng.nextUnit() - 0.5) * 8 }
    }

    /// Σ over 512-element blocks of `block` (each block short enough to run as one task), in order.
    func blockwise(_ block: (Range<Int>) -> Double) -> Double {
        var total = 0.0
        for start in stride(from: 0, to: n, by: sumBlock) { total += block(start..<min(start + sumBlock, n)) }
        return total
    }

    /// What the tests below rely on: a vector of `n` really is split, into three full chunks and a ragged end that
    /// cover it once, and chunks hold whole summation blocks.
    @Test func longVectorsRunAsSeveralChunks() {
        final class Ranges: @unchecked Sendable {
            let lock = NSLock()
            var all: [Range<Int>] = []
            func add(_ r: Range<Int>) { lock.lock(); all.append(r); lock.unlock() }
        }
        let seen = Ranges()
        forEachChunk(n) { seen.add($0) }
        let ranges = seen.all.sorted { $0.lowerBound < $1.lowerBound }
        #expect(ranges.map(\.count) == [vectorChunk, vectorChunk, vectorChunk, 1234], "\(ranges)")
        #expect(ranges.first?.lowerBound == 0 && ranges.last?.upperBound == n
                && zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound }, "\(ranges)")
        #expect(vectorChunk % sumBlock == 0)
    }

    @Test func sumsMatchTheOneTaskBlocks() {
        let a = vector(seed: 1), b = vector(seed: 2), c = vector(seed: 3)
        let reference = blockwise { dot(Array(a[$0]), Array(b[$0])) }
        #expect(dot(a, b).bitPattern == reference.bitPattern)

        var y = b, yRef = b
        let s = axpyThenDot(-0.37, a, &y, c)
        var sRef = 0.0
        for start in stride(from: 0, to: n, by: sumBlock) {
            let r = start..<min(start + sumBlock, n)
            var part = Array(yRef[r])
            sRef += axpyThenDot(-0.37, Array(a[r]), &part, Array(c[r]))
            yRef.replaceSubrange(r, with: part)
        }
        #expect(s.bitPattern == sRef.bitPattern)
        #expect(y.map(\.bitPattern) == yRef.map(\.bitPattern))
    }

    @Test func elementwiseOperationsMatchPlainLoops() {
        let a = vector(seed: 4), d = vector(seed: 5)
        let af = Float(0.8125)
        #expect(difference(a, d) == zip(a, d).map { $0 - $1 })
        #expect(moved(a, 0.8125, d) == zip(a, d).map { $0 + af * $1 })
        var y = a
        axpy(0.8125, d, &y)
        #expect(y == zip(a, d).map { $0 + af * $1 })
        var x = a
        scale(&x, -0.5)
        #expect(x == a.map { $0 * -0.5 })
    }

    @Test func maxAbsSkipsNaNsAndSeesInfinity() {
        var a = vector(seed: 6)
        a[n - 3] = -7.75                   // the largest finite magnitude, in the ragged tail
        a[vectorChunk + 9] = .nan
        a[2 * vectorChunk] = -.nan
        #expect(maxAbs(a) == 7.75)
        a[vectorChunk * 2 + 17] = -.infinity
        #expect(maxAbs(a) == .infinity)
        #expect(maxAbs([]) == 0 && maxAbs([.nan, -2, 1]) == 2)
    }
}
