import Foundation

/// Regression metrics, as scikit-learn defines them: root mean squared error, mean absolute error and R²
/// (1 − SS_res / SS_tot; 0 when the truth is constant and the predictions are not exact, 1 when they are).
public struct RegressionMetrics: Codable, Equatable, Sendable {
    public var count: Int
    public var rmse: Double
    public var mae: Double
    public var r2: Double

    public init(truth: [Double], predictions: [Double]) {
        precondition(truth.count == predictions.count, "RegressionMetrics: \(truth.count) truths, \(predictions.count) predictions")
        let n = Double(max(truth.count, 1))
        var se = 0.0, ae = 0.0
        for (t, p) in zip(truth, predictions) { se += (t - p) * (t - p); ae += abs(t - p) }
        let mean = truth.reduce(0, +) / n
        let total = truth.reduce(0.0) { $0 + ($1 - mean) * ($1 - mean) }
        count = truth.count
        rmse = (se / n).squareRoot(); mae = ae / n
        r2 = total == 0 ? (se == 0 ? 1 : 0) : 1 - se / total
    }

    public func text(title: String) -> String {
        String(format: "%@\n  rows  %d\n  RMSE  %.6g\n  MAE   %.6g\n  R²    %.6f", title, count, rmse, mae, r2)
    }
}
