import Foundation
import MLToolCore
import MLToolFormat

/// The `mltool eval --report` page of a tabular model: the model, headline metrics (accuracy, macro F1, log-loss and
/// ROC AUC; or RMSE, MAE and R²), feature importance (each feature's share of the total gain, with its split count),
/// then per-class scores and the confusion matrix, or predicted against true values and the residuals' histogram.
/// Self-contained (no scripts, no network); the same inputs give the same bytes.
public struct TabularHTMLReport: Sendable {
    public struct Feature: Sendable {
        public var name: String
        public var gain: Double
        public var splits: Int
        public init(name: String, gain: Double, splits: Int) { self.name = name; self.gain = gain; self.splits = splits }
    }

    /// What the model was scored on.
    public enum Outcome: Sendable {
        case classification(EvaluationReport)
        /// The metrics and each row's true value and prediction.
        case regression(RegressionMetrics, truth: [Double], predicted: [Double])
    }

    public var model: HTMLReport.ModelInfo
    public var dataSource: String
    public var outcome: Outcome
    /// Features by gain, largest first (none for a model without splits: no chart).
    public var importance: [Feature]
    /// Features shown in the importance chart (the rest are counted below it).
    public static let featureLimit = 30
    /// Points drawn in the predicted-against-true chart (every k-th row beyond it).
    public static let pointLimit = 2000

    public init(model: HTMLReport.ModelInfo, dataSource: String, outcome: Outcome, importance: [Feature]) {
        self.model = model; self.dataSource = dataSource; self.outcome = outcome; self.importance = importance
    }

    /// Writes the page atomically to `path`, refusing to replace any of `inputs`.
    public func write(to path: String, inputs: [String]) throws {
        try AtomicFile.write(Array(html().utf8), to: path, inputs: inputs)
    }

    public func html() -> String {
        let e = HTMLText.escape
        let title = model.name ?? (model.path as NSString).lastPathComponent
        var s = "<section>\n<h2>Model</h2>\n<table class=\"facts\">\n" + model.factRows(dataSource: dataSource)
        s += "</table>\n</section>\n<section>\n<h2>Headline metrics</h2>\n<div class=\"cards\">\n" + cards()
        s += "</div>\n</section>\n" + importanceSection() + outcomeSection()
        let rows: Int
        switch outcome {
        case .classification(let r): rows = r.count
        case .regression(let m, _, _): rows = m.count
        }
        let lede = "\(e(title)) on \(e(dataSource)) · \(HTMLText.grouped(rows)) rows"
            + (importance.isEmpty ? "" : " · \(importance.count) features")
        return HTMLText.page(title: title, css: HTMLReport.css, heading: "Tabular model report", lede: lede, sections: s)
    }

    func cards() -> String {
        let card = HTMLText.card, g = { (v: Double) in String(format: "%.6g", v) }
        switch outcome {
        case .classification(let r):
            var s = card("accuracy", String(format: "%.4f", r.accuracy), "\(HTMLText.grouped(r.count)) rows")
            s += card("macro F1", String(format: "%.4f", r.macro.f1), "mean over \(r.perClass.count) classes")
            s += card("log-loss", String(format: "%.4f", r.logLoss), "mean negative log-probability of the true class")
            if let auc = r.rocAUC { s += card("ROC AUC", String(format: "%.4f", auc), "two classes") }
            return s
        case .regression(let m, _, _):
            return card("RMSE", g(m.rmse), "root mean squared error") + card("MAE", g(m.mae), "mean absolute error")
                + card("R²", String(format: "%.4f", m.r2), "share of the variance explained")
        }
    }

    func importanceSection() -> String {
        guard !importance.isEmpty else { return "" }
        let total = importance.reduce(0.0) { $0 + $1.gain }
        var s = "<section>\n<h2>Feature importance</h2>\n<p class=\"note\">Each feature's share of the gain of every split "
        s += "on it (the loss it removed), and how many splits use it.</p>\n<div class=\"scroll\">\n"
        s += TabularCharts.importance(Array(importance.prefix(Self.featureLimit)), total: total) + "\n</div>\n"
        if importance.count > Self.featureLimit {
            s += "<p class=\"note\">… and \(importance.count - Self.featureLimit) more features.</p>\n"
        }
        return s + "</section>\n"
    }

    func outcomeSection() -> String {
        switch outcome {
        case .classification(let r):
            var s = "<section>\n<h2>Per class</h2>\n<div class=\"scroll\">\n" + ClassBarsSVG(classes: r.perClass).svg()
            s += "\n</div>\n</section>\n<section>\n<h2>Confusion matrix</h2>\n<p class=\"note\">Rows: true classes; columns: "
            s += "predicted. Colour: share of the row.</p>\n<div class=\"scroll\">\n"
            return s + ConfusionMatrixSVG(confusion: r.confusion, labels: r.perClass.map(\.label)).svg() + "\n</div>\n</section>\n"
        case .regression(_, let truth, let predicted):
            var s = "<section>\n<h2>Predicted against true</h2>\n<p class=\"note\">One point a row"
            if truth.count > Self.pointLimit { s += " (every \((truth.count + Self.pointLimit - 1) / Self.pointLimit)th row)" }
            s += "; the dashed line is a perfect model.</p>\n<div class=\"row\">\n"
            s += TabularCharts.scatter(truth: truth, predicted: predicted, limit: Self.pointLimit) + "\n"
            s += TabularCharts.residuals(truth: truth, predicted: predicted) + "\n</div>\n</section>\n"
            return s
        }
    }
}
