import Foundation
import Testing
@testable import MLToolEval

/// scikit-learn is the oracle: Tests/Fixtures/eval/make_fixtures.py wrote its metrics on random predictions.
@Suite struct MetricsOracleTests {
    struct Case: Decodable {
        let name: String, classes: Int, truth: [Int], probabilities: [Float]
        let accuracy: Double, top2: Double?, log_loss: Double
        let precision: [Double], recall: [Double], f1: [Double], support: [Int]
        let confusion: [[Int]], macro: [Double], weighted: [Double], roc_auc: Double?
    }

    static let cases: [Case] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fixtures/eval/sklearn_metrics.json").standardized
        guard let data = try? Data(contentsOf: url), let c = try? JSONDecoder().decode([Case].self, from: data) else {
            return []
        }
        return c
    }()

    @Test func fixturesPresent() { #expect(Self.cases.count == 3) }

    @Test(arguments: 0..<3)
    func equalsScikitLearn(index: Int) throws {
        let c = try #require(Self.cases.count > index ? Self.cases[index] : nil)
        let labels = (0..<c.classes).map { "c\($0)" }
        let r = Metrics.evaluate(truth: c.truth, probabilities: c.probabilities, labels: labels, topK: 2)
        let tol = 1e-6
        #expect(abs(r.accuracy - c.accuracy) < tol, "\(c.name) accuracy")
        if let top2 = c.top2 { #expect(abs(r.topKAccuracy - top2) < tol, "\(c.name) top-2") }
        #expect(abs(r.logLoss - c.log_loss) < tol, "\(c.name) log-loss \(r.logLoss) vs \(c.log_loss)")
        #expect(r.confusion == c.confusion)
        for k in 0..<c.classes {
            #expect(abs(r.perClass[k].precision - c.precision[k]) < tol)
            #expect(abs(r.perClass[k].recall - c.recall[k]) < tol)
            #expect(abs(r.perClass[k].f1 - c.f1[k]) < tol)
            #expect(r.perClass[k].support == c.support[k])
        }
        #expect(abs(r.macro.precision - c.macro[0]) < tol && abs(r.macro.recall - c.macro[1]) < tol
                && abs(r.macro.f1 - c.macro[2]) < tol, "\(c.name) macro \(r.macro) vs \(c.macro)")
        #expect(abs(r.weighted.precision - c.weighted[0]) < tol && abs(r.weighted.recall - c.weighted[1]) < tol
                && abs(r.weighted.f1 - c.weighted[2]) < tol, "\(c.name) weighted")
        if let auc = c.roc_auc {
            let ours = try #require(r.rocAUC)
            #expect(abs(ours - auc) < tol)
        } else {
            #expect(r.rocAUC == nil)
        }
    }
}

@Suite struct ComparisonTests {
    @Test func identicalModelsAgreeWithZeroKL() {
        let p: [Float] = [0.7, 0.2, 0.1, 0.1, 0.1, 0.8]
        let c = ModelComparison.compare(p, p, classes: 3)
        #expect(c.agreement == 1 && c.meanKL == 0 && c.disagreements.isEmpty)
    }

    @Test func disagreementAndKL() {
        let a: [Float] = [0.5, 0.5, 0.9, 0.1]
        let b: [Float] = [0.5, 0.5, 0.2, 0.8]
        let c = ModelComparison.compare(a, b, classes: 2)
        #expect(c.agreement == 0.5)
        #expect(c.disagreements == [1])
        let kl = (0.9 * log(0.9 / 0.2) + 0.1 * log(0.1 / 0.8)) / 2
        #expect(abs(c.meanKL - kl) < 1e-6)
    }
}

@Suite struct LengthAccuracyTests {
    /// Boundaries belong to the bucket they end (20 → "≤ 20", 21 and 50 → "21–50", 51 → "> 50"); a prediction is
    /// the row's argmax; empty buckets are reported with accuracy 0.
    @Test func bucketsByLimitAndArgmax() {
        // Rows for 2 classes: predicted class = index of the larger value.
        let probabilities: [Float] = [0.9, 0.1,  0.2, 0.8,  0.6, 0.4,  0.3, 0.7,  0.5, 0.5]
        let truth = [0, 0, 0, 1, 1]
        let lengths = [20, 0, 21, 50, 51]
        let b = Metrics.accuracyByLength(lengths: lengths, truth: truth, probabilities: probabilities, classes: 2)
        #expect(b == [LengthAccuracy(maxCharacters: 20, count: 2, correct: 1),
                      LengthAccuracy(maxCharacters: 50, count: 2, correct: 2),
                      LengthAccuracy(maxCharacters: nil, count: 1, correct: 0)])
        #expect(b[0].accuracy == 0.5 && b[1].accuracy == 1 && b[2].accuracy == 0)
        #expect(LengthAccuracy.names(b) == ["≤ 20", "21–50", "> 50"])
        let other = Metrics.accuracyByLength(lengths: lengths, truth: truth, probabilities: probabilities, classes: 2,
                                             limits: [100, 5])
        #expect(other.map(\.count) == [1, 4, 0] && other.map(\.maxCharacters) == [5, 100, nil] && other[2].accuracy == 0)
        #expect(LengthAccuracy.names(other) == ["≤ 5", "6–100", "> 100"])
    }
}
