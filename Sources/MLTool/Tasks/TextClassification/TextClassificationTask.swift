import Foundation
import MLToolCore
import MLToolData

/// Text classification (Create ML's `MLTextClassifier`): label folders of .txt documents, or a CSV/TSV/JSON Lines
/// table; word (and character) n-grams weighted by TF-IDF and a max-entropy classifier fitted by seeded SGD.
public enum TextClassificationTask: TaskKind {
    public typealias Setup = TrainingSetup<TextClassifierParameters>
    public static let name = "text"
    public static let title = "Text classification"
    public static let trainingHelp = """
        Label folders of .txt files (one document each), or a CSV, TSV or JSON Lines file with --text-column and
        --label-column. Features are word n-grams (and optional character n-grams) weighted by TF-IDF; the classifier
        is max-entropy (the same regression, on sparse rows), fitted by seeded SGD: the L2 strength is chosen on the
        validation split (3 of every 5 epochs per value), then the winner is refitted on training + validation
        documents. --max-iterations adds L-BFGS after SGD; --epochs 0 --max-iterations N fits by L-BFGS alone.
        --embedding adds each text's sentence embedding (standardised) to its n-grams, cached by content.
        """

    /// The options, in the order the recorded command lists them.
    public static let options: OptionTable<Setup> = {
        let d = TextClassifierParameters()
        typealias O = TaskOption<Setup>
        @Sendable func range(_ r: [Int]) -> String { r.map(String.init).joined(separator: "-") }
        return OptionTable([
            TrainingOptions.out(\.name, default: d.name), TrainingOptions.test(),
            TrainingOptions.holdout(\.holdoutFraction, default: d.holdoutFraction),
            TrainingOptions.validation(\.validation), TrainingOptions.seed(\.seed, default: d.seed),
            O(OptionDeclaration("--ngrams", value: "MIN-MAX", help: "Word n-gram lengths (default \(range(d.wordNgrams)))."),
              set: { s, v in s.parameters.wordNgrams = try ParameterText.range(v, option: "--ngrams") ?? d.wordNgrams },
              record: { s in s.parameters.wordNgrams == d.wordNgrams ? [] : ["--ngrams", range(s.parameters.wordNgrams)] }),
            // Either feature flag turns the short-text rule off; a rule other than auto is recorded as the flags
            // that give it (both written here, before --min-count).
            O(OptionDeclaration("--char-ngrams", value: "MIN-MAX", help: "Also character n-grams within words, e.g. 3-5 (default off; \(range(d.shortTextCharNgrams)) for short texts, see --min-count)."),
              set: { s, v in
                s.parameters.charNgrams = try ParameterText.range(v, option: "--char-ngrams")
                s.parameters.shortTexts = .never
            }, record: { s in
                let p = s.parameters
                if p.shortTexts == .always { return ["--char-ngrams", range(p.shortTextCharNgrams), "--min-count", "\(p.shortTextMinCount)"] }
                return p.charNgrams.map { ["--char-ngrams", range($0)] } ?? []
            }),
            O(OptionDeclaration("--min-count", value: "N", help: "Keep terms found in at least N documents (default \(d.minCount); \(d.shortTextMinCount) for short texts: median ≤ \(d.shortTextMedianWords) words per document. Either flag turns that rule off)."),
              set: { s, v in
                s.parameters.minCount = try OptionText.int("--min-count", v)
                guard s.parameters.minCount >= 1 else { throw OptionText.refuse("--min-count", "--min-count must be ≥ 1") }
                s.parameters.shortTexts = .never
            }, record: { s in
                let p = s.parameters
                guard p.shortTexts != .always else { return [] }
                return p.minCount != d.minCount || (p.shortTexts == .never && p.charNgrams == nil) ? ["--min-count", "\(p.minCount)"] : []
            }),
            O(OptionDeclaration("--weighting", value: "tfidf|count|binary", help: "Feature weighting (default \(d.weighting))."), set: { s, v in
                guard ["tfidf", "count", "binary"].contains(v) else { throw OptionText.refuse("--weighting", "--weighting must be tfidf, count or binary") }
                s.parameters.weighting = v
            }, record: { s in s.parameters.weighting == d.weighting ? [] : ["--weighting", s.parameters.weighting] }),
            O(OptionDeclaration("--hash-bits", value: "N", help: "Hash terms into 2^N buckets instead of a vocabulary."), set: { s, v in
                let bits = try OptionText.int("--hash-bits", v)
                guard (1...24).contains(bits) else { throw OptionText.refuse("--hash-bits", "--hash-bits must be in 1...24") }
                s.parameters.hashBits = bits
            }, record: { s in s.parameters.hashBits.map { ["--hash-bits", "\($0)"] } ?? [] }),
            O(OptionDeclaration("--stop-words", value: "FILE", help: "Words to drop, one per line (default none)."), set: { s, v in
                s.parameters.stopWords = try TextDataset.readDocument(v).split(whereSeparator: \.isNewline)
                    .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
            }),
            O(OptionDeclaration("--embedding", value: "none|auto|MODEL", help: "Also sentence embeddings of a sentence encoder MODEL (make models builds models/minilm.bin; the model then holds it); auto: the bundled one, for short texts, if the validation split prefers it (default \(d.embedding.word))."),
              set: { s, v in s.parameters.embedding = .init(v) },
              record: { s in s.parameters.embedding == d.embedding ? [] : ["--embedding", s.parameters.embedding.word] }),
            O(OptionDeclaration("--embedding-weight", value: "W", kind: .number, help: "The embedding block's norm beside the TF-IDF row's 1 (default \(d.embeddingWeight))."),
              set: { s, v in
                s.parameters.embeddingWeight = try OptionText.double("--embedding-weight", v)
                guard s.parameters.embeddingWeight > 0, s.parameters.embeddingWeight.isFinite else {
                    throw OptionText.refuse("--embedding-weight", "--embedding-weight must be > 0")
                }
            }, record: { s in s.parameters.embeddingWeight == d.embeddingWeight ? [] : ["--embedding-weight", "\(s.parameters.embeddingWeight)"] }),
            TrainingOptions.l2(\.l2),
            TrainingOptions.int(OptionDeclaration("--epochs", value: "N", help: "Seeded SGD epochs (default \(d.epochs)), before any L-BFGS iterations."),
                                \.epochs, default: d.epochs),
            TrainingOptions.int(OptionDeclaration("--max-iterations", value: "N", help: "L-BFGS iterations after SGD (default \(d.maxIterations): SGD only)."),
                                \.maxIterations, default: d.maxIterations),
            TrainingOptions.earlyStopping(\.earlyStoppingPatience), TrainingOptions.balance(\.balanceClasses),
            O(OptionDeclaration("--text-column", value: "NAME", help: "CSV column with the documents (default text)."),
              set: { s, v in s.textColumn = v }, record: { s in s.textColumn == "text" ? [] : ["--text-column", s.textColumn] }),
            TrainingOptions.labelColumn(), TrainingOptions.threadsAccepted(), TrainingOptions.cache(\.cacheDirectory),
        ])
    }()

    public static var trainOptions: [OptionDeclaration] { options.declarations }
    public static var evaluationOptions: [OptionDeclaration] { ClassifierTasks.evaluationOptions }
    public static var predictionOptions: [OptionDeclaration] { [ClassifierTasks.top, TaskOptions.text] }

    /// Label folders holding more text files than images among their first files, or a table of documents.
    public static func recognizes(data: String, values: OptionValues) -> Bool {
        TextDataset.looksLikeText(data, textColumn: values.string("--text-column") ?? "text")
    }

    public static func handles(model: Model) -> Bool { model.metadata.task == .textClassifier }

    public static func predictsOn(file: String, model: Model) -> Bool { file.lowercased().hasSuffix(".txt") }

    public static func train(_ request: TaskRequest) throws {
        let started = Date()
        let setup = try Setup.reading(request, options, parameters: TextClassifierParameters())
        let (data, test) = setup.trainingData
        let r = try TextClassifierTrainer(data: data, testData: test, parameters: setup.parameters).train(progress: request.progress, cancellation: request.cancellation)
        try r.write(to: setup.output)
        request.progress(.phase("write", seconds: Date().timeIntervalSince(started) - r.totalSeconds))
        let config = r.model.metadata.text ?? TextConfig()
        let features = "  features   \(r.featureCount ?? 0) \(config.hashBits == nil ? "terms" : "hashed buckets"), \(config.weighting), "
            + "word n-grams \(config.wordNgrams)\(config.charNgrams.map { ", char n-grams \($0)" } ?? "")"
            + (config.embeddingMeanTensor == nil ? "" : ", sentence embeddings (\(r.extractedCount) encoded)")
        ClassifierTasks.printSummary(request, r, items: "documents", details: [features],
                                     seconds: String(format: "features %.2f, fit %.2f, total %.2f", r.featureSeconds, r.fitSeconds,
                                                     Date().timeIntervalSince(started)),
                                     output: setup.output)
    }

    public static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws {
        try ClassifierTasks.evaluate(request, models: models, data: data)
    }

    /// Files (their whole text) and `--text` strings.
    public static func predict(_ request: TaskRequest, model: Model, modelPath: String, inputs: [String]) throws {
        let options = try ClassifierTasks.rankingOptions(request.values)
        let classifier = try TextClassifier(model: model, path: modelPath)
        var failures = ClassifierTasks.Failures(progress: request.progress)
        var texts = [(name: String, isFile: Bool, text: String)]()
        for file in inputs {
            do { texts.append((file, true, try TextDataset.readDocument(file))) } catch { failures.add(error) }
        }
        texts += request.values.strings("--text").map { ($0, false, $0) }
        let probs = try classifier.probabilities(texts.map(\.text))
        let n = classifier.labels.count
        for (i, t) in texts.enumerated() {
            let ranked = Classification.ranked(Array(probs[(i * n)..<((i + 1) * n)]), labels: classifier.labels, options: options)
            if t.isFile {
                ClassifierTasks.printPrediction(request, t.name, ranked)
            } else {
                ClassifierTasks.printPrediction(request, t.name, ranked, key: "text", title: "\"" + TaskOutput.snippet(t.name) + "\"")
            }
        }
        try failures.check(of: inputs.count, noun: "files", allFatal: !request.values.has("--text"))
    }
}
