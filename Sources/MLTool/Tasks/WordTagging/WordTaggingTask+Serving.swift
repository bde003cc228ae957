import Foundation
import MLToolNL

extension WordTaggingTask {
    public static func servingPredictor(model: Model, path: String) throws -> any ServingPredictor {
        WordTaggingServing(tagger: try WordTagger(model: model, file: path), path: path)
    }
    public static func previewInput(model: Model) -> PreviewInput? { PreviewInput(takes: .texts) }
}

/// A word tagger behind `mltool serve`: each text tagged as `predict --json` tags it.
struct WordTaggingServing: ServingPredictor {
    let tagger: WordTagger
    let path: String

    func predict(_ inputs: [ServingInput]) -> [Result<String, Error>] {
        inputs.map { input in
            Result { let text = try input.text(for: path); return WordTaggingTask.predictionJSON(text, tagger.tag(text: text), key: "text") }
        }
    }
}
