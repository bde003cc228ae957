import Foundation

extension TextClassificationTask {
    public static func servingPredictor(model: Model, path: String) throws -> any ServingPredictor {
        TextClassificationServing(classifier: try TextClassifier(model: model, path: path), path: path)
    }
}

/// A text classifier behind `mltool serve`: a batch of texts is one call of `TextClassifier.probabilities`.
struct TextClassificationServing: ServingPredictor {
    let classifier: TextClassifier
    let path: String
    var takesImages: Bool { false }

    func predict(_ inputs: [ServingInput]) -> [Result<String, Error>] {
        let texts = inputs.map { try? $0.text(for: path) }
        let ready = texts.compactMap { $0 }
        let n = classifier.labels.count
        let probabilities: [Float]
        do { probabilities = try classifier.probabilities(ready) } catch { return inputs.map { _ in .failure(error) } }
        var row = 0
        return texts.map { text in
            guard let text else { return .failure(PipelineError.badInput(file: path, reason: "a text model takes texts, not images")) }
            defer { row += 1 }
            let ranked = Classification.ranked(Array(probabilities[(row * n)..<((row + 1) * n)]), labels: classifier.labels,
                                               options: ClassificationOptions(maximumCount: 3))
            return .success(ClassifierTasks.predictionJSON(text, ranked, key: "text"))
        }
    }
}
