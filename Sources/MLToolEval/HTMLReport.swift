import Foundation
import MLToolCore
import MLToolFormat

/// The `mltool eval --report` page: one self-contained static HTML file (inline CSS and SVG, images as data URIs,
/// no scripts, no network) with the model summary, headline metrics, a confusion-matrix heat map, per-class
/// precision/recall bars and the most confident mistakes. With two models it shows both metric sets side by side
/// plus their top-1 agreement and mean KL divergence. Every label, path and text snippet is HTML-escaped.
public struct HTMLReport: Sendable {
    /// What the summary says about one model.
    public struct ModelInfo: Sendable {
        public var path: String
        public var name: String?
        public var task: String
        public var labelCount: Int
        public var parameters: Int
        /// Provenance rows: ("trained with", "mltool 0.1.0"), ("command", …), ("seed", …), ("sources", …).
        public var provenance: [(name: String, value: String)]

        public init(path: String, name: String?, task: String, labelCount: Int, parameters: Int,
                    provenance: [(name: String, value: String)]) {
            self.path = path; self.name = name; self.task = task; self.labelCount = labelCount
            self.parameters = parameters; self.provenance = provenance
        }

        /// The summary of a loaded model.
        /// The model's facts as table rows (file, name, task, labels, parameters, provenance, data), escaped.
        public func factRows(dataSource: String, labelsName: String = "labels") -> String {
            var rows: [(String, String)] = [("file", path)]
            if let n = name { rows.append(("name", n)) }
            rows += [("task", task), (labelsName, String(labelCount)), ("parameters", HTMLText.grouped(parameters))]
            rows += provenance.map { ($0.name, $0.value) } + [("data", dataSource)]
            return rows.map { "<tr><th>\(HTMLText.escape($0.0))</th><td>\(HTMLText.escape($0.1))</td></tr>\n" }.joined()
        }

        public init(path: String, model: Model) {
            let md = model.metadata
            var rows: [(name: String, value: String)] = [("made with", "mltool \(md.provenance.toolVersion)")]
            if let c = md.provenance.command { rows.append(("command", c)) }
            if let seed = md.provenance.seed { rows.append(("seed", String(seed))) }
            for src in md.provenance.sources.prefix(3) {
                rows.append(("source", "\(src.path) (sha256 \(src.sha256.prefix(12))…)"))
            }
            if md.provenance.sources.count > 3 { rows.append(("source", "… and \(md.provenance.sources.count - 3) more")) }
            if let split = md.split {
                rows.append(("split", "\(split.trainCount) train, \(split.validationCount) validation, \(split.holdout.count) holdout (seed \(split.seed))"))
            }
            self.init(path: path, name: md.name, task: md.task.rawValue, labelCount: md.labels.count,
                      parameters: model.parameterCount, provenance: rows)
        }
    }

    /// How a mistaken item is shown.
    public enum Preview: Sendable {
        /// A PNG thumbnail (at most 96 px a side), embedded as a data URI.
        case png([UInt8])
        /// The item's text; at most 200 characters are shown.
        case text(String)
        /// Nothing to show (for example an image that no longer decodes).
        case none
    }

    /// One confidently wrong prediction.
    public struct Mistake: Sendable {
        public var path: String
        public var trueLabel: String
        public var predictedLabel: String
        /// The probability the model gave its (wrong) prediction.
        public var probability: Double
        public var preview: Preview
        /// In compare mode: the second model's prediction and its probability for the same item.
        public var other: (label: String, probability: Double)?

        public init(path: String, trueLabel: String, predictedLabel: String, probability: Double, preview: Preview,
                    other: (label: String, probability: Double)? = nil) {
            self.path = path; self.trueLabel = trueLabel; self.predictedLabel = predictedLabel
            self.probability = probability; self.preview = preview; self.other = other
        }
    }

    /// The models (one, or two in compare mode), in the order of `reports`.
    public var models: [ModelInfo]
    public var reports: [EvaluationReport]
    /// Where the items came from ("recorded holdout of model.bin", a folder, a CSV).
    public var dataSource: String
    public var comparison: ModelComparison?
    /// The first model's most confident mistakes, most confident first.
    public var mistakes: [Mistake]
    /// Shown in the footer when set (kept out of the page otherwise, so the same inputs give the same bytes).
    public var generated: String?

    /// How many mistakes the page shows, and the snippet length for text items.
    public static let mistakeLimit = 24
    public static let snippetLimit = 200
    /// Above this many classes, the charts show only this many (the most confused, the lowest F1).
    public static let chartClassLimit = 50

    public init(models: [ModelInfo], reports: [EvaluationReport], dataSource: String,
                comparison: ModelComparison? = nil, mistakes: [Mistake] = [], generated: String? = nil) {
        self.models = models; self.reports = reports; self.dataSource = dataSource
        self.comparison = comparison; self.mistakes = mistakes; self.generated = generated
    }

    /// Writes the page atomically to `path`, refusing to replace any of `inputs`.
    public func write(to path: String, inputs: [String]) throws {
        try AtomicFile.write(Array(html().utf8), to: path, inputs: inputs)
    }

    /// The complete page.
    public func html() -> String {
        let e = HTMLText.escape
        let title = models.map { $0.name ?? ($0.path as NSString).lastPathComponent }.joined(separator: " vs ")
        let lede = "\(e(title)) on \(e(dataSource)) · "
            + "\(HTMLText.grouped(reports.first?.count ?? 0)) items · \(reports.first?.perClass.count ?? 0) classes"
        let s = HTMLText.page(title: title, css: Self.css, heading: "Evaluation report", lede: lede,
                              sections: summarySection() + metricsSection() + chartsSection() + mistakesSection(),
                              generated: generated)
        return s
    }

    /// The confusion matrices and per-class bars. Up to 16 classes they are half-width (one matrix beside its
    /// bars, or A beside B); above `chartClassLimit` classes they show the classes most involved in errors and
    /// the ones with the lowest F1 (chosen from A, so both models show the same ones).
    private func chartsSection() -> String {
        guard let a = reports.first else { return "" }
        let e = HTMLText.escape
        let k = a.perClass.count
        let paired = reports.count == 1 && k <= 16
        let matrixWidth = k > 16 ? 1020.0 : paired ? 470 : 500
        let confused = a.classesMostConfused(limit: Self.chartClassLimit)
        let worst = a.classesWorstF1(limit: Self.chartClassLimit)
        var s = paired ? "<div class=\"pair\">\n" : ""
        s += "<section>\n<h2>Confusion matri\(reports.count > 1 ? "ces" : "x")</h2>\n"
        s += "<p class=\"note\">"
        if confused.count < k { s += "The \(confused.count) of \(k) classes most involved in errors. " }
        s += "Colour: share of the row, <span class=\"swatch diag\"></span> correct, "
        s += "<span class=\"swatch off\"></span> confused. Right: items per class.</p>\n<div class=\"row\">\n"
        for (i, r) in reports.enumerated() {
            let labels = r.perClass.map(\.label)
            s += "<div class=\"scroll\">\(reports.count > 1 ? "<h3>\(e(modelTitle(i)))</h3>" : "")"
            s += ConfusionMatrixSVG.subset(r.confusion, labels: labels, classes: confused, layoutWidth: matrixWidth).svg()
            s += "</div>\n"
        }
        s += "</div>\n</section>\n"
        s += "<section>\n<h2>Per-class precision and recall</h2>\n"
        if worst.count < k { s += "<p class=\"note\">The \(worst.count) of \(k) classes with the lowest F1, lowest first.</p>\n" }
        s += "<div class=\"row\">\n"
        for (i, r) in reports.enumerated() {
            s += "<div class=\"scroll\">\(reports.count > 1 ? "<h3>\(e(modelTitle(i)))</h3>" : "")"
            let bars = ClassBarsSVG(classes: worst.map { r.perClass[$0] }, barWidth: k <= 16 ? 230 : 420, rowHeight: paired ? 32 : 24)
            s += bars.svg() + "</div>\n"
        }
        s += "</div>\n</section>\n"
        return s + (paired ? "</div>\n" : "")
    }

    private func modelTitle(_ i: Int) -> String {
        let letter = reports.count > 1 ? (i == 0 ? "A: " : "B: ") : ""
        return letter + (models.indices.contains(i) ? models[i].path : "model \(i + 1)")
    }

    private func summarySection() -> String {
        let e = HTMLText.escape
        var s = "<section>\n<h2>Model\(models.count > 1 ? "s" : "")</h2>\n<div class=\"row\">\n"
        for (i, m) in models.enumerated() {
            s += "<table class=\"facts\">\n"
            if models.count > 1 { s += "<caption>\(e(i == 0 ? "A" : "B"))</caption>\n" }
            s += m.factRows(dataSource: dataSource)
            s += "</table>\n"
        }
        return s + "</div>\n</section>\n"
    }

    private func metricsSection() -> String {
        guard let a = reports.first else { return "" }
        var s = "<section>\n<h2>Headline metrics</h2>\n"
        if reports.count == 1 {
            s += "<div class=\"cards\">\n"
            s += card("accuracy", percent(a.accuracy), "\(HTMLText.grouped(Int((a.accuracy * Double(a.count)).rounded()))) of \(HTMLText.grouped(a.count)) correct")
            s += card("top-\(a.topK) accuracy", percent(a.topKAccuracy), "true class among the top \(a.topK)")
            s += card("macro F1", String(format: "%.3f", a.macro.f1), "unweighted mean over classes")
            s += card("log-loss", String(format: "%.4f", a.logLoss), "mean −log p(true class)")
            if let auc = a.rocAUC, a.perClass.count == 2 {
                s += card("ROC AUC", String(format: "%.4f", auc), "positive class: \(a.perClass[1].label)")
            }
            for (b, name) in zip(a.byLength ?? [], LengthAccuracy.names(a.byLength ?? [])) where b.count > 0 {
                s += card("texts \(name) characters", percent(b.accuracy),
                          "\(HTMLText.grouped(b.correct)) of \(HTMLText.grouped(b.count)) correct")
            }
            s += "</div>\n"
        } else {
            let b = reports[1]
            s += "<table class=\"compare\">\n<tr><th>metric</th><th>A</th><th>B</th><th>B − A</th></tr>\n"
            var rows: [(String, Double, Double, Bool)] = [
                ("accuracy", a.accuracy, b.accuracy, true), ("top-\(a.topK) accuracy", a.topKAccuracy, b.topKAccuracy, true),
                ("macro F1", a.macro.f1, b.macro.f1, false), ("weighted F1", a.weighted.f1, b.weighted.f1, false),
                ("log-loss", a.logLoss, b.logLoss, false),
            ]
            if let x = a.rocAUC, let y = b.rocAUC { rows.append(("ROC AUC", x, y, false)) }
            for (name, x, y, pct) in rows {
                let d = y - x
                let better = name == "log-loss" ? d < 0 : d > 0
                let cls = abs(d) < 1e-12 ? "" : better ? " class=\"up\"" : " class=\"down\""
                let fx = pct ? percent(x) : String(format: "%.4f", x), fy = pct ? percent(y) : String(format: "%.4f", y)
                let fd = pct ? String(format: "%+.2f pts", d * 100) : String(format: "%+.4f", d)
                s += "<tr><th>\(HTMLText.escape(name))</th><td>\(fx)</td><td>\(fy)</td><td\(cls)>\(fd)</td></tr>\n"
            }
            s += "</table>\n"
            if let c = comparison {
                s += "<div class=\"cards\">\n"
                s += card("top-1 agreement", percent(c.agreement), "items where A and B predict the same class")
                s += card("mean KL(A ‖ B)", String(format: "%.5f", c.meanKL), "nats, over the probability vectors")
                s += card("disagreements", HTMLText.grouped(c.disagreements.count), "of \(HTMLText.grouped(a.count)) items")
                s += "</div>\n"
            }
        }
        return s + "</section>\n"
    }

    private func card(_ name: String, _ value: String, _ note: String) -> String { HTMLText.card(name, value, note) }

    private func percent(_ x: Double) -> String { String(format: "%.2f%%", x * 100) }

    private func mistakesSection() -> String {
        let e = HTMLText.escape
        var s = "<section>\n<h2>Most confident mistakes\(reports.count > 1 ? " of A" : "")</h2>\n"
        guard !mistakes.isEmpty else { return s + "<p class=\"note\">None: every item was classified correctly.</p>\n</section>\n" }
        s += "<p class=\"note\">The \(mistakes.count) wrong predictions the model was surest of, surest first: the true class, "
        s += "the predicted one, and the probability the model gave it.</p>\n<div class=\"mistakes\">\n"
        for m in mistakes {
            s += "<figure class=\"mistake\">"
            switch m.preview {
            case .png(let bytes):
                s += "<div class=\"thumb\"><img alt=\"\(e(m.path))\" src=\"data:image/png;base64,\(Data(bytes).base64EncodedString())\"></div>"
            case .text(let text):
                s += "<blockquote class=\"snippet\">\(e(HTMLText.snippet(text, limit: Self.snippetLimit)))</blockquote>"
            case .none:
                s += "<div class=\"thumb empty\">no preview</div>"
            }
            let percent = String(format: "%.1f%%", m.probability * 100)
            s += "<figcaption><div class=\"truth\" title=\"true class: \(e(m.trueLabel))\"><span class=\"tag\">true</span><b>\(e(m.trueLabel))</b></div>"
            s += "<div class=\"pred\" title=\"predicted: \(e(m.predictedLabel))\"><span class=\"tag\">pred.</span><b>\(e(m.predictedLabel))</b></div>"
            s += "<div class=\"conf\" title=\"\(e(m.path))\"><b>\(percent)</b> · \(e((m.path as NSString).lastPathComponent))</div>"
            if let o = m.other {
                s += "<div class=\"other\" title=\"B predicts \(e(o.label))\"><span class=\"tag\">B</span>\(e(o.label)) "
                s += String(format: "%.1f%%", o.probability * 100) + "</div>"
            }
            s += "</figcaption></figure>\n"
        }
        return s + "</div>\n</section>\n"
    }
}
