import Foundation
import MLToolCore

/// Per-class precision, recall, F1 and support.
public struct ClassMetrics: Codable, Equatable, Sendable {
    public var label: String
    public var precision: Double
    public var recall: Double
    public var f1: Double
    public var support: Int
}

/// Averages of the per-class metrics.
public struct AveragedMetrics: Codable, Equatable, Sendable {
    public var precision: Double
    public var recall: Double
    public var f1: Double
}

/// Every metric of one model on one set of items. JSON keys are stable (they are part of `--json` output).
public struct EvaluationReport: Codable, Equatable, Sendable {
    public var count: Int
    public var accuracy: Double
    /// Top-K accuracy for K = `topK`.
    public var topK: Int
    public var topKAccuracy: Double
    public var logLoss: Double
    public var perClass: [ClassMetrics]
    public var macro: AveragedMetrics
    public var weighted: AveragedMetrics
    /// confusion[true][predicted]
    public var confusion: [[Int]]
    /// ROC AUC of class 1's probability, for two classes only.
    public var rocAUC: Double?
    /// Accuracy by text length, for text models (`Metrics.accuracyByLength`).
    public var byLength: [LengthAccuracy]? = nil
}

/// Classification metrics, defined as scikit-learn defines them (zero_division = 0; log-loss clips probabilities to
/// [ε, 1−ε] with ε the float64 machine epsilon and renormalises rows; ROC AUC with tied scores averaged).
public enum Metrics {
    /// Evaluates `probabilities` (n × k row-major) against `truth` (class indices).
    public static func evaluate(truth: [Int], probabilities: [Float], labels: [String], topK: Int = 5)
        -> EvaluationReport {
        let n = truth.count, k = labels.count
        precondition(probabilities.count == n * k, "Metrics.evaluate: \(probabilities.count) values for \(n)×\(k)")
        var confusion = [[Int]](repeating: [Int](repeating: 0, count: k), count: k)
        var correct = 0, topKCorrect = 0
        var logLoss = 0.0
        let kk = min(max(topK, 1), k)
        for i in 0..<n {
            let row = Array(probabilities[(i * k)..<((i + 1) * k)])
            let pred = argmax(row)
            confusion[truth[i]][pred] += 1
            if pred == truth[i] { correct += 1 }
            let better = row.enumerated().filter { $0.element > row[truth[i]] || ($0.element == row[truth[i]] && $0.offset < truth[i]) }.count
            if better < kk { topKCorrect += 1 }
            let eps = Double.ulpOfOne
            let clipped = row.map { min(max(Double($0), eps), 1 - eps) }
            let sum = clipped.reduce(0, +)
            logLoss -= Foundation.log(clipped[truth[i]] / sum)
        }
        var perClass = [ClassMetrics]()
        for c in 0..<k {
            let tp = confusion[c][c]
            let predicted = (0..<k).reduce(0) { $0 + confusion[$1][c] }
            let support = confusion[c].reduce(0, +)
            let p = predicted > 0 ? Double(tp) / Double(predicted) : 0
            let r = support > 0 ? Double(tp) / Double(support) : 0
            let f = p + r > 0 ? 2 * p * r / (p + r) : 0
            perClass.append(ClassMetrics(label: labels[c], precision: p, recall: r, f1: f, support: support))
        }
        // scikit-learn's macro average runs over the labels present in truth or predictions.
        let present = (0..<k).filter { c in perClass[c].support > 0 || (0..<k).contains { confusion[$0][c] > 0 } }
        func average(_ weights: (Int) -> Double) -> AveragedMetrics {
            let total = present.reduce(0.0) { $0 + weights($1) }
            guard total > 0 else { return AveragedMetrics(precision: 0, recall: 0, f1: 0) }
            func avg(_ f: (ClassMetrics) -> Double) -> Double {
                present.reduce(0.0) { $0 + weights($1) * f(perClass[$1]) } / total
            }
            return AveragedMetrics(precision: avg { $0.precision }, recall: avg { $0.recall }, f1: avg { $0.f1 })
        }
        var auc: Double?
        if k == 2 {
            auc = rocAUC(truth: truth, scores: (0..<n).map { Double(probabilities[$0 * 2 + 1]) })
        }
        return EvaluationReport(
            count: n, accuracy: n > 0 ? Double(correct) / Double(n) : 0, topK: kk,
            topKAccuracy: n > 0 ? Double(topKCorrect) / Double(n) : 0, logLoss: n > 0 ? logLoss / Double(n) : 0,
            perClass: perClass, macro: average { _ in 1 }, weighted: average { Double(perClass[$0].support) },
            confusion: confusion, rocAUC: auc)
    }

    /// Area under the ROC curve for binary `truth` (1 = positive), with tied scores given their average rank.
    public static func rocAUC(truth: [Int], scores: [Double]) -> Double? {
        let positives = truth.filter { $0 == 1 }.count, negatives = truth.count - positives
        guard positives > 0, negatives > 0 else { return nil }
        let order = scores.indices.sorted { scores[$0] < scores[$1] }
        var ranks = [Double](repeating: 0, count: scores.count)
        var i = 0
        while i < order.count {
            var j = i
            while j + 1 < order.count && scores[order[j + 1]] == scores[order[i]] { j += 1 }
            let mid = Double(i + j) / 2 + 1
            for t in i...j { ranks[order[t]] = mid }
            i = j + 1
        }
        let rankSum = truth.indices.filter { truth[$0] == 1 }.reduce(0.0) { $0 + ranks[$1] }
        let u = rankSum - Double(positives) * Double(positives + 1) / 2
        return u / (Double(positives) * Double(negatives))
    }

    /// Index of the largest value (the first on ties).
    public static func argmax(_ row: [Float]) -> Int {
        var best = 0
        for i in row.indices where row[i] > row[best] { best = i }
        return best
    }
}
