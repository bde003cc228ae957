/// Word-tagging scores: token accuracy, per-tag precision, recall and F1 (scikit-learn's definitions on the tokens,
/// zero_division = 0), the confusion matrix and, for entity tags, entity scores (`EntityMetrics`). JSON keys are
/// stable.
public struct TaggingReport: Codable, Equatable, Sendable {
    public var sentences: Int
    public var tokens: Int
    public var accuracy: Double
    /// The tags in confusion-matrix order: the model's, then tags only the truth uses (sorted).
    public var labels: [String]
    public var perTag: [ClassMetrics]
    public var macro: AveragedMetrics
    public var weighted: AveragedMetrics
    /// confusion[true][predicted], in `labels` order.
    public var confusion: [[Int]]
    /// Entity scores when the tags are BIO or BIOES.
    public var entities: EntityReport?

    /// Scores `predicted` against `truth` (same sentences and lengths); `labels` are the model's tags and
    /// `scheme` its entity scheme ("bio", "bioes" or nil).
    public static func evaluate(truth: [[String]], predicted: [[String]], labels: [String],
                                scheme: String?) -> TaggingReport {
        var all = labels
        var index = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let extra = Set(truth.joined()).union(predicted.joined()).subtracting(labels).sorted()
        for tag in extra { index[tag] = all.count; all.append(tag) }
        let k = all.count
        var confusion = [[Int]](repeating: [Int](repeating: 0, count: k), count: k)
        var n = 0, correct = 0
        for (t, p) in zip(truth, predicted) {
            for (a, b) in zip(t, p) {
                let i = index[a] ?? 0, j = index[b] ?? 0
                confusion[i][j] += 1
                n += 1
                if i == j { correct += 1 }
            }
        }
        var perTag: [ClassMetrics] = []
        for c in 0..<k {
            let tp = confusion[c][c]
            let predictedCount = (0..<k).reduce(0) { $0 + confusion[$1][c] }
            let support = confusion[c].reduce(0, +)
            let (p, r, f) = EntityMetrics.prf(tp: tp, predicted: predictedCount, actual: support)
            perTag.append(ClassMetrics(label: all[c], precision: p, recall: r, f1: f, support: support))
        }
        // scikit-learn's averages run over the tags present in truth or predictions.
        let present = (0..<k).filter { c in perTag[c].support > 0 || (0..<k).contains { confusion[$0][c] > 0 } }
        func average(_ weight: (Int) -> Double) -> AveragedMetrics {
            let total = present.reduce(0.0) { $0 + weight($1) }
            guard total > 0 else { return AveragedMetrics(precision: 0, recall: 0, f1: 0) }
            func avg(_ f: (ClassMetrics) -> Double) -> Double {
                present.reduce(0.0) { $0 + weight($1) * f(perTag[$1]) } / total
            }
            return AveragedMetrics(precision: avg { $0.precision }, recall: avg { $0.recall }, f1: avg { $0.f1 })
        }
        return TaggingReport(
            sentences: truth.count, tokens: n, accuracy: n > 0 ? Double(correct) / Double(n) : 0, labels: all,
            perTag: perTag, macro: average { _ in 1 }, weighted: average { Double(perTag[$0].support) },
            confusion: confusion,
            entities: scheme == nil ? nil : EntityMetrics.evaluate(truth: truth, predicted: predicted))
    }
}
