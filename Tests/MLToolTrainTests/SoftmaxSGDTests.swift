import MLToolCore
import MLToolData
import MLToolTestSupport
import Testing
@testable import MLToolTrain

@Suite struct SoftmaxSGDTests {
    /// Sparse rows with L2-normalised values, the class leaking into a few columns (like TF-IDF text).
    func problem(rows: Int, cols: Int, classes: Int, seed: UInt64) throws -> (CSRMatrix, [Int]) {
        try sparseProblem(rows: rows, cols: cols, classes: classes, seed: seed, density: 0.08, leak: 0.25, offset: 0.2,
                          normalise: true)
    }

    func sgd(_ x: SparseRows, _ labels: [Int], classes: Int, l2: Double, epochs: Int = 3,
             weights: [Double]? = nil) -> SoftmaxSGD {
        SoftmaxSGD(matrix: x, labels: labels.map(Int32.init), rowWeights: weights, classes: classes, l2: l2,
                   epochs: epochs, learningRate: 4, seed: 11)
    }

    /// The C kernels (portable and AVX2+FMA) against the plain Swift epoch, for class counts that fill and that
    /// do not fill the 8-wide rows (3, 8, 20 and 27 classes), with and without row weights and a strong decay
    /// that triggers the rescaling of V.
    @Test(arguments: [3, 8, 20, 27])
    func kernelsMatchTheSwiftReference(classes: Int) throws {
        let (x, labels) = try problem(rows: 500, cols: 70, classes: classes, seed: UInt64(classes))
        var rng = SplitMix64(seed: 5)
        let raw = (0..<500).map { _ in Double(rng.nextUnit()) + 0.5 }
        let weights = raw.map { $0 / raw.reduce(0, +) }
        SparseRows.with(x) { rows in
            for (l2, w) in [(1e-3, nil), (0.5, weights)] as [(Double, [Double]?)] {
                let s = sgd(rows, labels, classes: classes, l2: l2, weights: w)
                let reference = s.run(level: nil)
                #expect(reference.allSatisfy { $0.isFinite }, "l2 \(l2), \(classes) classes: the reference diverged")
                // Portable C does the same float operations as the Swift loops: the same bits.
                let portable = s.run(level: 0)
                #expect(portable.map(\.bitPattern) == reference.map(\.bitPattern), "l2 \(l2), \(classes) classes")
                // AVX2 fuses multiply-adds: close, not identical.
                if SoftmaxSGD.bestLevel >= 1 {
                    assertClose(s.run(level: 1), reference.map(Double.init), rtol: 1e-3, atol: 1e-4,
                                "AVX2 vs reference, l2 \(l2), \(classes) classes")
                }
            }
        }
    }

    /// The sparse product X·W (C kernel, portable and AVX2) against the plain Swift loop, for class counts below,
    /// at and above the 8-wide vectors.
    @Test(arguments: [2, 8, 20, 29])
    func forwardMatchesTheSwiftReference(classes: Int) throws {
        let (x, _) = try problem(rows: 300, cols: 90, classes: classes, seed: 40 + UInt64(classes))
        var rng = SplitMix64(seed: 41)
        let w = (0..<(90 * classes)).map { _ in rng.nextUnit() * 2 - 1 }
        SparseRows.with(x) { rows in
            func run(_ level: Int32?) -> [Float] {
                var out = [Float](repeating: .nan, count: 250 * classes)
                w.withUnsafeBufferPointer { wp in
                    out.withUnsafeMutableBufferPointer { op in
                        if let level {
                            rows.forward(rows: 30..<280, weights: wp.baseAddress!, classes: classes,
                                         into: op.baseAddress!, level: level)
                        } else {
                            rows.forwardReference(rows: 30..<280, weights: wp.baseAddress!, classes: classes,
                                                  into: op.baseAddress!)
                        }
                    }
                }
                return out
            }
            let reference = run(nil)
            // The outputs start as NaN: equal bits alone would accept a kernel and a reference that both wrote nothing.
            #expect(reference.allSatisfy { $0.isFinite }, "the reference left outputs unwritten")
            #expect(run(0).map(\.bitPattern) == reference.map(\.bitPattern))
            if SoftmaxSGD.bestLevel >= 1 {
                assertClose(run(1), reference.map(Double.init), rtol: 1e-5, atol: 1e-5, "AVX2 forward")
            }
        }
    }

    @Test func sameSeedSameBitsOtherSeedOtherOrder() throws {
        let (x, labels) = try problem(rows: 300, cols: 50, classes: 4, seed: 2)
        SparseRows.with(x) { rows in
            var s = sgd(rows, labels, classes: 4, l2: 1e-3)
            let (a, b) = (s.run(), s.run())
            #expect(a.map(\.bitPattern) == b.map(\.bitPattern))
            s.seed = 12
            #expect(s.run() != a)
        }
    }

    /// With a strong L2 the objective is well conditioned: SGD lands next to the L-BFGS optimum.
    @Test func reachesTheLBFGSOptimum() throws {
        let (x, labels) = try problem(rows: 400, cols: 60, classes: 3, seed: 9)
        var exact = LogisticRegressionOptions(l2: .fixed(1e-2), maxIterations: 1000, tolerance: 1e-7, lossTolerance: 0)
        let optimum = try LogisticRegression.fit(sparse: x, labels: labels, classes: 3, validation: nil,
                                                 options: exact, progress: nil)
        exact.sgdEpochs = 20
        exact.maxIterations = 0
        let stochastic = try LogisticRegression.fit(sparse: x, labels: labels, classes: 3, validation: nil,
                                                    options: exact, progress: nil)
        #expect(stochastic.stopReason == .epochs && stochastic.iterations == 0)
        let jOpt = try #require(optimum.history.last?.loss), jSGD = try #require(stochastic.history.last?.loss)
        #expect(jSGD >= jOpt - 1e-6 && jSGD - jOpt < 2e-3 * jOpt, "J: SGD \(jSGD), L-BFGS \(jOpt)")
        assertClose(stochastic.weights, optimum.weights.map(Double.init), atol: 0.05, "SGD vs L-BFGS weights")
        // SGD as a warm start: a few L-BFGS iterations from there reach the optimum.
        exact.maxIterations = 200
        let polished = try LogisticRegression.fit(sparse: x, labels: labels, classes: 3, validation: nil,
                                                  options: exact, progress: nil)
        assertClose(polished.weights, optimum.weights.map(Double.init), atol: 2e-3, "SGD + L-BFGS vs L-BFGS")
    }

    /// `.auto` runs the grid values side by side; the chosen model must not depend on how they were scheduled.
    @Test func autoGridIsDeterministicAndLearns() throws {
        let (x, labels) = try problem(rows: 600, cols: 80, classes: 5, seed: 21)
        let (v, vl) = try problem(rows: 150, cols: 80, classes: 5, seed: 22)
        var options = LogisticRegressionOptions(l2: .auto, maxIterations: 0, l2Grid: [1e-2, 1e-3, 1e-4])
        options.sgdEpochs = 5
        options.seed = 3
        func fit() throws -> LogisticRegressionModel {
            try LogisticRegression.fit(sparse: x, labels: labels, classes: 5, validation: (v, vl), options: options,
                                       progress: nil)
        }
        let (a, b) = try (fit(), fit())
        #expect(a.weights.map(\.bitPattern) == b.weights.map(\.bitPattern))
        #expect(a.history.map(\.l2) == [1e-2, 1e-3, 1e-4])
        #expect((a.validationAccuracy ?? 0) > 0.8, "validation accuracy \(a.validationAccuracy ?? 0)")
    }

    @Test func invalidSGDOptionsThrow() throws {
        let (x, labels) = try problem(rows: 20, cols: 10, classes: 2, seed: 1)
        var options = LogisticRegressionOptions(l2: .fixed(1e-3))
        options.sgdEpochs = -1
        #expect(throws: TrainError.invalidOption(name: "sgd", value: "-1 epochs, rate 4.0",
                                                 expected: "epochs ≥ 0 and a finite rate > 0")) {
            try LogisticRegression.fit(sparse: x, labels: labels, classes: 2, validation: nil, options: options,
                                       progress: nil)
        }
    }
}
