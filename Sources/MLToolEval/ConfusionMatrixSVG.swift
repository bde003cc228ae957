import Foundation

/// A confusion matrix drawn as an inline SVG heat map that stays readable from 2 to 100+ classes.
///
/// Rows are true classes, columns predicted ones. Cells fill the given width (48 px down to 12 px), column labels
/// below the grid run 45° down-left (straight down when crowded), and each cell is coloured by its share of the row
/// (row-normalised, so rare classes are as visible as common ones): blue on the diagonal, orange off it. Counts are
/// printed in cells that fit them, and every cell carries a `<title>` tooltip with the full labels, count and share.
public struct ConfusionMatrixSVG: Sendable {
    public var confusion: [[Int]]
    public var labels: [String]
    /// Items per true class: the row sums, unless the matrix shows a subset of the columns.
    public var rowTotals: [Int]
    /// The width to lay the matrix out for, in CSS pixels (cells stay between 12 and 48 px whatever it is).
    public var layoutWidth: Double

    public init(confusion: [[Int]], labels: [String], rowTotals: [Int]? = nil, layoutWidth: Double = 1020) {
        self.confusion = confusion
        self.labels = labels
        self.rowTotals = rowTotals ?? confusion.map { $0.reduce(0, +) }
        self.layoutWidth = layoutWidth
    }

    /// The matrix restricted to `classes` (indices into `confusion`), colours and totals still per whole row.
    public static func subset(_ confusion: [[Int]], labels: [String], classes: [Int], layoutWidth: Double = 1020)
        -> ConfusionMatrixSVG {
        ConfusionMatrixSVG(confusion: classes.map { i in classes.map { confusion[i][$0] } }, labels: classes.map { labels[$0] },
                           rowTotals: classes.map { confusion[$0].reduce(0, +) }, layoutWidth: layoutWidth)
    }

    /// Longest label shown before it is cut with "…" (the tooltip keeps the full text).
    static let maxLabelCharacters = 22

    /// The `<svg>` element.
    public func svg() -> String {
        let k = labels.count
        guard k > 0, confusion.count == k, rowTotals.count == k, confusion.allSatisfy({ $0.count == k }) else {
            return "<p class=\"note\">No confusion matrix (\(k) labels, \(confusion.count) rows).</p>"
        }
        let shown = labels.map { Self.shortLabel($0) }
        let longest = Double(shown.map { $0.count }.max() ?? 1)
        let axisTitle = 20.0
        let supportWidth = 10 + Double(String(rowTotals.max() ?? 0).count + 1) * 7
        // Cells fill the width, between 12 and 48 px; fonts follow the cell size.
        let roomForGrid = layoutWidth - axisTitle - (longest * 12 * 0.6 + 8) - supportWidth
        let cell = Double(min(48, max(12, Int(roomForGrid) / k)))
        let font = min(12, max(8, (cell * 0.7).rounded()))
        let columnFont = min(12, max(8, (cell * 0.62).rounded()))
        // Column labels run 45° down-left from under their column, or straight down when 45° would crowd them.
        let diagonal = cell * 0.707 >= columnFont * 1.3
        let columnLength = longest * columnFont * 0.6 + 4
        let columnReach = diagonal ? columnLength * 0.707 + columnFont : columnLength
        let left = axisTitle + longest * font * 0.6 + 8
        let top = 18.0
        let grid = cell * Double(k)
        let width = left + grid + supportWidth
        let height = top + grid + 6 + columnReach + axisTitle
        var s = "<svg class=\"confusion\" role=\"img\" width=\"\(f(width))\" height=\"\(f(height))\" "
        s += "viewBox=\"0 0 \(f(width)) \(f(height))\" font-size=\"\(f(font))\" aria-label=\"confusion matrix, \(k) classes\">\n"
        // Axis titles.
        s += "<text class=\"axis\" x=\"\(f(left + grid / 2))\" y=\"\(f(height - 6))\" text-anchor=\"middle\">predicted class</text>\n"
        s += "<text class=\"axis\" transform=\"translate(14 \(f(top + grid / 2))) rotate(-90)\" text-anchor=\"middle\">true class</text>\n"
        for (j, name) in shown.enumerated() {
            let x = left + (Double(j) + 0.5) * cell, y = top + grid + 6
            s += "<text transform=\"translate(\(f(x)) \(f(y))) rotate(\(diagonal ? -45 : -90))\" text-anchor=\"end\" "
            s += "dominant-baseline=\"central\" font-size=\"\(f(columnFont))\"><title>\(HTMLText.escape(labels[j]))</title>\(HTMLText.escape(name))</text>\n"
        }
        // Row labels, right-aligned against the grid.
        for (i, name) in shown.enumerated() {
            let y = top + (Double(i) + 0.5) * cell
            s += "<text x=\"\(f(left - 6))\" y=\"\(f(y))\" text-anchor=\"end\" dominant-baseline=\"central\"><title>\(HTMLText.escape(labels[i]))</title>\(HTMLText.escape(name))</text>\n"
        }
        s += "<text class=\"muted\" x=\"\(f(left + grid + 6))\" y=\"\(f(top - 5))\">n</text>\n"
        let countFont = min(12, (cell * 0.45).rounded())
        for i in 0..<k {
            let row = confusion[i]
            let total = rowTotals[i]
            let y = top + Double(i) * cell
            for j in 0..<k {
                let x = left + Double(j) * cell
                let n = row[j]
                let share = total > 0 ? Double(n) / Double(total) : 0
                let fill = Self.color(share: share, diagonal: i == j, empty: n == 0)
                let tip = "true \(labels[i]) → predicted \(labels[j]): \(n)" + (total > 0 ? String(format: " (%.1f%% of row)", share * 100) : "")
                s += "<rect class=\"cell\" x=\"\(f(x))\" y=\"\(f(y))\" width=\"\(f(cell))\" height=\"\(f(cell))\" fill=\"\(fill.hex)\">"
                s += "<title>\(HTMLText.escape(tip))</title></rect>"
                let digits = Double(String(n).count)
                if n > 0, countFont >= 6, digits * countFont * 0.62 <= cell - 2 {
                    let ink = fill.luminance < 0.55 ? "#fff" : "#1d232c"
                    s += "<text x=\"\(f(x + cell / 2))\" y=\"\(f(y + cell / 2))\" text-anchor=\"middle\" dominant-baseline=\"central\" "
                    s += "font-size=\"\(f(countFont))\" fill=\"\(ink)\" pointer-events=\"none\">\(n)</text>"
                }
                s += "\n"
            }
            s += "<text class=\"muted\" x=\"\(f(left + grid + 6))\" y=\"\(f(y + cell / 2))\" dominant-baseline=\"central\">\(total)</text>\n"
        }
        s += "<rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(grid))\" height=\"\(f(grid))\" fill=\"none\" stroke=\"#c9ced6\"/>\n"
        s += "</svg>"
        return s
    }

    static func shortLabel(_ label: String) -> String {
        label.count > maxLabelCharacters ? String(label.prefix(maxLabelCharacters - 1)) + "…" : label
    }

    /// An sRGB colour.
    struct RGB {
        var r: Double, g: Double, b: Double
        var hex: String { String(format: "#%02x%02x%02x", Int(r.rounded()), Int(g.rounded()), Int(b.rounded())) }
        /// Relative luminance, 0 (black) to 1 (white), good enough to pick black or white text.
        var luminance: Double { (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255 }
        func mixed(_ o: RGB, _ t: Double) -> RGB { RGB(r: r + (o.r - r) * t, g: g + (o.g - g) * t, b: b + (o.b - b) * t) }
    }

    /// Blue for the diagonal (linear in the share), orange off it (square root, so a few percent already shows).
    static func color(share: Double, diagonal: Bool, empty: Bool) -> RGB {
        if empty { return RGB(r: 246, g: 247, b: 249) }
        let t = min(1, max(0, share))
        if diagonal { return RGB(r: 232, g: 241, b: 251).mixed(RGB(r: 16, g: 64, b: 140), 0.15 + 0.85 * t) }
        return RGB(r: 254, g: 237, b: 222).mixed(RGB(r: 178, g: 52, b: 8), 0.1 + 0.9 * t.squareRoot())
    }

    private func f(_ v: Double) -> String { SVGNumber.format(v) }
}

/// Short, locale-independent numbers for SVG attributes.
enum SVGNumber {
    static func format(_ v: Double) -> String {
        let r = (v * 10).rounded() / 10
        return r == r.rounded() ? String(Int(r)) : String(format: "%.1f", r)
    }
}
