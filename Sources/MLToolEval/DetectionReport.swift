import Foundation
import MLToolCore
import MLToolFormat

/// The HTML page of `mltool eval --report` for a detector: the model, mAP cards, AP / precision / recall per class,
/// the precision–recall curve of each class (COCO's interpolated curve at IoU 0.5), and the photos with their true
/// and predicted boxes drawn, worst first. Self-contained (no scripts, no network); the same inputs give the same
/// bytes.
public struct DetectionReport: Sendable {
    /// One photo as the report shows it.
    public struct Photo: Sendable {
        public var path: String
        /// A PNG of the photo (downscaled) with the true boxes and the predictions above the threshold drawn.
        public var png: [UInt8]
        public var truth: Int
        public var matched: Int
        public var falsePositives: Int
        public init(path: String, png: [UInt8], truth: Int, matched: Int, falsePositives: Int) {
            self.path = path; self.png = png; self.truth = truth; self.matched = matched; self.falsePositives = falsePositives
        }
    }

    public var model: HTMLReport.ModelInfo
    public var evaluation: DetectionEvaluation
    public var dataSource: String
    /// Worst first; at most `photoLimit` are shown.
    public var photos: [Photo]
    public static let photoLimit = 24

    public init(model: HTMLReport.ModelInfo, evaluation: DetectionEvaluation, dataSource: String, photos: [Photo]) {
        self.model = model; self.evaluation = evaluation; self.dataSource = dataSource; self.photos = photos
    }

    /// Writes the page atomically to `path`, refusing to replace any of `inputs`.
    public func write(to path: String, inputs: [String]) throws {
        try AtomicFile.write(Array(html().utf8), to: path, inputs: inputs)
    }

    public func html() -> String {
        let e = HTMLText.escape, ev = evaluation
        let title = model.name ?? (model.path as NSString).lastPathComponent
        let lede = "\(e(title)) on \(e(dataSource)) · "
            + "\(HTMLText.grouped(ev.images)) photos · \(ev.perClass.count) classes"
        var s = "<section>\n<h2>Model</h2>\n<table class=\"facts\">\n"
        s += model.factRows(dataSource: dataSource)
        s += "</table>\n</section>\n<section>\n<h2>Headline metrics</h2>\n<div class=\"cards\">\n"
        s += card("mAP@0.5", String(format: "%.4f", ev.mAP50), "mean AP over classes, IoU ≥ 0.5 (COCO 101-point)")
        s += card("mAP@0.5:0.95", String(format: "%.4f", ev.mAP50to95), "averaged over IoU 0.50, 0.55 … 0.95")
        s += card("precision", String(format: "%.4f", ev.precision), String(format: "confidence ≥ %.2f, IoU ≥ 0.5", ev.confidenceThreshold))
        s += card("recall", String(format: "%.4f", ev.recall), String(format: "confidence ≥ %.2f, IoU ≥ 0.5", ev.confidenceThreshold))
        s += "</div>\n</section>\n<section>\n<h2>Per class</h2>\n<table class=\"compare\">\n"
        s += "<tr><th>class</th><th>AP@0.5</th><th>AP@0.5:0.95</th><th>precision</th><th>recall</th><th>true boxes</th><th>detections</th></tr>\n"
        func f(_ v: Double?) -> String { v.map { String(format: "%.4f", $0) } ?? "–" }
        for c in ev.perClass {
            s += "<tr><th>\(e(c.label))</th><td>\(f(c.ap50))</td><td>\(f(c.ap50to95))</td><td>\(f(c.precision))</td>"
            s += "<td>\(f(c.recall))</td><td>\(c.groundTruth)</td><td>\(c.detections)</td></tr>\n"
        }
        s += "</table>\n</section>\n<section>\n<h2>Precision–recall curves</h2>\n"
        s += "<p class=\"note\">COCO's interpolated precision at recall 0, 0.01 … 1, IoU ≥ 0.5; the area under each curve is its AP.</p>\n"
        s += "<div class=\"curves\">\n"
        for (i, c) in ev.perClass.enumerated() where c.groundTruth > 0 { s += Self.curve(c, index: i) }
        s += "</div>\n</section>\n<section>\n<h2>Photos, worst first</h2>\n"
        s += "<p class=\"note\">Dashed white: the true boxes. Coloured: the predictions scoring at least "
        s += String(format: "%.2f", ev.confidenceThreshold) + ". Ordered by missed boxes plus false detections.</p>\n<div class=\"photos\">\n"
        for p in photos.prefix(Self.photoLimit) {
            s += "<figure class=\"photo\"><img alt=\"\(e(p.path))\" src=\"data:image/png;base64,\(Data(p.png).base64EncodedString())\">"
            s += "<figcaption><b>\(p.matched)/\(p.truth)</b> found, <b>\(p.falsePositives)</b> false · \(e((p.path as NSString).lastPathComponent))</figcaption></figure>\n"
        }
        if photos.count > Self.photoLimit { s += "<p class=\"note\">… and \(photos.count - Self.photoLimit) more photos.</p>\n" }
        s += "</div>\n</section>\n"
        return HTMLText.page(title: title, css: HTMLReport.css + Self.css, heading: "Detection report", lede: lede, sections: s)
    }

    private func card(_ name: String, _ value: String, _ note: String) -> String { HTMLText.card(name, value, note) }

    /// One class's PR curve as an inline SVG (recall across, precision up).
    static func curve(_ c: ClassAveragePrecision, index: Int) -> String {
        let w = 300.0, h = 200.0, left = 40.0, bottom = 30.0, top = 24.0, right = 10.0
        let pw = w - left - right, ph = h - top - bottom
        let points = c.precisionCurve.enumerated().map { i, p in
            String(format: "%.1f,%.1f", left + Double(i) / 100 * pw, top + (1 - min(max(p, 0), 1)) * ph)
        }.joined(separator: " ")
        var s = "<svg class=\"curve\" width=\"\(Int(w))\" height=\"\(Int(h))\" viewBox=\"0 0 \(Int(w)) \(Int(h))\" role=\"img\">"
        s += "<title>\(HTMLText.escape(c.label)): precision against recall</title>"
        s += "<text x=\"\(left)\" y=\"16\" class=\"t\">\(HTMLText.escape(c.label)) · AP@0.5 \(c.ap50.map { String(format: "%.3f", $0) } ?? "–")</text>"
        s += String(format: "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" class=\"frame\"/>", left, top, pw, ph)
        for v in [0.0, 0.5, 1.0] {
            s += String(format: "<text x=\"%.0f\" y=\"%.0f\" class=\"a\" text-anchor=\"end\">%.1f</text>", left - 4, top + (1 - v) * ph + 4, v)
            s += String(format: "<text x=\"%.0f\" y=\"%.0f\" class=\"a\" text-anchor=\"middle\">%.1f</text>", left + v * pw, h - bottom + 14, v)
        }
        s += String(format: "<text x=\"%.0f\" y=\"%.0f\" class=\"a\" text-anchor=\"middle\">recall</text>", left + pw / 2, h - 4)
        s += "<polyline points=\"\(points)\" class=\"pr c\(index % 8)\"/></svg>\n"
        return s
    }

    static let css = """
    .curves { display: flex; flex-wrap: wrap; gap: 12px; }
    svg.curve .frame { fill: none; stroke: #bbb; }
    svg.curve .t { font: 600 12px system-ui, sans-serif; }
    svg.curve .a { font: 10px system-ui, sans-serif; fill: #555; }
    svg.curve .pr { fill: none; stroke-width: 2; stroke: #1f6feb; }
    .photos { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 12px; }
    figure.photo { margin: 0; }
    figure.photo img { width: 100%; height: auto; border: 1px solid #ddd; }
    figure.photo figcaption { font-size: 12px; color: #333; }

    """
}
