import Foundation
import MLToolCore
import MLToolFormat

/// The HTML page of `mltool eval --report` for a word tagger: the model, accuracy cards (and entity scores for
/// BIO/BIOES tags), precision / recall / F1 per tag, the confusion matrix, and the sentences with the most wrong tags,
/// each word shown with its predicted tag and the wrong ones highlighted with the true tag beside. Self-contained (no
/// scripts, no network); the same inputs give the same bytes.
public struct TaggingHTMLReport: Sendable {
    /// One tagged sentence: its words, the true and the predicted tags.
    public struct Sentence: Sendable {
        public var tokens: [String]
        public var truth: [String]
        public var predicted: [String]
        public init(tokens: [String], truth: [String], predicted: [String]) {
            self.tokens = tokens; self.truth = truth; self.predicted = predicted
        }
        var errors: Int { zip(truth, predicted).filter { $0 != $1 }.count }
    }

    public var model: HTMLReport.ModelInfo
    public var report: TaggingReport
    public var dataSource: String
    public var sentences: [Sentence]
    /// Sentences shown, the ones with the most wrong tags first.
    public static let sentenceLimit = 40

    public init(model: HTMLReport.ModelInfo, report: TaggingReport, dataSource: String, sentences: [Sentence]) {
        self.model = model; self.report = report; self.dataSource = dataSource; self.sentences = sentences
    }

    /// Writes the page atomically to `path`, refusing to replace any of `inputs`.
    public func write(to path: String, inputs: [String]) throws {
        try AtomicFile.write(Array(html().utf8), to: path, inputs: inputs)
    }

    /// The sentences with wrong tags, most wrong first (ties in data order), at most `sentenceLimit`.
    var worst: [Sentence] {
        sentences.enumerated().filter { $0.element.errors > 0 }
            .sorted { ($0.element.errors, $1.offset) > ($1.element.errors, $0.offset) }
            .prefix(Self.sentenceLimit).map(\.element)
    }

    public func html() -> String {
        let e = HTMLText.escape, r = report
        let title = model.name ?? (model.path as NSString).lastPathComponent
        let lede = "\(e(title)) on \(e(dataSource)) · "
            + "\(HTMLText.grouped(r.sentences)) sentences · \(HTMLText.grouped(r.tokens)) tokens · \(r.labels.count) tags"
        var s = "<section>\n<h2>Model</h2>\n<table class=\"facts\">\n"
        s += model.factRows(dataSource: dataSource, labelsName: "tags")
        s += "</table>\n</section>\n<section>\n<h2>Headline metrics</h2>\n<div class=\"cards\">\n"
        s += card("token accuracy", String(format: "%.4f", r.accuracy), "\(HTMLText.grouped(r.tokens)) tokens")
        s += card("macro F1", String(format: "%.4f", r.macro.f1), "mean over tags")
        s += card("weighted F1", String(format: "%.4f", r.weighted.f1), "weighted by tokens per tag")
        if let en = r.entities {
            s += card("entity F1", String(format: "%.4f", en.f1),
                      String(format: "precision %.4f, recall %.4f (seqeval's definition)", en.precision, en.recall))
        }
        s += "</div>\n</section>\n<section>\n<h2>Per tag</h2>\n<table class=\"compare\">\n"
        s += "<tr><th>tag</th><th>precision</th><th>recall</th><th>F1</th><th>tokens</th></tr>\n"
        for m in r.perTag {
            s += "<tr><th>\(e(m.label))</th>" + String(format: "<td>%.4f</td><td>%.4f</td><td>%.4f</td>", m.precision, m.recall, m.f1)
                + "<td>\(m.support)</td></tr>\n"
        }
        s += "</table>\n"
        if let en = r.entities, !en.perType.isEmpty {
            s += "<h3>Entities</h3>\n<table class=\"compare\">\n<tr><th>type</th><th>precision</th><th>recall</th><th>F1</th><th>entities</th></tr>\n"
            for m in en.perType {
                s += "<tr><th>\(e(m.label))</th>" + String(format: "<td>%.4f</td><td>%.4f</td><td>%.4f</td>", m.precision, m.recall, m.f1)
                    + "<td>\(m.support)</td></tr>\n"
            }
            s += "</table>\n"
        }
        s += "</section>\n<section>\n<h2>Confusion matrix</h2>\n<p class=\"note\">Rows: true tags; columns: predicted. "
        s += "Colour: share of the row.</p>\n"
        s += ConfusionMatrixSVG(confusion: r.confusion, labels: r.labels).svg() + "\n</section>\n"
        let shown = worst
        s += "<section>\n<h2>Sentences with wrong tags, most first</h2>\n"
        s += "<p class=\"note\">Each word with its predicted tag; a wrong one is highlighted, the true tag after the arrow.</p>\n"
        for sentence in shown {
            s += "<p class=\"sentence\">"
            for (i, token) in sentence.tokens.enumerated() {
                let (t, p) = (sentence.truth[i], sentence.predicted[i])
                if t == p {
                    s += "<span class=\"w\">\(e(token))<sub>\(e(p))</sub></span> "
                } else {
                    s += "<span class=\"w bad\" title=\"true \(e(t)), predicted \(e(p))\">\(e(token))<sub>\(e(p)) → \(e(t))</sub></span> "
                }
            }
            s += "</p>\n"
        }
        let wrong = sentences.filter { $0.errors > 0 }.count
        if wrong > shown.count { s += "<p class=\"note\">… and \(wrong - shown.count) more sentences with wrong tags.</p>\n" }
        if wrong == 0 { s += "<p class=\"note\">Every word is tagged right.</p>\n" }
        s += "</section>\n"
        return HTMLText.page(title: title, css: HTMLReport.css + Self.css, heading: "Word tagging report", lede: lede, sections: s)
    }

    private func card(_ name: String, _ value: String, _ note: String) -> String { HTMLText.card(name, value, note) }

    static let css = """
    p.sentence { line-height: 2.2; margin: 0 0 10px; }
    span.w { display: inline-block; text-align: center; line-height: 1.2; margin-right: 2px; }
    span.w sub { display: block; font-size: 10px; color: #666; }
    span.w.bad { background: #ffe3d6; border-radius: 3px; padding: 0 2px; }
    span.w.bad sub { color: #b3261e; font-weight: 600; }

    """
}
