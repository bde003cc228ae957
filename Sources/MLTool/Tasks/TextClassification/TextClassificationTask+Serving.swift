import Foundation

extension TextClassificationTask {
    public static func servingPredictor(model: Model, path: String) throws -> any ServingPredictor {
        TextClassificationServing(classifier: try TextClassifier(model: model, path: path), path: path)
    }
    public static func previewInput(model: Model) -> PreviewInput? { PreviewInput(takes: .texts) }
}

/// A text classifier behind `mltool serve`: a batch of texts is one call of `TextClassifier.probabilities`.
struct TextClassificationServing: ServingPredictor {
    let classifier: TextClassifier
    let path: String

    func predict(_ inputs: [ServingInput]) -> [Result<String, Error>] {
        let texts = inputs.map { input in Result { try input.text(for: path) } }
        let ready = texts.compactMap { try? $0.get() }
        let n = classifier.labels.count
        let probabilities: [Float]
        do { probabilities = try classifier.probabilities(ready) } catch { return inputs.map { _ in .failure(error) } }
        var row = 0
        return texts.map { result in
            result.map { text in
                defer { row += 1 }
                let ranked = Classification.ranked(Array(probabilities[(row * n)..<((row + 1) * n)]), labels: classifier.labels,
                                                   options: ClassificationOptions(maximumCount: ClassifierTasks.defaultTop))
                return ClassifierTasks.predictionJSON(text, ranked, key: "text")
            }
        }
    }
}
