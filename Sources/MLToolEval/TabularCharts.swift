import Foundation

/// The charts of a tabular model's report (inline SVG): feature importance bars, predicted against true values, and
/// the residuals' histogram; rows whose value or prediction is not finite are left out. The same inputs give the same
/// bytes.
enum TabularCharts {
    static let barColor = "#3b6fb6"

    static func f(_ x: Double) -> String { SVGNumber.format(x) }

    /// An axis value: whole numbers from 100 to 10⁷ in full (a price reads 18790, not 1.879e+04), else 4 digits.
    static func tick(_ v: Double) -> String { String(format: abs(v) >= 100 && abs(v) < 1e7 ? "%.0f" : "%.4g", v) }

    /// One bar per feature: its share of the total gain, with the share and its split count printed beside it.
    static func importance(_ features: [TabularHTMLReport.Feature], total: Double) -> String {
        let font = 12.0, rowHeight = 22.0, barWidth = 460.0, top = 8.0
        let names = features.map { ConfusionMatrixSVG.shortLabel($0.name) }
        let left = Double(names.map(\.count).max() ?? 1) * font * 0.62 + 12
        let width = left + barWidth + 170, height = top + rowHeight * Double(features.count) + 4
        var s = "<svg class=\"bars\" role=\"img\" width=\"\(f(width))\" height=\"\(f(height))\" viewBox=\"0 0 \(f(width)) \(f(height))\" "
        s += "font-size=\"\(f(font))\" aria-label=\"feature importance by gain\">\n"
        let largest = features.map(\.gain).max() ?? 0
        for (i, feature) in features.enumerated() {
            let y = top + Double(i) * rowHeight, mid = y + rowHeight / 2
            let share = total > 0 ? feature.gain / total : 0
            let w = largest > 0 ? barWidth * feature.gain / largest : 0
            s += "<text x=\"\(f(left - 8))\" y=\"\(f(mid))\" text-anchor=\"end\" dominant-baseline=\"central\">"
            s += "<title>\(HTMLText.escape(feature.name))</title>\(HTMLText.escape(names[i]))</text>"
            s += "<rect x=\"\(f(left))\" y=\"\(f(y + 4))\" width=\"\(f(w))\" height=\"\(f(rowHeight - 8))\" fill=\"\(barColor)\"/>"
            s += "<text class=\"muted\" x=\"\(f(left + w + 6))\" y=\"\(f(mid))\" dominant-baseline=\"central\">"
            s += String(format: "%.1f%% · %d splits", 100 * share, feature.splits) + "</text>\n"
        }
        return s + "</svg>"
    }

    /// Predicted against true values (at most `limit` points, every k-th row), with the diagonal of a perfect model.
    static func scatter(truth: [Double], predicted: [Double], limit: Int) -> String {
        let pairs = zip(truth, predicted).filter { $0.isFinite && $1.isFinite }
        let size = 420.0, pad = 60.0, n = pairs.count
        let values = pairs.map(\.0) + pairs.map(\.1)
        guard n > 0, let lo = values.min(), let hi = values.max() else { return "<p class=\"note\">No rows.</p>" }
        let span = hi > lo ? hi - lo : 1
        func px(_ v: Double) -> Double { pad + (v - lo) / span * size }
        func py(_ v: Double) -> Double { pad + size - (v - lo) / span * size }
        let full = size + 2 * pad
        var s = "<svg role=\"img\" width=\"\(f(full))\" height=\"\(f(full))\" viewBox=\"0 0 \(f(full)) \(f(full))\" font-size=\"11\" "
        s += "aria-label=\"predicted against true values\">\n"
        s += "<rect x=\"\(f(pad))\" y=\"\(f(pad))\" width=\"\(f(size))\" height=\"\(f(size))\" fill=\"none\" stroke=\"#e3e6eb\"/>"
        s += "<line x1=\"\(f(px(lo)))\" y1=\"\(f(py(lo)))\" x2=\"\(f(px(hi)))\" y2=\"\(f(py(hi)))\" stroke=\"#b3261e\" stroke-dasharray=\"4 3\"/>\n"
        let step = max(1, (n + limit - 1) / limit)
        for r in stride(from: 0, to: n, by: step) {
            s += "<circle cx=\"\(f(px(pairs[r].0)))\" cy=\"\(f(py(pairs[r].1)))\" r=\"2\" fill=\"\(barColor)\" fill-opacity=\"0.45\"/>"
        }
        s += "\n" + axisLabels(lo: lo, hi: hi, pad: pad, size: size)
        return s + "</svg>"
    }

    static func axisLabels(lo: Double, hi: Double, pad: Double, size: Double) -> String {
        let g = tick
        var s = "<text class=\"muted\" x=\"\(f(pad))\" y=\"\(f(pad + size + 16))\">\(g(lo))</text>"
        s += "<text class=\"muted\" x=\"\(f(pad + size))\" y=\"\(f(pad + size + 16))\" text-anchor=\"end\">\(g(hi))</text>"
        s += "<text class=\"axis\" x=\"\(f(pad + size / 2))\" y=\"\(f(pad + size + 34))\" text-anchor=\"middle\">true value</text>"
        s += "<text class=\"muted\" x=\"\(f(pad - 6))\" y=\"\(f(pad + size))\" text-anchor=\"end\">\(g(lo))</text>"
        s += "<text class=\"muted\" x=\"\(f(pad - 6))\" y=\"\(f(pad + 10))\" text-anchor=\"end\">\(g(hi))</text>"
        s += "<text class=\"axis\" x=\"12\" y=\"\(f(pad + size / 2))\" transform=\"rotate(-90 12 \(f(pad + size / 2)))\" "
        return s + "text-anchor=\"middle\">predicted</text>\n"
    }

    /// The residuals (predicted − true) in `bins` equal bins between their extremes, each bar its count.
    static func residuals(truth: [Double], predicted: [Double], bins: Int = 40) -> String {
        let r = zip(predicted, truth).map { $0 - $1 }.filter(\.isFinite)
        guard let lo = r.min(), let hi = r.max() else { return "<p class=\"note\">No rows.</p>" }
        let span = hi > lo ? hi - lo : 1
        var counts = [Int](repeating: 0, count: bins)
        for v in r { counts[min(bins - 1, Int((v - lo) / span * Double(bins)))] += 1 }
        let width = 460.0, height = 180.0, pad = 30.0, most = Double(counts.max() ?? 1), bar = width / Double(bins)
        var s = "<svg role=\"img\" width=\"\(f(width + 2 * pad))\" height=\"\(f(height + 2 * pad))\" "
        s += "viewBox=\"0 0 \(f(width + 2 * pad)) \(f(height + 2 * pad))\" font-size=\"11\" aria-label=\"residual histogram\">\n"
        for (i, c) in counts.enumerated() {
            let h = height * Double(c) / most
            s += "<rect x=\"\(f(pad + Double(i) * bar))\" y=\"\(f(pad + height - h))\" width=\"\(f(bar - 1))\" height=\"\(f(h))\" "
            s += "fill=\"\(barColor)\"><title>\(c) rows</title></rect>"
        }
        let g = tick
        s += "\n<text class=\"muted\" x=\"\(f(pad))\" y=\"\(f(pad + height + 16))\">\(g(lo))</text>"
        s += "<text class=\"muted\" x=\"\(f(pad + width))\" y=\"\(f(pad + height + 16))\" text-anchor=\"end\">\(g(hi))</text>"
        s += "<text class=\"axis\" x=\"\(f(pad + width / 2))\" y=\"\(f(pad + height + 16))\" text-anchor=\"middle\">predicted − true</text>\n"
        return s + "</svg>"
    }
}
