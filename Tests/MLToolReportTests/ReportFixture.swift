import Foundation
import MLToolCore
import MLToolData
import MLToolEval

/// Synthetic reports: `k` classes with names of mixed lengths (one is `<script>&"`), seeded predictions that are
/// mostly right, and mistakes previewed either as PNG thumbnails or as text.
enum ReportFixture {
    static let hostileLabel = "<script>&\""

    static func labels(_ k: Int) -> [String] {
        let names = ["tabby cat", "golden retriever", "German shepherd, German shepherd dog", hostileLabel, "ox",
                     "street sign", "espresso maker", "a", "traffic light, traffic signal, stoplight", "bagel"]
        return (0..<k).map { i in i < names.count ? names[i] : "class_\(i)" + (i % 3 == 0 ? "_with_a_longer_name" : "") }
    }

    /// Probabilities (n × k) whose argmax is right about 80% of the time.
    static func predictions(n: Int, k: Int, seed: UInt64) -> (truth: [Int], probabilities: [Float]) {
        var rng = SplitMix64(seed: seed)
        var truth = [Int](), probs = [Float]()
        for _ in 0..<n {
            let t = Int(rng.next() % UInt64(k))
            var row = (0..<k).map { _ in Float(rng.next() % 1000) / 1000 * 0.5 }
            let winner = rng.next() % 10 < 8 ? t : Int(rng.next() % UInt64(k))
            row[winner] += 3 + Float(rng.next() % 1000) / 200
            let sum = row.reduce(0, +)
            truth.append(t)
            probs += row.map { $0 / sum }
        }
        return (truth, probs)
    }

    /// A `w`×`h` RGB gradient with a diagonal stripe, so thumbnails are not flat.
    static func image(width w: Int, height h: Int) -> RGBImage {
        var px = [UInt8]()
        px.reserveCapacity(w * h * 3)
        for y in 0..<h {
            for x in 0..<w {
                let stripe = abs(x - y) < 4
                px += [UInt8(x * 255 / max(1, w - 1)), stripe ? 20 : UInt8(y * 255 / max(1, h - 1)), stripe ? 20 : 160]
            }
        }
        return RGBImage(width: w, height: h, pixels: px)
    }

    /// A report with `k` classes; the first `imageMistakes` mistakes have thumbnails, the others text.
    static func report(k: Int, n: Int = 600, imageMistakes: Int = 12, compare: Bool = false) throws -> HTMLReport {
        let labels = labels(k)
        let (truth, probs) = predictions(n: n, k: k, seed: 7)
        let a = Metrics.evaluate(truth: truth, probabilities: probs, labels: labels, topK: 5)
        var reports = [a]
        var comparison: ModelComparison?
        let probsB = predictions(n: n, k: k, seed: 8).probabilities
        if compare {
            reports.append(Metrics.evaluate(truth: truth, probabilities: probsB, labels: labels, topK: 5))
            comparison = ModelComparison.compare(probs, probsB, classes: k)
        }
        let thumb = try PNGEncoder.encode(image(width: 140, height: 90).thumbnail(maxSide: 96))
        let wrong = Metrics.confidentMistakes(truth: truth, probabilities: probs, classes: k, limit: HTMLReport.mistakeLimit)
        let mistakes = wrong.enumerated().map { j, m in
            HTMLReport.Mistake(
                path: "data/\(labels[truth[m.item]])/item \(m.item).png", trueLabel: labels[truth[m.item]],
                predictedLabel: labels[m.predicted], probability: Double(m.probability),
                preview: j < imageMistakes ? .png(thumb)
                    : .text("Review #\(m.item): <b>bold</b> & \"quoted\" " + String(repeating: "long text ", count: 40)),
                other: compare ? (labels[0], 0.5) : nil)
        }
        let model = HTMLReport.ModelInfo(
            path: "models/<model>.bin", name: "synthetic", task: "imageClassifier", labelCount: k, parameters: 1_234_567,
            provenance: [("made with", "mltool test"), ("command", "mltool train data/ --seed 1")])
        return HTMLReport(models: compare ? [model, model] : [model], reports: reports, dataSource: "data/ & <more>",
                          comparison: comparison, mistakes: mistakes)
    }
}
