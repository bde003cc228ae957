import Foundation

extension ImageClassificationTask {
    public static func servingPredictor(model: Model, path: String) throws -> any ServingPredictor {
        ImageClassificationServing(classifier: try ImageClassifier(model: model, path: path))
    }
    public static func previewInput(model: Model) -> PreviewInput? { PreviewInput(takes: .images) }
}

/// An image classifier behind `mltool serve`: a batch decodes on every core and is one run of the network
/// (`ImageClassifier.classify(batch:)`), answered as `predict --json`'s lines.
struct ImageClassificationServing: ServingPredictor {
    let classifier: ImageClassifier

    func predict(_ inputs: [ServingInput]) -> [Result<String, Error>] {
        let sources = inputs.map { input -> ImageClassifier.Source in
            switch input {
            case .image(let bytes, let name): return .data(Data(bytes), name: name)
            case .text, .row: return .data(Data(), name: "not an image")
            }
        }
        return zip(inputs, classifier.classify(batch: sources, options: ClassificationOptions(maximumCount: ClassifierTasks.defaultTop))).map { input, result in
            guard case .image(_, let name) = input else {
                return .failure(PipelineError.badInput(file: "request", reason: "an image classifier takes images, not texts or rows"))
            }
            return result.map { ClassifierTasks.predictionJSON(name, $0) }
        }
    }
}
