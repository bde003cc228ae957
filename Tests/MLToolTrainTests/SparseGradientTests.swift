import MLToolCore
import MLToolData
import MLToolTestSupport
import Testing
@testable import MLToolTrain

/// The gradient's product Xᵀ·G of sparse rows: the column gather (SparseColumns + C kernel) against the plain
/// scatter loop, which it must match bit for bit at every kernel level and every split of the columns.
@Suite struct SparseGradientTests {
    /// The first element whose bits differ, as text (nil when all match): short failure messages.
    func firstDifference(_ a: [Float], _ b: [Float]) -> String? {
        guard a.count == b.count else { return "\(a.count) values vs \(b.count)" }
        return zip(a, b).enumerated().first { $0.element.0.bitPattern != $0.element.1.bitPattern }
            .map { "[\($0.offset)]: \($0.element.0) vs \($0.element.1)" }
    }

    /// About 10% non-zeros; every 7th column and every 11th row left empty, so empty columns and rows occur.
    func problem(rows: Int, cols: Int, classes: Int, seed: UInt64) throws -> (CSRMatrix, [Int]) {
        let (x, labels) = try sparseProblem(rows: rows, cols: cols, classes: classes, seed: seed, density: 0.1,
                                            leak: 0.3, offset: -0.5, normalise: false)
        var offsets = [0], columns: [Int32] = [], values: [Float] = []
        for r in 0..<x.rows {
            for q in x.rowOffsets[r]..<x.rowOffsets[r + 1] where r % 11 != 3 && x.columns[q] % 7 != 2 {
                columns.append(x.columns[q]); values.append(x.values[q])
            }
            offsets.append(columns.count)
        }
        return (try CSRMatrix(rows: rows, cols: cols, rowOffsets: offsets, columns: columns, values: values), labels)
    }

    @Test func columnsHoldTheTransposeWithRowsIncreasing() throws {
        let (x, _) = try problem(rows: 60, cols: 45, classes: 3, seed: 1)
        let t = try #require(SparseColumns(x))
        let dense = x.dense()
        var fromColumns = [Float](repeating: 0, count: 60 * 45)
        #expect(t.offsets[0] == 0 && t.offsets[45] == x.nonZeros)
        for c in 0..<45 {
            var previous = -1
            for q in t.offsets[c]..<t.offsets[c + 1] {
                let r = Int(t.rowIndices[q])
                #expect(r > previous && r < 60, "column \(c): row \(r) after \(previous)")
                previous = r
                fromColumns[r * 45 + c] = t.values[q]
            }
        }
        #expect(firstDifference(fromColumns, dense) == nil)
        #expect(t.offsets[3] == t.offsets[2], "column 2 is empty")
    }

    /// Class counts below, at and above the 8-wide vectors and the 24-class register block (2, 5, 8, 20, 24, 29,
    /// 53); portable C and AVX2; the columns split into 1, 3 and 32 tasks (what more threads would change).
    @Test(arguments: [2, 5, 8, 20, 24, 29, 53])
    func gatherMatchesTheScatterBitForBit(classes k: Int) throws {
        let n = 230, d = 150
        let (x, _) = try problem(rows: n, cols: d, classes: k, seed: 60 + UInt64(k))
        var rng = SplitMix64(seed: 61)
        let g = (0..<(n * k)).map { _ in rng.nextUnit() * 2 - 1 }
        func product(_ rows: SparseRows, level: Int32?, chunks: Int) -> [Float] {
            var out = [Float](repeating: .nan, count: d * k)
            g.withUnsafeBufferPointer { gp in
                out.withUnsafeMutableBufferPointer { op in
                    if let level {
                        rows.transposedProduct(g: gp.baseAddress!, classes: k, into: op.baseAddress!, level: level,
                                               chunks: chunks)
                    } else {
                        op.initialize(repeating: 0)
                        rows.accumulateTransposed(rows: 0..<n, g: gp.baseAddress!, classes: k, into: op.baseAddress!)
                    }
                }
            }
            return out
        }
        let reference = SparseRows.with(x) { rows in
            #expect(rows.transposed == nil)
            // Without columns the product falls back to the scatter.
            #expect(firstDifference(product(rows, level: -1, chunks: 4), product(rows, level: nil, chunks: 1)) == nil)
            return product(rows, level: nil, chunks: 1)
        }
        #expect(reference.contains { $0 != 0 } && !reference.contains { $0.isNaN })
        SparseRows.with(x, transposed: true) { rows in
            #expect(rows.transposed != nil)
            for level in Set([0, SoftmaxSGD.bestLevel]) {
                for chunks in [1, 3, 32] {
                    let fast = product(rows, level: level, chunks: chunks)
                    #expect(firstDifference(fast, reference) == nil, "\(k) classes, level \(level), \(chunks) tasks")
                }
            }
        }
    }

    /// The forward kernels round like plain loops in the row's order: portable C like `+= x·w` (on every machine),
    /// AVX2 (one pass over each row, up to 24 classes at once, masked tails) like fused multiply-adds (where the CPU
    /// has it): the same bits, for the class counts of the gather test.
    @Test(arguments: [2, 5, 8, 20, 24, 29, 53])
    func forwardIsAPlainLoopAtEveryLevel(classes k: Int) throws {
        let n = 120, d = 90
        let (x, _) = try problem(rows: n, cols: d, classes: k, seed: 80 + UInt64(k))
        var rng = SplitMix64(seed: 81)
        let w = (0..<(d * k)).map { _ in rng.nextUnit() * 2 - 1 }
        func plainLoop(fused: Bool) -> [Float] {
            var reference = [Float](repeating: 0, count: (n - 7) * k)
            for r in 7..<n {
                for q in x.rowOffsets[r]..<x.rowOffsets[r + 1] {
                    let c = Int(x.columns[q])
                    for j in 0..<k {
                        if fused {
                            reference[(r - 7) * k + j].addProduct(x.values[q], w[c * k + j])
                        } else {
                            reference[(r - 7) * k + j] += x.values[q] * w[c * k + j]
                        }
                    }
                }
            }
            return reference
        }
        func forward(level: Int32) -> [Float] {
            var out = [Float](repeating: .nan, count: (n - 7) * k)
            SparseRows.with(x) { rows in
                w.withUnsafeBufferPointer { wp in
                    out.withUnsafeMutableBufferPointer { op in
                        rows.forward(rows: 7..<n, weights: wp.baseAddress!, classes: k, into: op.baseAddress!, level: level)
                    }
                }
            }
            return out
        }
        let unfused = plainLoop(fused: false)
        #expect(unfused.allSatisfy { $0.isFinite } && unfused.contains { $0 != 0 })
        #expect(firstDifference(forward(level: 0), unfused) == nil, "portable, \(k) classes")
        if SoftmaxSGD.bestLevel >= 1 {
            #expect(firstDifference(forward(level: 1), plainLoop(fused: true)) == nil, "AVX2, \(k) classes")
        }
    }

    /// The whole objective (loss, accuracy, gradient) is the same with and without the columns.
    @Test(arguments: [false, true])
    func objectiveIsTheSameWithColumns(weighted: Bool) throws {
        let n = 700, d = 120, k = 6
        let (x, labels) = try problem(rows: n, cols: d, classes: k, seed: 70)
        var rng = SplitMix64(seed: 71)
        let theta = (0..<(d * k + k)).map { _ in gaussian(&rng) * 0.3 }
        let raw = (0..<n).map { Double($0 % 4 + 1) }
        let rowWeights: [Double]? = weighted ? raw.map { $0 / raw.reduce(0, +) } : nil
        func evaluate(transposed: Bool) -> (SoftmaxObjective<SparseRows>.Evaluation, [Float]) {
            SparseRows.with(x, transposed: transposed) { rows in
                let objective = SoftmaxObjective(matrix: rows, labels: labels.map(Int32.init), rowWeights: rowWeights,
                                                 classes: k, l2: 0.02)
                var gradient = [Float](repeating: .nan, count: theta.count)
                let e = theta.withUnsafeBufferPointer { t in
                    gradient.withUnsafeMutableBufferPointer { objective.evaluate(t.baseAddress!, gradient: $0.baseAddress!) }
                }
                return (e, gradient)
            }
        }
        let ((plain, plainGradient), (gathered, gatheredGradient)) = (evaluate(transposed: false), evaluate(transposed: true))
        #expect(gathered.loss.bitPattern == plain.loss.bitPattern && gathered.correct == plain.correct)
        #expect(firstDifference(gatheredGradient, plainGradient) == nil)
        #expect(!plainGradient.contains { $0.isNaN } && plain.loss > 0)
    }
}
