import Foundation
import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolTrain

@Suite struct LogisticRegressionOracleTests {
    /// Our fit against scikit-learn's LogisticRegression(C, lbfgs, tol=1e-12) on the committed fixture.
    @Test(arguments: ["plain", "balanced", "weighted"])
    func matchesScikitLearn(caseName: String) throws {
        let f = try #require(LogRegFixture.shared, "Tests/Fixtures/train/logreg.json is missing or unreadable")
        let c = try #require(f.cases.first { $0.name == caseName })
        let options = LogisticRegressionOptions(l2: .fixed(c.l2), maxIterations: 5000, tolerance: 1e-7,
                                                lossTolerance: 0, balanceClasses: c.balanced)
        let model = try LogisticRegression.fit(
            x: f.x, rows: f.rows, cols: f.cols, labels: f.labels, classes: f.classes, validation: nil,
            options: options, sampleWeights: c.weighted ? f.sampleWeights : nil, progress: nil)
        let meanBias = model.bias.reduce(0, +) / Float(model.bias.count)
        // Float32 logits bound the attainable gradient (~1e-7); with the weakest L2 (C = 10) that moves weights ~1e-4.
        assertClose(model.weights, c.weights, rtol: 1e-4, atol: 1e-4, "\(caseName) weights")
        assertClose(model.bias.map { $0 - meanBias }, c.bias, rtol: 1e-4, atol: 1e-4, "\(caseName) bias")
        assertClose(try model.probabilities(f.x, rows: f.rows), c.probabilities, atol: 1e-5,
                    "\(caseName) probabilities")
        let final = try #require(model.history.last)
        #expect(abs(final.loss - c.objective) <= 1e-6 * c.objective, "objective \(final.loss) vs \(c.objective)")
        #expect(model.chosenL2 == c.l2)
    }

    @Test func standardizerMatchesScikitLearn() throws {
        let f = try #require(LogRegFixture.shared)
        let s = try Standardizer.fit(x: f.raw, rows: f.rows, cols: f.cols)
        assertClose(s.mean, f.scalerMean, rtol: 1e-6, atol: 1e-6, "mean")
        assertClose(s.std, f.scalerScale, rtol: 1e-6, atol: 0, "std")
    }
}

@Suite struct LogisticRegressionTests {
    /// Analytic gradient against central finite differences, and the loss against a plain Double reference.
    @Test func gradientMatchesFiniteDifferences() throws {
        let n = 40, d = 5, k = 3
        let data = blobs(rows: n, cols: d, classes: k, spread: 1, seed: 7)
        var rng = SplitMix64(seed: 99)
        let theta = (0..<(d * k + k)).map { _ in gaussian(&rng) * 0.5 }
        let rowWeights = (0..<n).map { Double($0 % 3 + 1) }
        let total = rowWeights.reduce(0, +)
        let l2 = 0.3
        try data.x.withUnsafeBufferPointer { xp in
            let objective = SoftmaxObjective(
                matrix: DenseRows(base: xp.baseAddress!, rows: n, cols: d), labels: data.labels.map(Int32.init),
                rowWeights: rowWeights.map { $0 / total }, classes: k, l2: l2)
            var g = [Float](repeating: 0, count: theta.count)
            let loss = theta.withUnsafeBufferPointer { t in
                g.withUnsafeMutableBufferPointer { objective.evaluate(t.baseAddress!, gradient: $0.baseAddress!) }
            }.loss
            func f(_ t: [Float]) -> Double {
                t.withUnsafeBufferPointer { objective.evaluate($0.baseAddress!, gradient: nil).loss }
            }
            // Plain reference: Σ vᵢ CEᵢ / Σ v + l2/2 ‖W‖², all in Double.
            var reference = 0.0
            for i in 0..<n {
                var z = [Double](repeating: 0, count: k)
                for c in 0..<k {
                    z[c] = Double(theta[d * k + c])
                    for j in 0..<d { z[c] += Double(data.x[i * d + j]) * Double(theta[j * k + c]) }
                }
                let m = try #require(z.max())
                let lse = m + log(z.map { exp($0 - m) }.reduce(0, +))
                reference += rowWeights[i] / total * (lse - z[data.labels[i]])
            }
            reference += 0.5 * l2 * theta[0..<(d * k)].map { Double($0) * Double($0) }.reduce(0, +)
            #expect(abs(loss - reference) <= 1e-6 * reference, "loss \(loss) vs reference \(reference)")
            let h: Float = 1e-2
            for i in 0..<theta.count {
                var up = theta, down = theta
                up[i] += h; down[i] -= h
                let fd = (f(up) - f(down)) / Double(up[i] - down[i])
                #expect(abs(fd - Double(g[i])) <= 2e-4, "θ[\(i)]: analytic \(g[i]), finite difference \(fd)")
            }
        }
    }

    /// The fused dense path (row groups in parallel, cache-sized blocks, partial gradients added in group order)
    /// against a plain Double reference, on enough rows for several groups and blocks, with and without row weights.
    @Test(arguments: [false, true])
    func fusedDenseObjectiveMatchesPlainReference(weighted: Bool) throws {
        let n = 1100, d = 700, k = 4
        let data = blobs(rows: n, cols: d, classes: k, spread: 3, seed: 11)
        var rng = SplitMix64(seed: 5)
        let theta = (0..<(d * k + k)).map { _ in gaussian(&rng) * 0.05 }
        let raw = (0..<n).map { Double($0 % 5 + 1) }
        let rowWeights: [Double]? = weighted ? raw.map { $0 / raw.reduce(0, +) } : nil
        let l2 = 0.01
        // Plain reference, all in Double.
        var refLoss = 0.0, refCorrect = 0
        var refGrad = [Double](repeating: 0, count: d * k + k)
        for i in 0..<n {
            var z = [Double](repeating: 0, count: k)
            for c in 0..<k {
                z[c] = Double(theta[d * k + c])
                for j in 0..<d { z[c] += Double(data.x[i * d + j]) * Double(theta[j * k + c]) }
            }
            let m = try #require(z.max())
            let lse = m + log(z.map { exp($0 - m) }.reduce(0, +))
            let w = rowWeights?[i] ?? 1 / Double(n), y = data.labels[i]
            refLoss += w * (lse - z[y])
            if z.firstIndex(of: m) == y { refCorrect += 1 }
            for c in 0..<k {
                let g = w * (exp(z[c] - lse) - (c == y ? 1 : 0))
                for j in 0..<d { refGrad[j * k + c] += g * Double(data.x[i * d + j]) }
                refGrad[d * k + c] += g
            }
        }
        for i in 0..<(d * k) {
            refLoss += 0.5 * l2 * Double(theta[i]) * Double(theta[i])
            refGrad[i] += l2 * Double(theta[i])
        }
        data.x.withUnsafeBufferPointer { xp in
            let objective = SoftmaxObjective(
                matrix: DenseRows(base: xp.baseAddress!, rows: n, cols: d), labels: data.labels.map(Int32.init),
                rowWeights: rowWeights, classes: k, l2: l2)
            var g = [Float](repeating: .nan, count: theta.count)
            let e = theta.withUnsafeBufferPointer { t in
                g.withUnsafeMutableBufferPointer { objective.evaluate(t.baseAddress!, gradient: $0.baseAddress!) }
            }
            let noGradient = theta.withUnsafeBufferPointer { objective.evaluate($0.baseAddress!, gradient: nil) }
            #expect(abs(e.loss - refLoss) <= 1e-5 * refLoss, "loss \(e.loss) vs reference \(refLoss)")
            #expect(e.correct == refCorrect && noGradient.correct == refCorrect)
            #expect(e.loss == noGradient.loss, "the loss does not depend on whether the gradient is wanted")
            let scale = refGrad.map(abs).max() ?? 1
            assertClose(g, refGrad, atol: 1e-4 * scale, "fused gradient vs reference")
        }
    }

    @Test func twoFitsAreBitIdentical() throws {
        let data = blobs(rows: 600, cols: 32, classes: 5, spread: 0.4, seed: 3)
        let valid = blobs(rows: 100, cols: 32, classes: 5, spread: 0.4, seed: 4)
        let options = LogisticRegressionOptions(l2: .auto, maxIterations: 100)
        func fit() throws -> LogisticRegressionModel {
            try LogisticRegression.fit(x: data.x, rows: 600, cols: 32, labels: data.labels, classes: 5,
                                       validation: (valid.x, 100, valid.labels), options: options, progress: nil)
        }
        let a = try fit(), b = try fit()
        #expect(a.weights.map(\.bitPattern) == b.weights.map(\.bitPattern))
        #expect(a.bias.map(\.bitPattern) == b.bias.map(\.bitPattern))
        #expect(a.chosenL2 == b.chosenL2)
        #expect(a.history.map(\.loss) == b.history.map(\.loss))
    }

    /// With equal class counts, "balanced" weights are all 1: the fit must be bit-identical to the unweighted one.
    @Test func balancedOnBalancedDataChangesNothing() throws {
        let data = blobs(rows: 300, cols: 8, classes: 3, spread: 0.7, seed: 11)
        func fit(_ balance: Bool) throws -> LogisticRegressionModel {
            try LogisticRegression.fit(
                x: data.x, rows: 300, cols: 8, labels: data.labels, classes: 3, validation: nil,
                options: LogisticRegressionOptions(l2: .fixed(1e-2), balanceClasses: balance), progress: nil)
        }
        #expect(try fit(true).weights == fit(false).weights)
    }

    /// Balanced class weights raise the recall of a rare class.
    @Test func balancedRaisesRareClassRecall() throws {
        let full = blobs(rows: 900, cols: 4, classes: 3, spread: 0.6, seed: 5)
        // Keep one row of class 2 in ten.
        var x: [Float] = [], labels: [Int] = []
        var seen = 0
        for r in 0..<900 {
            if full.labels[r] == 2 { seen += 1; if seen % 10 != 0 { continue } }
            x += full.x[(r * 4)..<(r * 4 + 4)]; labels.append(full.labels[r])
        }
        func recall(_ balance: Bool) throws -> Double {
            let m = try LogisticRegression.fit(
                x: x, rows: labels.count, cols: 4, labels: labels, classes: 3, validation: nil,
                options: LogisticRegressionOptions(l2: .fixed(1e-3), balanceClasses: balance), progress: nil)
            let p = try m.probabilities(full.x, rows: 900)
            var hit = 0, total = 0
            for r in 0..<900 where full.labels[r] == 2 {
                total += 1
                let row = Array(p[(r * 3)..<(r * 3 + 3)])
                if row.firstIndex(of: row.max()!) == 2 { hit += 1 }
            }
            return Double(hit) / Double(total)
        }
        let plain = try recall(false), balanced = try recall(true)
        #expect(balanced > plain + 0.05, "rare-class recall: balanced \(balanced), plain \(plain)")
    }

    /// Training on standardised features then folding gives the same probabilities on raw features.
    @Test func foldedStandardizationIsEquivalent() throws {
        let f = try #require(LogRegFixture.shared)
        let scaler = try Standardizer.fit(x: f.raw, rows: f.rows, cols: f.cols)
        let z = try scaler.applied(f.raw, rows: f.rows)
        let model = try LogisticRegression.fit(
            x: z, rows: f.rows, cols: f.cols, labels: f.labels, classes: f.classes, validation: nil,
            options: LogisticRegressionOptions(l2: .fixed(1e-3)), progress: nil)
        let folded = try scaler.fold(into: model)
        let expected = try model.probabilities(z, rows: f.rows).map(Double.init)
        assertClose(try folded.probabilities(f.raw, rows: f.rows), expected, atol: 2e-5, "folded probabilities")
        #expect(folded.weights != model.weights)
    }

    /// Two strongly correlated features whose difference carries the class: heavy L2 shrinks towards the class-mean
    /// direction, which is useless here, so `.auto` must pick a weak L2 and beat the strongest grid value.
    @Test func autoL2AvoidsOverRegularisation() throws {
        func make(_ rows: Int, seed: UInt64) -> (x: [Float], labels: [Int]) {
            var rng = SplitMix64(seed: seed)
            var x: [Float] = [], labels: [Int] = []
            for r in 0..<rows {
                let y = r % 2, shared = gaussian(&rng) * 10
                let a = shared + (y == 0 ? -0.5 : 0.5) + gaussian(&rng) * 0.1
                x += [a, shared + gaussian(&rng) * 0.1, gaussian(&rng)]
                labels.append(y)
            }
            return (x, labels)
        }
        let train = make(400, seed: 1), valid = make(200, seed: 2)
        let scaler = try Standardizer.fit(x: train.x, rows: 400, cols: 3)
        let zt = try scaler.applied(train.x, rows: 400), zv = try scaler.applied(valid.x, rows: 200)
        var records: [IterationRecord] = []
        let auto = try LogisticRegression.fit(
            x: zt, rows: 400, cols: 3, labels: train.labels, classes: 2, validation: (zv, 200, valid.labels),
            options: LogisticRegressionOptions(l2: .auto), progress: { records.append($0) })
        let strong = try LogisticRegression.fit(
            x: zt, rows: 400, cols: 3, labels: train.labels, classes: 2, validation: (zv, 200, valid.labels),
            options: LogisticRegressionOptions(l2: .fixed(1e-1)), progress: nil)
        #expect(auto.chosenL2 <= 1e-3, "chose \(auto.chosenL2)")
        let autoAccuracy = try #require(auto.validationAccuracy), strongAccuracy = try #require(strong.validationAccuracy)
        #expect(autoAccuracy >= 0.95 && autoAccuracy > strongAccuracy + 0.1, "\(autoAccuracy) vs \(strongAccuracy)")
        #expect(Set(records.map(\.l2)) == Set(LogisticRegressionOptions().l2Grid))
        #expect(records == auto.history)
    }

    /// Early stopping returns the iterate with the best validation log-loss.
    @Test func earlyStoppingKeepsBestValidationLoss() throws {
        // Few rows, many noisy features, almost no L2: the fit overfits and validation loss turns up.
        let train = blobs(rows: 60, cols: 40, classes: 3, spread: 0.25, seed: 21)
        let valid = blobs(rows: 300, cols: 40, classes: 3, spread: 0.25, seed: 22)
        let model = try LogisticRegression.fit(
            x: train.x, rows: 60, cols: 40, labels: train.labels, classes: 3,
            validation: (valid.x, 300, valid.labels),
            options: LogisticRegressionOptions(l2: .fixed(1e-6), maxIterations: 1000, earlyStoppingPatience: 5),
            progress: nil)
        #expect(model.stopReason == .earlyStopping)
        let best = try #require(model.history.compactMap(\.validationLoss).min())
        #expect(model.validationLoss == best)
        #expect(model.history.last?.validationLoss ?? 0 > best)
    }

    @Test func badInputsThrowExactErrors() throws {
        let x: [Float] = [0, 1, 2, 3, 4, 5]
        let options = LogisticRegressionOptions(l2: .fixed(1))
        func fit(_ x: [Float], rows: Int = 3, labels: [Int] = [0, 1, 0], classes: Int = 2) throws {
            _ = try LogisticRegression.fit(x: x, rows: rows, cols: 2, labels: labels, classes: classes,
                                           validation: nil, options: options, progress: nil)
        }
        #expect(throws: TrainError.shapeMismatch(what: "training features",
                                                 expected: "8 values (4 rows × 2 columns)", actual: "6 values")) {
            try fit(x, rows: 4)
        }
        #expect(throws: TrainError.labelOutOfRange(what: "training labels", row: 2, label: 5, classes: 2)) {
            try fit(x, labels: [0, 1, 5])
        }
        #expect(throws: TrainError.emptyClass(what: "training labels", classIndex: 2)) {
            try fit(x, classes: 3)
        }
        #expect(throws: TrainError.nonFiniteValue(what: "training features", row: 1, column: 1, value: "nan")) {
            try fit([0, 1, 2, .nan, 4, 5])
        }
        #expect(TrainError.labelOutOfRange(what: "training labels", row: 2, label: 5, classes: 2).description
                == "training labels: row 2: label 5, expected 0..<2")
    }
}

@Suite struct LBFGSTests {
    /// Pairs (s, y = A·s) of a diagonal quadratic, the last s, y and all pairs.
    func filledMemory(p: Int, pairs: Int) -> (LBFGSMemory, [[Float]], [[Float]]) {
        var rng = SplitMix64(seed: 17)
        let diagonal = (0..<p).map { _ in 0.5 + rng.nextUnit() * 4 }
        var memory = LBFGSMemory(capacity: 5)
        var ss: [[Float]] = [], ys: [[Float]] = []
        for _ in 0..<pairs {
            let s = (0..<p).map { _ in gaussian(&rng) }
            let y = zip(s, diagonal).map { $0 * $1 }
            let kept = memory.push(s: s, y: y)
            #expect(kept)
            ss.append(s); ys.append(y)
        }
        return (memory, ss, ys)
    }

    /// The secant condition: the inverse-Hessian estimate maps the newest y to the newest s, so direction(y) = −s.
    @Test func directionSatisfiesSecantCondition() throws {
        var (memory, ss, ys) = filledMemory(p: 1000, pairs: 7)
        let lastS = try #require(ss.last), lastY = try #require(ys.last)
        assertClose(memory.direction(lastY), lastS.map { -Double($0) }, rtol: 1e-3, atol: 1e-4, "H·y vs s")
        // A pair with negative curvature is refused.
        let keptNegative = memory.push(s: lastS, y: lastS.map { -$0 })
        #expect(!keptNegative)
    }

    /// The fused recursion against the textbook two-loop in Double (Nocedal & Wright, algorithm 7.4).
    @Test func directionMatchesPlainTwoLoop() {
        let p = 1003
        let (memory, allS, allY) = filledMemory(p: p, pairs: 7)
        let s = allS.suffix(5).map { $0.map(Double.init) }, y = allY.suffix(5).map { $0.map(Double.init) }
        var rng = SplitMix64(seed: 3)
        let g = (0..<p).map { _ in gaussian(&rng) }
        func dot(_ a: [Double], _ b: [Double]) -> Double { zip(a, b).map { $0 * $1 }.reduce(0, +) }
        var q = g.map(Double.init), alpha = [Double](repeating: 0, count: 5)
        for i in stride(from: 4, through: 0, by: -1) {
            alpha[i] = dot(s[i], q) / dot(y[i], s[i])
            for j in 0..<p { q[j] -= alpha[i] * y[i][j] }
        }
        let gamma = dot(s[4], y[4]) / dot(y[4], y[4])
        var r = q.map { $0 * gamma }
        for i in 0..<5 {
            let beta = dot(y[i], r) / dot(y[i], s[i])
            for j in 0..<p { r[j] += s[i][j] * (alpha[i] - beta) }
        }
        assertClose(memory.direction(g), r.map { -$0 }, rtol: 1e-4, atol: 1e-5, "fused vs plain two-loop")
    }
}

@Suite struct WarmStartTests {
    /// The refit of `mltool train`: from the fit on a subset of the rows, L-BFGS reaches the same optimum as from
    /// zero, in fewer iterations.
    @Test func warmStartReachesTheSameOptimumSooner() throws {
        let data = blobs(rows: 500, cols: 24, classes: 4, spread: 0.5, seed: 12)
        let options = LogisticRegressionOptions(l2: .fixed(1e-2), maxIterations: 2000, tolerance: 1e-6,
                                                lossTolerance: 0)
        let subset = try LogisticRegression.fit(x: Array(data.x[..<(450 * 24)]), rows: 450, cols: 24,
                                                labels: Array(data.labels[..<450]), classes: 4, validation: nil,
                                                options: options, progress: nil)
        let cold = try LogisticRegression.fit(x: data.x, rows: 500, cols: 24, labels: data.labels, classes: 4,
                                              validation: nil, options: options, progress: nil)
        let warm = try LogisticRegression.fit(x: data.x, rows: 500, cols: 24, labels: data.labels, classes: 4,
                                              validation: nil, options: options, warmStart: subset, progress: nil)
        assertClose(warm.weights, cold.weights.map(Double.init), atol: 2e-3, "warm vs cold weights")
        #expect(warm.iterations < cold.iterations, "warm \(warm.iterations), cold \(cold.iterations) iterations")
        #expect(warm.history.first?.loss ?? .infinity < cold.history.first?.loss ?? 0)
    }

    @Test func warmStartOfTheWrongShapeThrows() throws {
        let data = blobs(rows: 40, cols: 6, classes: 3, spread: 1, seed: 2)
        let wrong = LogisticRegressionModel(weights: [Float](repeating: 0, count: 5 * 3), bias: [0, 0, 0],
                                            classes: 3, features: 5, chosenL2: 0)
        #expect(throws: TrainError.shapeMismatch(what: "warm start", expected: "6×3 finite weights",
                                                 actual: "5×3, 15 weights")) {
            try LogisticRegression.fit(x: data.x, rows: 40, cols: 6, labels: data.labels, classes: 3,
                                       validation: nil, options: LogisticRegressionOptions(l2: .fixed(0.1)),
                                       warmStart: wrong, progress: nil)
        }
    }
}
