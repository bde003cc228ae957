import Foundation

/// The mean softmax cross-entropy of logits (rows × classes, row-major) against integer labels, and its gradient
/// with respect to the logits: (softmax(z) − onehot(y)) / rows. Each row's softmax is taken after subtracting its
/// maximum. Generic: the same loop is the kernel (Float) and its reference (Double).
public enum SoftmaxCrossEntropy {
    public static func lossAndGradient<T: BinaryFloatingPoint>(logits: [T], labels: [Int], classes: Int) throws
        -> (loss: Double, gradient: [T]) {
        guard classes > 0, logits.count == labels.count * classes else {
            throw TrainError.shapeMismatch(what: "softmax cross-entropy logits", expected: "\(labels.count) × \(classes)",
                                           actual: "\(logits.count) elements")
        }
        var gradient = logits, loss = 0.0
        let rows = labels.count
        for (r, label) in labels.enumerated() {
            guard (0..<classes).contains(label) else {
                throw TrainError.labelOutOfRange(what: "softmax cross-entropy", row: r, label: label, classes: classes)
            }
            let row = logits[(r * classes)..<((r + 1) * classes)].map { Double($0) }
            let top = row.max() ?? 0
            let exps = row.map { exp($0 - top) }
            let total = exps.reduce(0, +)
            loss -= (row[label] - top) - log(total)
            for k in 0..<classes {
                gradient[r * classes + k] = T((exps[k] / total - (k == label ? 1 : 0)) / Double(rows))
            }
        }
        return (loss / Double(rows), gradient)
    }
}
