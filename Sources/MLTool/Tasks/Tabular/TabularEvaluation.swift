import Foundation
import MLToolCore
import MLToolEval
import MLToolTabular

/// A tabular model on a table with its target column: scikit-learn's metrics (accuracy, macro F1, log-loss,
/// ROC AUC for two classes, confusion; RMSE, MAE, R²) and the features' importance (gain and split count).
public struct TabularEvaluation: Sendable {
    public var classification: EvaluationReport?
    public var regression: RegressionMetrics?
    /// Features by total gain, largest first: (name, gain, splits).
    public var importance: [(name: String, gain: Double, splits: Int)]
    /// A regression's true values and predictions, row by row (empty for a classifier).
    public var truth: [Double] = [], predictions: [Double] = []

    public init(ensemble: TreeEnsemble, table: RawTable) throws {
        let schema = TabularSchema(target: ensemble.target, features: ensemble.features, objective: ensemble.objective,
                                   labels: ensemble.labels)
        let truth = try schema.targets(of: table)
        let predicted = ensemble.predict(try FeatureMatrix(table: table, features: ensemble.features))
        if ensemble.objective == .regression {
            self.truth = truth.map(Double.init)
            predictions = predicted.map(Double.init)
            regression = RegressionMetrics(truth: self.truth, predictions: predictions)
        } else {
            classification = Metrics.evaluate(truth: truth.map { Int($0) }, probabilities: predicted, labels: ensemble.labels)
        }
        importance = ensemble.features.map { ($0.name, $0.gain, $0.splits) }
            .sorted { $0.gain != $1.gain ? $0.gain > $1.gain : $0.name < $1.name }
    }

    /// The report `mltool eval` prints: the metrics, then the importance table (at most `top` features).
    public func text(title: String, top: Int = 20) -> String {
        var lines = [classification?.text(title: title) ?? regression?.text(title: title) ?? title]
        // A linear model has no splits: a table of zeros would say its features do not matter.
        guard importance.contains(where: { $0.gain > 0 || $0.splits > 0 }) else { return lines.joined(separator: "\n") }
        lines.append("feature importance (gain, splits)")
        let total = importance.reduce(0.0) { $0 + $1.gain }
        for f in importance.prefix(top) {
            let name = f.name.count < 24 ? f.name.padding(toLength: 24, withPad: " ", startingAt: 0) : f.name
            lines.append("  " + name + String(format: " %12.4g %6.1f%%  %6d", f.gain, total > 0 ? 100 * f.gain / total : 0, f.splits))
        }
        if importance.count > top { lines.append("  … \(importance.count - top) more") }
        return lines.joined(separator: "\n")
    }

    /// The page `mltool eval --report` writes: `model` (read from `path`) on `source`.
    public func htmlReport(model: Model, path: String, source: String) -> TabularHTMLReport {
        let outcome: TabularHTMLReport.Outcome = classification.map { .classification($0) }
            ?? .regression(regression ?? RegressionMetrics(truth: [], predictions: []), truth: truth, predicted: predictions)
        // A linear model has no splits: no importance chart (its bars would all be zero).
        let splits = importance.contains { $0.gain > 0 || $0.splits > 0 }
        return TabularHTMLReport(model: HTMLReport.ModelInfo(path: path, model: model), dataSource: source, outcome: outcome,
                                 importance: splits ? importance.map { .init(name: $0.name, gain: $0.gain, splits: $0.splits) } : [])
    }
}
