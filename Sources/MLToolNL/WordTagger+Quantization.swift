import MLToolCore
import MLToolQuant

extension WordTagger {
    /// The model with its weight matrix compressed by `Quantizer` (int8 per tag column by default: one scale per
    /// tag); transitions, keys and lexicon stay as they are. Returns the model and the quantizer's report.
    public static func quantize(_ model: Model, options: QuantizeOptions = QuantizeOptions(mode: .linear, bits: 8))
        throws -> (Model, [TensorQuantReport]) {
        guard model.metadata.task == .wordTagger else {
            throw TaggerError.invalidModel(file: model.metadata.name ?? "model", what: "task", expected: "wordTagger",
                                           actual: model.metadata.task.rawValue)
        }
        return try Quantizer.quantize(model, options)
    }
}
