import Foundation
import MLToolCore
import MLToolData
import MLToolEval

extension Evaluation {
    /// Writes `eval --report`: the HTML page for `reports` (one per model), with previews of the first model's most
    /// confident mistakes (image thumbnails ≤ 96 px, or text snippets). Never replaces a model or data file.
    public static func writeReport(to path: String, models: [Model], modelPaths: [String], items: [LabeledItem],
                            truth: [Int], probabilities: [[Float]], reports: [EvaluationReport],
                            comparison: ModelComparison?, dataSource: String, dataPath: String?) throws {
        let labels = models[0].metadata.labels
        let k = labels.count
        let wrong = Metrics.confidentMistakes(truth: truth, probabilities: probabilities[0], classes: k,
                                              limit: HTMLReport.mistakeLimit)
        let mistakes = wrong.map { m -> HTMLReport.Mistake in
            let item = items[m.item]
            var other: (label: String, probability: Double)?
            if probabilities.count > 1 {
                let row = Array(probabilities[1][(m.item * k)..<((m.item + 1) * k)])
                let b = Metrics.argmax(row)
                other = (labels[b], Double(row[b]))
            }
            return HTMLReport.Mistake(path: item.path, trueLabel: item.label, predictedLabel: labels[m.predicted],
                                      probability: Double(m.probability), preview: preview(item, task: models[0].metadata.task),
                                      other: other)
        }
        var source = dataSource
        if dataPath == nil, let root = models[0].metadata.split?.root { source += " of \(root)" }
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime]
        let report = HTMLReport(
            models: zip(modelPaths, models).map { HTMLReport.ModelInfo(path: $0, model: $1) }, reports: reports,
            dataSource: source, comparison: comparison, mistakes: mistakes, generated: iso.string(from: Date()))
        try report.write(to: path, inputs: modelPaths + (dataPath.map { [$0] } ?? []) + items.map(\.path))
    }

    /// A thumbnail or text snippet for `item`; `.none` when it cannot be read any more.
    private static func preview(_ item: LabeledItem, task: ModelMetadata.Task) -> HTMLReport.Preview {
        if task == .textClassifier {
            guard let text = item.text ?? (try? TextDataset.readDocument(item.path)) else { return .none }
            return .text(text)
        }
        guard let image = try? ImageDecoder.decode(path: item.path),
              let png = try? PNGEncoder.encode(image.thumbnail(maxSide: 96), name: item.path) else { return .none }
        return .png(png)
    }
}
