import Foundation
import MLToolCore
import MLToolData
import Testing
@testable import MLToolEval

@Suite struct HTMLReportTests {
    @Test func labelsAndPathsAreEscaped() throws {
        let html = try ReportFixture.report(k: 12).html()
        #expect(html.contains("&lt;script&gt;&amp;&quot;"))
        #expect(!html.contains("<script"), "a label must never become markup")
        #expect(html.contains("models/&lt;model&gt;.bin"))
        #expect(html.contains("data/ &amp; &lt;more&gt;"))
        #expect(!html.contains("<b>bold</b>"))
        #expect(HTMLText.escape("<script>&\"'") == "&lt;script&gt;&amp;&quot;&#39;")
    }

    @Test(arguments: [2, 10, 36, 120])
    func confusionMatrixHasOneCellPerClassPair(k: Int) {
        let labels = ReportFixture.labels(k)
        let (truth, probs) = ReportFixture.predictions(n: 300, k: k, seed: 3)
        let r = Metrics.evaluate(truth: truth, probabilities: probs, labels: labels)
        let svg = ConfusionMatrixSVG(confusion: r.confusion, labels: labels).svg()
        #expect(svg.components(separatedBy: "<rect class=\"cell\"").count - 1 == k * k)
        // Every label appears (escaped, possibly shortened) as a row and a column heading.
        #expect(svg.components(separatedBy: "<title>\(HTMLText.escape(labels[k - 1]))</title>").count - 1 >= 2)
        // Counts are printed where they fit; every nonzero cell of a 10-class matrix fits its count.
        if k == 10 {
            let printed = svg.components(separatedBy: "pointer-events=\"none\">").count - 1
            #expect(printed == r.confusion.flatMap { $0 }.filter { $0 > 0 }.count)
        }
    }

    @Test func pageHasOneMatrixAndAllSections() throws {
        let html = try ReportFixture.report(k: 36).html()
        #expect(html.components(separatedBy: "<rect class=\"cell\"").count - 1 == 36 * 36)
        for heading in ["Headline metrics", "Confusion matrix", "Per-class precision and recall", "Most confident mistakes"] {
            #expect(html.contains("<h2>\(heading)"), "missing section \(heading)")
        }
        #expect(html.contains("1,234,567"))
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.hasSuffix("</html>\n"))
    }

    @Test func manyClassesShowTheMostConfusedAndLowestF1Subsets() throws {
        let k = 1000
        let report = try ReportFixture.report(k: k, n: 3000)
        let html = report.html()
        let limit = HTMLReport.chartClassLimit
        #expect(html.components(separatedBy: "<rect class=\"cell\"").count - 1 == limit * limit)
        #expect(html.contains("The \(limit) of \(k) classes most involved in errors"))
        #expect(html.contains("The \(limit) of \(k) classes with the lowest F1"))
        #expect(html.utf8.count < 2_000_000, "page is \(html.utf8.count) bytes")
        let r = report.reports[0]
        // The chosen classes carry at least as many errors as any class left out.
        let chosen = r.classesMostConfused(limit: limit)
        func errors(_ c: Int) -> Int {
            (0..<k).reduce(0) { $0 + ($1 == c ? 0 : r.confusion[c][$1] + r.confusion[$1][c]) }
        }
        let leastChosen = chosen.map(errors).min() ?? 0
        #expect(chosen.count == limit && chosen == chosen.sorted())
        #expect((0..<k).filter { !chosen.contains($0) }.allSatisfy { errors($0) <= leastChosen })
        let worst = r.classesWorstF1(limit: limit)
        #expect(worst.map { r.perClass[$0].f1 } == worst.map { r.perClass[$0].f1 }.sorted())
        #expect(Set(worst).count == limit)
        // They are the lowest: no class left out has a lower F1 than the highest one shown.
        let highestShown = worst.map { r.perClass[$0].f1 }.max() ?? 0
        #expect((0..<k).filter { !worst.contains($0) }.allSatisfy { r.perClass[$0].f1 >= highestShown })
        #expect(Set(worst) != Set(chosen), "the two charts show different subsets here, so each choice is tested")
        // The page's per-class bars are those classes, lowest first.
        let bars = html.components(separatedBy: "<h2>Per-class precision and recall").last ?? ""
        let rowLabel = try NSRegularExpression(pattern: #"dominant-baseline="central"><title>([^<]*)</title>"#)
        let shown = rowLabel.matches(in: bars, range: NSRange(bars.startIndex..., in: bars)).map {
            String(bars[Range($0.range(at: 1), in: bars)!])
        }
        #expect(shown == worst.map { HTMLText.escape(r.perClass[$0].label) }, "bars show \(shown.prefix(5))…")
        // A subset keeps whole-row totals.
        let svg = ConfusionMatrixSVG.subset(r.confusion, labels: r.perClass.map(\.label), classes: [chosen[0]])
        #expect(svg.rowTotals == [r.perClass[chosen[0]].support])
    }

    @Test func imageMistakesAreDataURIsAndTextMistakesAreSnippets() throws {
        let report = try ReportFixture.report(k: 12, imageMistakes: 5)
        #expect(report.mistakes.count == HTMLReport.mistakeLimit)
        let html = report.html()
        let uris = html.components(separatedBy: "src=\"data:image/png;base64,").dropFirst()
        #expect(uris.count == 5)
        // The embedded bytes are the thumbnail: a PNG no larger than 96 px a side.
        let b64 = try #require(uris.first?.prefix { $0 != "\"" })
        let png = try #require(Data(base64Encoded: String(b64)))
        let thumb = try ImageDecoder.decode(bytes: [UInt8](png), name: "thumbnail")
        #expect(thumb.width == 96 && thumb.height == 62)
        let snippets = html.components(separatedBy: "<blockquote class=\"snippet\">").dropFirst()
        #expect(snippets.count == HTMLReport.mistakeLimit - 5)
        let first = try #require(snippets.first?.components(separatedBy: "</blockquote>").first)
        #expect(first.hasPrefix("Review #") && first.contains("&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;"))
        let unescaped = first.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&quot;", with: "\"")
        #expect(unescaped.count == HTMLReport.snippetLimit && unescaped.hasSuffix("…"))
    }

    @Test func pageIsSelfContained() throws {
        for html in [try ReportFixture.report(k: 12).html(), try ReportFixture.report(k: 5, compare: true).html()] {
            let lower = html.lowercased()
            for banned in ["http://", "https://", "<script", "<link", "<iframe", "@import", "url(", "src=\"//", "@font-face"] {
                #expect(!lower.contains(banned), "the page references \(banned)")
            }
            // Every src is a data URI.
            #expect(lower.components(separatedBy: "src=\"").dropFirst().allSatisfy { $0.hasPrefix("data:image/png;base64,") })
        }
    }

    @Test func compareModeShowsBothMetricSetsAndAgreement() throws {
        let report = try ReportFixture.report(k: 5, compare: true)
        let html = report.html()
        let c = try #require(report.comparison)
        #expect(html.contains("<th>A</th><th>B</th><th>B − A</th>"))
        #expect(html.contains(String(format: "%.2f%%", report.reports[0].accuracy * 100)))
        #expect(html.contains(String(format: "%.2f%%", report.reports[1].accuracy * 100)))
        #expect(html.contains("top-1 agreement") && html.contains(String(format: "%.2f%%", c.agreement * 100)))
        #expect(html.contains(String(format: "%.5f", c.meanKL)))
        #expect(html.components(separatedBy: "<rect class=\"cell\"").count - 1 == 2 * 25)
    }

    @Test func binaryReportShowsROCAUC() throws {
        let (truth, probs) = ReportFixture.predictions(n: 200, k: 2, seed: 5)
        let r = Metrics.evaluate(truth: truth, probabilities: probs, labels: ["no", "yes"])
        let auc = try #require(r.rocAUC)
        let m = HTMLReport.ModelInfo(path: "m.bin", name: nil, task: "imageClassifier", labelCount: 2, parameters: 3, provenance: [])
        let html = HTMLReport(models: [m], reports: [r], dataSource: "d").html()
        #expect(html.contains("ROC AUC") && html.contains(String(format: "%.4f", auc)))
        #expect(!(try ReportFixture.report(k: 3).html().contains("ROC AUC")))
    }

    @Test func confidentMistakesAreTheSurestWrongOnes() {
        // Items: 0 right, 1 wrong at 0.9, 2 wrong at 0.6, 3 wrong at 0.9 (tie → lower index first), 4 right.
        let probs: [Float] = [0.8, 0.2, 0.1, 0.9, 0.4, 0.6, 0.1, 0.9, 0.7, 0.3]
        let m = Metrics.confidentMistakes(truth: [0, 0, 0, 0, 0], probabilities: probs, classes: 2, limit: 2)
        #expect(m == [Misprediction(item: 1, predicted: 1, probability: 0.9), Misprediction(item: 3, predicted: 1, probability: 0.9)])
        #expect(Metrics.confidentMistakes(truth: [0, 0, 0, 0, 0], probabilities: probs, classes: 2, limit: 24).map(\.item) == [1, 3, 2])
    }

    @Test func writeIsAtomicAndNeverReplacesAnInput() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mltool-report-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("model.bin").path
        try Data("model".utf8).write(to: URL(fileURLWithPath: input))
        let report = try ReportFixture.report(k: 4)
        #expect(throws: (any Error).self) { try report.write(to: input, inputs: [input]) }
        #expect(try String(contentsOfFile: input, encoding: .utf8) == "model")
        let out = dir.appendingPathComponent("report.html").path
        try report.write(to: out, inputs: [input])
        #expect(try String(contentsOfFile: out, encoding: .utf8) == report.html())
    }

    @Test func snippetsAndNumbers() {
        #expect(HTMLText.snippet("a  b\n\tc", limit: 200) == "a b c")
        #expect(HTMLText.snippet(String(repeating: "x", count: 300), limit: 200).count == 200)
        #expect(HTMLText.grouped(0) == "0" && HTMLText.grouped(999) == "999" && HTMLText.grouped(1000) == "1,000")
        #expect(HTMLText.grouped(-1234567) == "-1,234,567")
        #expect(HTMLText.escape("a\u{1}b") == "a\u{FFFD}b")
    }
}
