import Foundation

extension EvaluationReport {
    /// The human-readable table `mltool eval` prints.
    public func text(title: String) -> String {
        var s = "\(title): \(count) items\n"
        s += String(format: "  accuracy      %.4f\n  top-%d         %.4f\n  log-loss      %.4f\n", accuracy, topK,
                    topKAccuracy, logLoss)
        if let auc = rocAUC { s += String(format: "  ROC AUC       %.4f\n", auc) }
        if let buckets = byLength {
            s += "\n  length (characters)     items  accuracy\n"
            for (b, name) in zip(buckets, LengthAccuracy.names(buckets)) {
                s += "  " + name.padding(toLength: 20, withPad: " ", startingAt: 0) + String(format: "  %8d  ", b.count)
                    + (b.count > 0 ? String(format: "%8.4f\n", b.accuracy) : "       -\n")
            }
        }
        let width = max(12, perClass.map { $0.label.count }.max() ?? 0)
        s += "\n  " + "class".padding(toLength: width, withPad: " ", startingAt: 0) + "  precision  recall     f1  support\n"
        func row(_ name: String, _ p: Double, _ r: Double, _ f: Double, _ n: Int) -> String {
            "  " + name.padding(toLength: width, withPad: " ", startingAt: 0)
                + String(format: "  %9.4f  %6.4f  %6.4f  %7d\n", p, r, f, n)
        }
        for c in perClass { s += row(c.label, c.precision, c.recall, c.f1, c.support) }
        s += row("macro avg", macro.precision, macro.recall, macro.f1, count)
        s += row("weighted avg", weighted.precision, weighted.recall, weighted.f1, count)
        if confusion.count <= 20 {
            s += "\n  confusion matrix (rows: true, columns: predicted)\n"
            let w = max(5, String(confusion.flatMap { $0 }.max() ?? 0).count + 1)
            for (i, r) in confusion.enumerated() {
                s += "  " + String(perClass[i].label.prefix(width)).padding(toLength: width, withPad: " ", startingAt: 0)
                s += r.map { String(repeating: " ", count: max(0, w - String($0).count)) + String($0) }.joined() + "\n"
            }
        }
        return s
    }
}
