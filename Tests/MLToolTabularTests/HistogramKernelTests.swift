import Foundation
import Testing
import MLToolCore
import MLToolTestSupport
@testable import MLToolTabular

/// The threaded histogram kernel against the scalar reference: the same bits, for any thread count.
@Suite struct HistogramKernelTests {
    /// Both histograms' sums as bit patterns, and their counts.
    static func bits(_ h: Histogram) -> [UInt64] {
        h.g.map(\.bitPattern) + h.h.map(\.bitPattern) + h.c.map { UInt64(UInt32(bitPattern: $0)) }
    }

    /// Seeded gradients over 40 binades (2^−30…2^10, either sign; hessians positive): sums of values this far apart
    /// round, so a different summation order gives different bits (values of one binade, like `nextUnit`'s, add exactly
    /// in binary64 whatever the order, and could not tell).
    static func spread(_ n: Int, _ rng: inout SplitMix64, signed: Bool) -> [Float] {
        (0..<n).map { _ in
            let sign: FloatingPointSign = signed && rng.next() & 1 == 1 ? .minus : .plus
            return Float(sign: sign, exponent: Int(rng.next() % 40) - 30, significand: 1 + rng.nextUnit())
        }
    }

    /// The fast kernel gives the reference's bits for `rows`, at 1, 2, 3 and 8 threads.
    static func expectReferenceBits(_ binned: [UInt8], n: Int, offsets: [Int], rows: [Int32], g: [Float], h: [Float],
                                    _ what: String) {
        var reference = Histogram(bins: offsets.last!)
        HistogramKernel.reference(bins: binned, rowCount: n, offsets: offsets, rows: rows[...], g: g, h: h, into: &reference)
        #expect(reference.c.reduce(0, +) == Int32(rows.count * (offsets.count - 1)), "\(what): every row once a feature")
        for threads in [1, 2, 3, 8] {
            var fast = Histogram(bins: offsets.last!)
            HistogramKernel.build(bins: binned, rowCount: n, offsets: offsets, rows: rows[...], g: g, h: h, threads: threads, into: &fast)
            let a = Self.bits(fast), b = Self.bits(reference), differing = zip(a, b).filter { $0 != $1 }.count
            #expect(differing == 0, "\(what), \(rows.count) rows, threads \(threads): \(differing) of \(a.count) sums differ")
        }
    }

    /// Real tables (datasets/tabular.sh's validation splits: Fashion-MNIST's 6,108 rows × 784 pixels, letter, pima
    /// with missing values, diamonds and DNA with categorical columns), binned as training bins them, with seeded
    /// gradients: all rows; both children of a real split (stable partitions, ascending); a 30 % sample as bagging
    /// draws it; a shuffled subset; and 0, 1, 3 and 5 rows (every tail length of the 4-row loop).
    @Test(arguments: [("fashion", "label"), ("letter", "lettr"), ("pima", "diabetes"), ("diamonds", "price"), ("dna", "Class")])
    func realTablesGiveTheReferenceBits(_ name: String, _ target: String) throws {
        let path = BoostedTreeTests.root + "/" + name + "/validation.csv"
        guard FileManager.default.fileExists(atPath: path) else {
            Oracles.missing("\(path) is missing: run bash datasets/tabular.sh (make test does)")
            return
        }
        let table = try RawTable.read(path)
        let schema = try TabularSchema.infer(table, target: target)
        let matrix = try FeatureMatrix(table: table, features: schema.features)
        let bins = FeatureBins(matrix: matrix, categorical: schema.features.map { $0.kind == .categorical }, maxBins: 255)
        let binned = bins.binned(matrix), n = matrix.rowCount
        var offsets = [0]
        for c in bins.counts { offsets.append(offsets.last! + c) }
        var rng = SplitMix64(seed: 53)
        let g = Self.spread(n, &rng, signed: true), h = Self.spread(n, &rng, signed: false)
        let all = (0..<Int32(n)).map { $0 }
        // A split on the widest feature at its middle bin, missing values left (the grower's partition).
        let f = bins.counts.indices.max { bins.counts[$0] < bins.counts[$1] }!
        let rule = bins.bounds[f] == nil ? SplitRule(feature: f, leftBins: [1], missingLeft: true, categorical: true)
            : SplitRule(feature: f, bin: max(1, bins.counts[f] / 2), missingLeft: true)
        var order = all, scratch = all
        let left = rule.partition(&order, &scratch, binned: binned, n: n, start: 0, count: n)
        let sample = all.filter { _ in rng.next() % 10 < 3 }
        var shuffled = sample
        shuffled.shuffle(using: &rng)
        let sets: [(String, [Int32])] = [("all rows", all), ("left child", Array(order[..<left])),
                                          ("right child", Array(order[left...])), ("30 % sample", sample),
                                          ("shuffled", shuffled)] + [0, 1, 3, 5].map { ("first \($0)", Array(shuffled.prefix($0))) }
        #expect(left > 0 && left < n, "\(name): the split on feature \(f) sends rows both ways")
        for (what, rows) in sets { Self.expectReferenceBits(binned, n: n, offsets: offsets, rows: rows, g: g, h: h, "\(name) \(what)") }
    }

    @Test func theFastKernelGivesTheReferenceBitsForEveryThreadCount() {
        var rng = SplitMix64(seed: 53)
        let n = 5_000, counts = [256, 3, 17, 256, 2, 100, 64]
        var offsets = [0]
        for c in counts { offsets.append(offsets.last! + c) }
        var bins = [UInt8](repeating: 0, count: n * counts.count)
        for (f, c) in counts.enumerated() { for r in 0..<n { bins[f * n + r] = UInt8(rng.next() % UInt64(c)) } }
        let g = Self.spread(n, &rng, signed: true), h = Self.spread(n, &rng, signed: false)
        // A leaf's rows: a scattered subset in a shuffled order, as partitions leave them.
        var rows = (0..<Int32(n)).filter { _ in rng.next() % 3 != 0 }
        rows.shuffle(using: &rng)
        Self.expectReferenceBits(bins, n: n, offsets: offsets, rows: rows, g: g, h: h, "random bins")
    }

    /// The promised order, where it shows: five rows in one bin with gradients 2^60, 1, −2^60, 1, 1. Four partials
    /// give (2^60 + 1 [rows 0, 4] + 1 [row 1]) + (−2^60 [row 2] + 1 [row 3]) = 0 in binary64; one running sum gives 2.
    @Test func bothKernelsSumFourPartialsInTheirOrder() {
        let g: [Float] = [0x1p60, 1, -0x1p60, 1, 1], h: [Float] = [1, 1, 1, 1, 1]
        var reference = Histogram(bins: 1), fast = Histogram(bins: 1)
        HistogramKernel.reference(bins: [0, 0, 0, 0, 0], rowCount: 5, offsets: [0, 1], rows: [0, 1, 2, 3, 4], g: g, h: h, into: &reference)
        HistogramKernel.build(bins: [0, 0, 0, 0, 0], rowCount: 5, offsets: [0, 1], rows: [0, 1, 2, 3, 4], g: g, h: h, threads: 1, into: &fast)
        #expect(reference.g == [0] && fast.g == [0] && g.reduce(0.0) { $0 + Double($1) } == 2)
        #expect(reference.h == [5] && fast.h == [5] && reference.c == [5] && fast.c == [5])
        // A bin no row reaches is left as it was: −0 stays −0 in both (adding (0 + 0) + (0 + 0) would make it +0).
        var before = Histogram(bins: 2)
        before.g = [-0.0, -0.0]
        var r = before, q = before
        HistogramKernel.reference(bins: [0, 0], rowCount: 2, offsets: [0, 2], rows: [0, 1], g: [1, 2], h: [1, 1], into: &r)
        HistogramKernel.build(bins: [0, 0], rowCount: 2, offsets: [0, 2], rows: [0, 1], g: [1, 2], h: [1, 1], threads: 1, into: &q)
        #expect(Self.bits(r) == Self.bits(q) && r.g[0] == 3 && r.g[1].sign == .minus)
    }

    /// The branch-free partition against the plain loop: numeric splits at every bin of a 256-bin feature and of a
    /// 3-bin one (missing left and right), categorical ones with seeded left sets, over seeded sub-ranges of a
    /// shuffled order.
    @Test func partitionGivesTheReferenceOrder() {
        var rng = SplitMix64(seed: 53)
        let n = 3_000, counts = [256, 3]
        var binned = [UInt8](repeating: 0, count: n * counts.count)
        for (f, c) in counts.enumerated() { for r in 0..<n { binned[f * n + r] = UInt8(rng.next() % UInt64(c)) } }
        var rules: [SplitRule] = []
        for (f, c) in counts.enumerated() {
            for bin in 1..<c { for missingLeft in [false, true] { rules.append(SplitRule(feature: f, bin: bin, missingLeft: missingLeft)) } }
            rules.append(SplitRule(feature: f, leftBins: (1..<c).filter { _ in rng.next() & 1 == 1 }, missingLeft: true, categorical: true))
        }
        var shuffled = (0..<Int32(n)).map { $0 }
        shuffled.shuffle(using: &rng)
        for rule in rules {
            let start = Int(rng.next() % 1000), count = Int(rng.next() % UInt64(n - start + 1))
            var fast = shuffled, reference = shuffled, scratch = [Int32](repeating: -1, count: n)
            let l = rule.partition(&fast, &scratch, binned: binned, n: n, start: start, count: count)
            let r = rule.referencePartition(&reference, binned: binned, n: n, start: start, count: count)
            #expect(l == r && fast == reference, "feature \(rule.feature) bin \(rule.bin) rows \(start)..<\(start + count)")
        }
    }

    @Test func subtractionGivesTheSiblingsCounts() {
        var parent = Histogram(bins: 4), child = Histogram(bins: 4)
        parent.g = [1, 2, 3, 4]; parent.h = [1, 1, 1, 1]; parent.c = [5, 6, 7, 8]
        child.g = [0.5, 2, 0, 1]; child.h = [1, 0, 0.5, 1]; child.c = [1, 6, 0, 8]
        parent.subtract(child)
        #expect(parent.g == [0.5, 0, 3, 3] && parent.h == [0, 1, 0.5, 0] && parent.c == [4, 0, 7, 0])
    }

    /// Columns of whole numbers are counted, not sorted, and binned through a table: the same sample, distinct values
    /// and bins as sorting and `bin` give (seeded columns of 0…300 and 0…65,535 with missing values and −0).
    @Test func wholeNumberColumnsBinAsSortingBinsThem() {
        var rng = SplitMix64(seed: 53)
        for top in [300, 65_535] {
            var column = (0..<5_000).map { _ in Float(rng.next() % UInt64(top + 1)) }
            for i in stride(from: 0, to: column.count, by: 97) { column[i] = .nan }
            let counted = FeatureBins.sortedSample(column, stride: 1), sorted = FeatureBins.sorting(column.filter { !$0.isNaN })
            #expect(counted.sample == sorted.sample && counted.distinct == sorted.distinct, "0…\(top)")
            column[5] = -0.0
            let bins = FeatureBins(matrix: FeatureMatrix(rowCount: column.count, columns: [column]), categorical: [false], maxBins: 255)
            let binned = bins.binned(FeatureMatrix(rowCount: column.count, columns: [column]))
            #expect(binned == column.map { bins.bin(0, $0) } && binned[5] == bins.bin(0, 0), "0…\(top)")
        }
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
