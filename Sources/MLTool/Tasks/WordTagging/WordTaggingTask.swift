import Foundation
import MLToolCore
import MLToolData

/// Word tagging (Create ML's `MLWordTagger`, `NLTagger` with a custom model): tagged sentences in CoNLL-U, two-column
/// CoNLL (BIO/BIOES entity tags) or Create ML's JSON; an averaged perceptron with Viterbi decoding.
public enum WordTaggingTask: TaskKind {
    public typealias Setup = TrainingSetup<WordTaggerPipelineParameters>
    public static let name = "tagger"
    public static let title = "Word tagging"
    public static var trainingHelp: String {
        """
        CoNLL-U (.conllu; --tag-column), two-column CoNLL (.conll, .bio, .iob, .bioes: token and tag, BIO/BIOES tags
        give entity scores) or Create ML's JSON ([{"tokens": [...], "labels": [...]}]). An averaged perceptron over
        lexical features with Viterbi decoding (\(WordTaggerPipelineParameters().tagger.epochs) epochs at most, the best on validation kept); the model
        carries its tokenizer.
        """
    }

    static let tagColumn = OptionDeclaration("--tag-column", value: "upos|xpos|misc:KEY", help: "The CoNLL-U column to learn or score (default upos).")

    static let unlabeledText = OptionDeclaration("--unlabeled-text", value: "FILE", help: "Text whose words get Brown clusters (CoNLL-U, or a tokenized sentence a line).")

    static let gazetteer = OptionDeclaration("--gazetteer", value: "FILE", help: "Name lists as features (lines CLASS<TAB>name, ≤ \(TaggerGazetteer.maxClasses) classes).")

    /// The options, in the order the recorded command lists them.
    public static let options: OptionTable<Setup> = {
        let d = WordTaggerPipelineParameters()
        return OptionTable([
            TrainingOptions.out(\.name, default: d.name), TrainingOptions.test(),
            TrainingOptions.holdout(\.holdoutFraction, default: d.holdoutFraction),
            TaskOption(tagColumn, set: { s, v in s.parameters.tagColumn = try TagColumn(parsing: v) },
                       record: { s in s.parameters.tagColumn == d.tagColumn ? [] : ["--tag-column", s.parameters.tagColumn.description] }),
            TrainingOptions.validation(\.tagger.validation), TrainingOptions.seed(\.tagger.seed, default: d.tagger.seed),
            TrainingOptions.int(OptionDeclaration("--epochs", value: "N", help: "Epochs at most (default \(d.tagger.epochs))."),
                                \.tagger.epochs, default: d.tagger.epochs),
            TaskOption(unlabeledText, set: { s, v in s.parameters.unlabeledText = v },
                       record: { s in s.parameters.unlabeledText.map { ["--unlabeled-text", $0] } ?? [] }),
            TaskOption(gazetteer, set: { s, v in s.parameters.gazetteer = v },
                       record: { s in s.parameters.gazetteer.map { ["--gazetteer", $0] } ?? [] }),
            TrainingOptions.int(OptionDeclaration("--word-clusters", value: "N", kind: .integer,
                                                  help: "Brown clusters learned from --unlabeled-text (default \(d.tagger.wordClusters))."),
                                \.tagger.wordClusters, default: d.tagger.wordClusters),
            TrainingOptions.threadsAccepted(),
        ])
    }()

    public static var trainOptions: [OptionDeclaration] { options.declarations }
    public static var evaluationOptions: [OptionDeclaration] { [tagColumn] }
    public static var predictionOptions: [OptionDeclaration] { [TaskOptions.text] }

    public static func recognizes(data: String, values: OptionValues) -> Bool { WordTaggerTraining.looksLikeTaggedData(data) }

    public static func handles(model: Model) -> Bool { model.metadata.task == .wordTagger }

    public static func predictsOn(file: String, model: Model) -> Bool { file.lowercased().hasSuffix(".txt") }

    public static func train(_ request: TaskRequest) throws {
        let setup = try Setup.reading(request, options, parameters: WordTaggerPipelineParameters()), path = setup.data
        let training = try WordTaggerTraining(data: path, test: setup.test, parameters: setup.parameters)
        let r = try training.train(progress: request.progress, cancellation: request.cancellation)
        try r.write(to: setup.output)
        let heldOut = setup.test == nil ? "holdout" : "test"
        request.print("trained a word tagger for \(r.model.metadata.labels.count) tags on \(r.trainSentences) sentences (\(r.validationSentences) validation, \(r.testSentences) \(heldOut))")
        request.print(String(format: "  accuracy   train %.4f, validation %@, %@ %@", r.model.metadata.metrics["train.accuracy"] ?? 0,
                             r.model.metadata.metrics["validation.accuracy"].map { String(format: "%.4f", $0) } ?? "-",
                             heldOut, r.test.map { String(format: "%.4f", $0.accuracy) } ?? "-"))
        if let e = r.test?.entities { request.print(String(format: "  entities   precision %.4f, recall %.4f, F1 %.4f", e.precision, e.recall, e.f1)) }
        request.print(String(format: "  epochs     best %d of %d, %.1f s", r.chosenEpoch, r.epochs.count, r.seconds))
        request.print("  wrote      \(setup.output)")
    }

    /// Token accuracy, per-tag scores and entity scores for BIO/BIOES tags, on tagged DATA.
    public static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws {
        guard let data else {
            throw PipelineError.invalidParameter(name: "DATA", reason: "a word tagger is evaluated on tagged DATA (CoNLL-U, CoNLL or JSON)")
        }
        let v = request.values
        let ev = try WordTagging.evaluate(model: try ModelLoader.load(models[0]), path: models[0], data: data,
                                          tagColumn: try TagColumn(parsing: v.string("--tag-column") ?? "upos"))
        try request.writeReport(ev.writeReport(to:))
        request.print(v.has("--json") ? try TaskOutput.json(ev.report) : ev.report.text(title: "\(models[0]) on \(data)"))
    }

    /// Each text's tokens with their tags (`--json`: Unicode-scalar and UTF-8 offsets too).
    public static func predict(_ request: TaskRequest, model: Model, modelPath: String, inputs: [String]) throws {
        let texts = try inputs.map { (name: $0, key: "file", text: try TextDataset.readDocument($0)) }
            + request.values.strings("--text").map { (name: $0, key: "text", text: $0) }
        for (t, tokens) in zip(texts, try WordTagging.tag(model: model, path: modelPath, texts: texts.map(\.text))) {
            guard request.values.has("--json") else {
                request.print(t.key == "file" ? t.name : "\"" + TaskOutput.snippet(t.name) + "\"")
                request.print("  " + tokens.map { "\($0.span.text)/\($0.tag)" }.joined(separator: " "))
                continue
            }
            request.print(predictionJSON(t.name, tokens, key: t.key))
        }
    }

    /// One tagged text as `predict --json` prints it (and `mltool serve` answers it): `{"<key>": name, "tokens": […]}`.
    static func predictionJSON(_ name: String, _ tokens: [TaggedToken], key: String) -> String {
        let items = tokens.map {
            "{\"token\": \(TaskOutput.jsonString($0.span.text)), \"tag\": \(TaskOutput.jsonString($0.tag)), \"start\": \($0.span.scalars.lowerBound), "
                + "\"end\": \($0.span.scalars.upperBound), \"utf8\": [\($0.span.utf8.lowerBound), \($0.span.utf8.upperBound)]}"
        }
        return "{\"\(key)\": \(TaskOutput.jsonString(name)), \"tokens\": [\(items.joined(separator: ", "))]}"
    }
}
