/// Accuracy of the items in one length bucket: those longer than the previous bucket's limit and at most
/// `maxCharacters` long (nil: longer than every limit).
public struct LengthAccuracy: Codable, Equatable, Sendable {
    public var maxCharacters: Int?
    public var count: Int
    public var correct: Int
    /// correct / count (0 for an empty bucket).
    public var accuracy: Double

    public init(maxCharacters: Int?, count: Int, correct: Int) {
        self.maxCharacters = maxCharacters; self.count = count; self.correct = correct
        accuracy = count > 0 ? Double(correct) / Double(count) : 0
    }
}

extension LengthAccuracy {
    /// Names for consecutive buckets, as reports print them: "≤ 20", "21–50", "> 50".
    public static func names(_ buckets: [LengthAccuracy]) -> [String] {
        var previous = 0
        return buckets.map { b in
            defer { previous = b.maxCharacters ?? previous }
            return b.maxCharacters.map { previous == 0 ? "≤ \($0)" : "\(previous + 1)–\($0)" } ?? "> \(previous)"
        }
    }
}

extension Metrics {
    /// The length buckets text evaluations report: at most 20 characters (a few words: a search query, a
    /// synopsis), 21–50, longer.
    public static let lengthLimits = [20, 50]

    /// Accuracy by length: item i has `lengths[i]` characters (Unicode scalars, as Python's `len` counts them), class
    /// `truth[i]`, and the prediction argmax of its row of `probabilities` (n × classes, as `evaluate` takes them).
    /// One bucket per limit (ascending) and one for longer items.
    public static func accuracyByLength(lengths: [Int], truth: [Int], probabilities: [Float], classes: Int,
                                        limits: [Int] = lengthLimits) -> [LengthAccuracy] {
        let n = truth.count
        precondition(lengths.count == n && probabilities.count == n * classes && classes > 0,
                     "Metrics.accuracyByLength: \(lengths.count) lengths, \(n) labels, \(probabilities.count) values")
        let sorted = limits.sorted()
        var count = [Int](repeating: 0, count: sorted.count + 1), correct = count
        for i in 0..<n {
            let bucket = sorted.firstIndex { lengths[i] <= $0 } ?? sorted.count
            count[bucket] += 1
            if argmax(Array(probabilities[(i * classes)..<((i + 1) * classes)])) == truth[i] { correct[bucket] += 1 }
        }
        return count.indices.map { b in
            LengthAccuracy(maxCharacters: b < sorted.count ? sorted[b] : nil, count: count[b], correct: correct[b])
        }
    }
}
