import Foundation

/// Two models' predictions on the same items: what `mltool eval A B` and the quantization gate report.
public struct ModelComparison: Codable, Equatable, Sendable {
    /// Fraction of items where both models' top-1 classes agree.
    public var agreement: Double
    /// Mean over items of KL(A ‖ B) between the probability vectors, in nats.
    public var meanKL: Double
    /// Indices of the items where the top-1 classes differ.
    public var disagreements: [Int]

    /// Compares `a` and `b`, both n × k row-major probabilities.
    public static func compare(_ a: [Float], _ b: [Float], classes k: Int) -> ModelComparison {
        precondition(a.count == b.count && k > 0 && a.count % k == 0, "ModelComparison: mismatched shapes")
        let n = a.count / k
        var agree = 0
        var kl = 0.0
        var differ = [Int]()
        for i in 0..<n {
            let ra = Array(a[(i * k)..<((i + 1) * k)]), rb = Array(b[(i * k)..<((i + 1) * k)])
            if Metrics.argmax(ra) == Metrics.argmax(rb) { agree += 1 } else { differ.append(i) }
            for c in 0..<k where ra[c] > 0 {
                kl += Double(ra[c]) * Foundation.log(Double(ra[c]) / max(Double(rb[c]), 1e-30))
            }
        }
        return ModelComparison(agreement: n > 0 ? Double(agree) / Double(n) : 1, meanKL: n > 0 ? kl / Double(n) : 0,
                               disagreements: differ)
    }
}
