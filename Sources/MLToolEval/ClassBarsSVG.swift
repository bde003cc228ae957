import Foundation

/// Per-class precision and recall as paired horizontal bars (inline SVG), with F1 and support printed alongside.
public struct ClassBarsSVG: Sendable {
    public var classes: [ClassMetrics]
    /// The length of a 100% bar, in CSS pixels.
    public var barWidth: Double
    /// The height of one class's row (two bars and the gap), in CSS pixels.
    public var rowHeight: Double

    public init(classes: [ClassMetrics], barWidth: Double = 420, rowHeight: Double = 24) {
        self.classes = classes
        self.barWidth = barWidth
        self.rowHeight = rowHeight
    }

    static let precisionColor = "#3b6fb6"
    static let recallColor = "#e08a2c"

    /// The `<svg>` element.
    public func svg() -> String {
        guard !classes.isEmpty else { return "<p class=\"note\">No classes.</p>" }
        let font = 12.0
        let shown = classes.map { ConfusionMatrixSVG.shortLabel($0.label) }
        let labelWidth = Double(shown.map { $0.count }.max() ?? 1) * font * 0.62 + 10
        let bar = rowHeight >= 30 ? 10.0 : 8.0
        let left = labelWidth, top = 44.0
        let statsX = left + barWidth + 52
        let width = statsX + 110, height = top + rowHeight * Double(classes.count) + 6
        var s = "<svg class=\"bars\" role=\"img\" width=\"\(f(width))\" height=\"\(f(height))\" "
        s += "viewBox=\"0 0 \(f(width)) \(f(height))\" font-size=\"\(f(font))\" aria-label=\"per-class precision and recall\">\n"
        // Legend and column heads.
        s += "<rect x=\"\(f(left))\" y=\"4\" width=\"10\" height=\"10\" fill=\"\(Self.precisionColor)\"/>"
        s += "<text x=\"\(f(left + 14))\" y=\"13\">precision</text>"
        s += "<rect x=\"\(f(left + 90))\" y=\"4\" width=\"10\" height=\"10\" fill=\"\(Self.recallColor)\"/>"
        s += "<text x=\"\(f(left + 104))\" y=\"13\">recall</text>\n"
        s += "<text class=\"muted\" x=\"\(f(statsX + 30))\" y=\"13\" text-anchor=\"end\">F1</text>"
        s += "<text class=\"muted\" x=\"\(f(statsX + 100))\" y=\"13\" text-anchor=\"end\">support</text>\n"
        // Grid lines at 0, 0.25, ... 1.
        for q in 0...4 {
            let x = left + barWidth * Double(q) / 4
            s += "<line x1=\"\(f(x))\" y1=\"\(f(top - 4))\" x2=\"\(f(x))\" y2=\"\(f(height - 4))\" stroke=\"#e3e6eb\"/>"
            s += "<text class=\"muted\" x=\"\(f(x))\" y=\"\(f(top - 8))\" text-anchor=\"middle\" font-size=\"10\">\(q * 25)%</text>\n"
        }
        for (i, c) in classes.enumerated() {
            let y = top + Double(i) * rowHeight
            let mid = y + rowHeight / 2
            if i % 2 == 1 {
                s += "<rect x=\"0\" y=\"\(f(y))\" width=\"\(f(width))\" height=\"\(f(rowHeight))\" fill=\"#f6f7f9\" opacity=\"0.7\"/>"
            }
            s += "<text x=\"\(f(left - 8))\" y=\"\(f(mid))\" text-anchor=\"end\" dominant-baseline=\"central\"><title>\(HTMLText.escape(c.label))</title>\(HTMLText.escape(shown[i]))</text>"
            for (k, (value, color)) in [(c.precision, Self.precisionColor), (c.recall, Self.recallColor)].enumerated() {
                let by = mid - bar - 1 + Double(k) * (bar + 2)
                let w = max(0, min(1, value)) * barWidth
                s += "<rect x=\"\(f(left))\" y=\"\(f(by))\" width=\"\(f(w))\" height=\"\(f(bar))\" fill=\"\(color)\">"
                s += "<title>\(HTMLText.escape(c.label)) \(k == 0 ? "precision" : "recall") \(String(format: "%.4f", value))</title></rect>"
                s += "<text class=\"muted\" x=\"\(f(left + w + 4))\" y=\"\(f(by + bar / 2))\" dominant-baseline=\"central\" font-size=\"9\">\(String(format: "%.1f", value * 100))</text>"
            }
            s += "<text x=\"\(f(statsX + 30))\" y=\"\(f(mid))\" text-anchor=\"end\" dominant-baseline=\"central\">\(String(format: "%.3f", c.f1))</text>"
            s += "<text class=\"muted\" x=\"\(f(statsX + 100))\" y=\"\(f(mid))\" text-anchor=\"end\" dominant-baseline=\"central\">\(c.support)</text>\n"
        }
        s += "</svg>"
        return s
    }

    private func f(_ v: Double) -> String { SVGNumber.format(v) }
}
