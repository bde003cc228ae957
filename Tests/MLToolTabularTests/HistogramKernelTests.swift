import Testing
import MLToolCore
@testable import MLToolTabular

/// The threaded histogram kernel against the scalar reference: the same bits, for any thread count.
@Suite struct HistogramKernelTests {
    @Test func theFastKernelGivesTheReferenceBitsForEveryThreadCount() {
        var rng = SplitMix64(seed: 53)
        let n = 5_000, counts = [256, 3, 17, 256, 2, 100, 64]
        var offsets = [0]
        for c in counts { offsets.append(offsets.last! + c) }
        var bins = [UInt8](repeating: 0, count: n * counts.count)
        for (f, c) in counts.enumerated() { for r in 0..<n { bins[f * n + r] = UInt8(rng.next() % UInt64(c)) } }
        let g = (0..<n).map { _ in rng.nextUnit() * 2 - 1 }, h = (0..<n).map { _ in rng.nextUnit() }
        // A leaf's rows: a scattered subset in a shuffled order, as partitions leave them.
        var rows = (0..<Int32(n)).filter { _ in rng.next() % 3 != 0 }
        rows.shuffle(using: &rng)
        var reference = Histogram(bins: offsets.last!)
        HistogramKernel.reference(bins: bins, rowCount: n, offsets: offsets, rows: rows[...], g: g, h: h, into: &reference)
        #expect(reference.c.reduce(0, +) == Int32(rows.count * counts.count))
        for threads in [1, 2, 3, 8] {
            var fast = Histogram(bins: offsets.last!)
            HistogramKernel.build(bins: bins, rowCount: n, offsets: offsets, rows: rows[...], g: g, h: h, threads: threads, into: &fast)
            #expect(fast == reference, "threads \(threads)")
        }
    }

    @Test func subtractionGivesTheSiblingsCounts() {
        var parent = Histogram(bins: 4), child = Histogram(bins: 4)
        parent.g = [1, 2, 3, 4]; parent.h = [1, 1, 1, 1]; parent.c = [5, 6, 7, 8]
        child.g = [0.5, 2, 0, 1]; child.h = [1, 0, 0.5, 1]; child.c = [1, 6, 0, 8]
        parent.subtract(child)
        #expect(parent.g == [0.5, 0, 3, 3] && parent.h == [0, 1, 0.5, 0] && parent.c == [4, 0, 7, 0])
    }

    @Test func binsFollowThePredictionRule() {
        let column: [Float] = [0.5, 1, 1, 2, .nan, 3, 10]
        let b = FeatureBins(matrix: FeatureMatrix(rowCount: column.count, columns: [column]), categorical: [false], maxBins: 255)
        // Distinct 0.5, 1, 2, 3, 10: four midpoints, bins 1…5, missing in bin 0.
        #expect(b.bounds[0] == [0.75, 1.5, 2.5, 6.5])
        #expect(column.map { b.bin(0, $0) } == [1, 2, 2, 3, 0, 4, 5])
        let few = FeatureBins(matrix: FeatureMatrix(rowCount: 1000, columns: [(0..<1000).map { Float($0) }]), categorical: [false], maxBins: 16)
        #expect(few.counts[0] == 17)
        let perBin = (0..<1000).reduce(into: [Int](repeating: 0, count: 17)) { $0[Int(few.bin(0, Float($1)))] += 1 }
        #expect(perBin[0] == 0 && perBin[1...].allSatisfy { $0 >= 62 && $0 <= 63 }, "quantile bins of 1000 values into 16: \(perBin)")
    }
}
