/// One wrong top-1 prediction.
public struct Misprediction: Equatable, Sendable {
    /// The item's index.
    public var item: Int
    /// The predicted (wrong) class.
    public var predicted: Int
    /// The probability given to `predicted`.
    public var probability: Float
}

extension Metrics {
    /// The `limit` wrong predictions with the highest predicted probability, highest first (ties by item index).
    /// `probabilities` is n × `classes` row-major.
    public static func confidentMistakes(truth: [Int], probabilities: [Float], classes k: Int, limit: Int)
        -> [Misprediction] {
        precondition(k > 0 && probabilities.count == truth.count * k, "confidentMistakes: mismatched shapes")
        var wrong = [Misprediction]()
        for i in truth.indices {
            let row = Array(probabilities[(i * k)..<((i + 1) * k)])
            let p = argmax(row)
            if p != truth[i] { wrong.append(Misprediction(item: i, predicted: p, probability: row[p])) }
        }
        wrong.sort { $0.probability != $1.probability ? $0.probability > $1.probability : $0.item < $1.item }
        return Array(wrong.prefix(max(0, limit)))
    }
}
