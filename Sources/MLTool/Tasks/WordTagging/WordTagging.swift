import Foundation

/// Every setting of the word-tagger pipeline, with its default (the algorithm's own settings are
/// `WordTaggerParameters`, whose defaults live there).
public struct WordTaggerPipelineParameters: Sendable, Equatable {
    /// The tagger's training settings (epochs, patience, validation split, seed, feature pruning).
    public var tagger = WordTaggerParameters()
    /// Share of the sentences kept out of training for the test score when no test data is given (seeded by
    /// `tagger.seed`); 0 trains on everything and reports no test score.
    public var holdoutFraction = 0.2
    /// The CoNLL-U column that holds the tags (`upos`, `xpos`, or `misc:KEY` for a MISC attribute).
    public var tagColumn: TagColumn = .upos
    /// The model's name (the CLI uses the output file's name).
    public var name = "model"
    /// Unlabelled text whose words get Brown clusters (`tagger.wordClusters`) for the cluster features: a CoNLL-U file
    /// (its word forms) or plain text, one tokenized sentence per line (tokens between spaces). nil: no clusters.
    public var unlabeledText: String?
    /// Name lists for the lexicon (`TaggerGazetteer`): lines CLASS<TAB>name. nil: none.
    public var gazetteer: String?

    public init() {}

    /// Throws unless every field is in its domain.
    public func validate() throws {
        try tagger.validate()
        guard holdoutFraction >= 0, holdoutFraction < 1 else {
            throw PipelineError.invalidParameter(name: "holdoutFraction", reason: "\(holdoutFraction) is not in [0, 1)")
        }
    }
}

/// Word tagging end to end — Create ML's `MLWordTagger`, and `NLTagger` with a custom model: train a tagger on tagged
/// sentences (CoNLL-U, two-column CoNLL with BIO/BIOES entity tags, Create ML's JSON), score it on held-out
/// sentences, tag raw text, evaluate on tagged data. The sequence model itself is `MLToolNL.WordTaggerTrainer`
/// (averaged perceptron, Viterbi decoding); this is the one home of the pipeline around it.
public struct WordTaggerTraining: Sendable {
    public let data: String
    public let test: String?
    public let parameters: WordTaggerPipelineParameters

    /// `data`: a tagged file; `test`: tagged test sentences (else a seeded share of `data` is held out).
    public init(data: String, test: String? = nil, parameters: WordTaggerPipelineParameters = .init()) throws {
        try parameters.validate()
        self.data = data; self.test = test; self.parameters = parameters
    }

    /// Whether `path` holds tagged sentences (a `.conllu`, `.conll`/`.bio`/`.iob`… file, or Create ML's JSON array).
    public static func looksLikeTaggedData(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { return false }
        return TaggedDataFormat.detect(path: path) != nil
    }

    /// What training produced.
    public struct Result: Sendable {
        /// The model file's contents (task `wordTagger`), with train, validation and test accuracy in its metrics.
        public var model: Model
        public var tagger: WordTagger
        public var trainSentences: Int
        public var validationSentences: Int
        /// Sentences scored in `test` (held out, or the test file's).
        public var testSentences: Int
        /// Scores on the test sentences (nil with no holdout and no test file).
        public var test: TaggingReport?
        /// Where the test sentences came from: the test file, or "holdout".
        public var testSource: String
        public var epochs: [TaggerEpoch]
        /// The epoch whose weights the tagger keeps (the best validation accuracy).
        public var chosenEpoch: Int
        public var seconds: Double

        /// Writes the model file (atomically).
        public func write(to path: String) throws { try ModelFile.write(model, to: path) }
    }

    /// Loads the data, splits, trains (a `.taggerEpoch` event after each epoch) and scores on the test sentences.
    /// Trains and evaluates; `cancellation` stops it before the fit and after each epoch (`CancellationError`).
    public func train(progress: ((PipelineEvent) -> Void)? = nil, cancellation: Cancellation = Cancellation()) throws -> Result {
        let started = Date()
        let p = parameters
        let corpus = try TaggedCorpus.load(data, tagColumn: p.tagColumn)
        guard !corpus.sentences.isEmpty else { throw PipelineError.badInput(file: data, reason: "no tagged sentences") }
        var training = corpus
        var testCorpus: TaggedCorpus?
        if let test {
            testCorpus = try TaggedCorpus.load(test, tagColumn: p.tagColumn)
        } else if p.holdoutFraction > 0 {
            let (kept, held) = Self.holdout(corpus.sentences, fraction: p.holdoutFraction, seed: p.tagger.seed)
            training.sentences = kept
            testCorpus = TaggedCorpus(source: corpus.source, format: corpus.format, sentences: held)
        }
        progress?(.status("training on \(training.sentences.count) sentences (\(training.tokenCount) tokens) from \(data)"))
        let trainer = try WordTaggerTrainer(parameters: p.tagger)
        // The trainer reports each epoch from the calling thread, between epochs: never concurrently.
        nonisolated(unsafe) let report = progress
        let unlabeled = try p.unlabeledText.map(Self.unlabeledSentences) ?? []
        let gazetteer = try p.gazetteer.map(TaggerGazetteer.read)
        try cancellation.check()
        let r = try trainer.train(training, unlabeled: unlabeled, gazetteer: gazetteer) {
            report?(.taggerEpoch($0))
            try cancellation.check()
        }
        var scores: TaggingReport?
        if let testCorpus, !testCorpus.sentences.isEmpty { scores = r.tagger.evaluate(testCorpus).report }
        let chosen = r.epochs[r.chosenEpoch - 1]
        var metrics = ["train.accuracy": chosen.trainAccuracy]
        if let v = chosen.validationAccuracy { metrics["validation.accuracy"] = v }
        if let scores {
            metrics[test == nil ? "holdout.accuracy" : "test.accuracy"] = scores.accuracy
            if let e = scores.entities { metrics[test == nil ? "holdout.entityF1" : "test.entityF1"] = e.f1 }
        }
        let seconds = Date().timeIntervalSince(started)
        // No timings in the model: the same data and seed give the same bytes.
        let provenance = Provenance(seed: p.tagger.seed, command: command())
        return Result(model: r.tagger.model(name: p.name, metrics: metrics, provenance: provenance), tagger: r.tagger,
                      trainSentences: r.trainSentences, validationSentences: r.validationSentences,
                      testSentences: testCorpus?.sentences.count ?? 0, test: scores, testSource: test ?? "holdout",
                      epochs: r.epochs, chosenEpoch: r.chosenEpoch, seconds: seconds)
    }

    /// The sentences of an unlabelled text file: a CoNLL-U file's word forms, or a plain text's lines split at spaces.
    static func unlabeledSentences(_ path: String) throws -> [[String]] {
        if TaggedDataFormat.detect(path: path) == .conllu {
            return try TaggedCorpus.load(path, format: .conllu).sentences.map(\.tokens)
        }
        let text = try TextDataset.readDocument(path)
        return text.split(whereSeparator: \.isNewline).map { $0.split(whereSeparator: \.isWhitespace).map(String.init) }
            .filter { !$0.isEmpty }
    }

    /// A seeded share of the sentences (at least one, at most all but one), kept in their order on both sides.
    static func holdout(_ sentences: [TaggedSentence], fraction: Double, seed: UInt64) -> ([TaggedSentence], [TaggedSentence]) {
        let n = sentences.count
        let count = min(max(1, Int((Double(n) * fraction).rounded())), n - 1)
        guard count > 0 else { return (sentences, []) }
        // A stream of its own (seed + 1), so the trainer's validation split does not repeat this one.
        let (rest, held) = SeededSplit.indices(count: n, taking: count, seed: seed &+ 1)
        return (rest.map { sentences[$0] }, held.map { sentences[$0] })
    }

    /// The command line that reproduces this training, for the model's provenance.
    func command() -> String {
        WordTaggingTask.Setup(data: data, test: test, parameters: parameters).command(WordTaggingTask.options)
    }
}

/// Tagging with a trained model: raw text through the model's own tokenizer, or tagged data for its scores.
public enum WordTagging {
    /// Tags each text (tokens with their UTF-8 and Unicode-scalar offsets in the text).
    public static func tag(model: Model, path: String = "model", texts: [String]) throws -> [[TaggedToken]] {
        let tagger = try WordTagger(model: model, file: path)
        return texts.map { tagger.tag(text: $0) }
    }

    /// A tagger's scores on tagged sentences, with what its HTML report shows.
    public struct Evaluation: Sendable {
        /// Token accuracy, per-tag precision/recall/F1, the confusion matrix, entity scores for BIO/BIOES tags.
        public var report: TaggingReport
        /// Every sentence with its true and predicted tags.
        public var sentences: [TaggingHTMLReport.Sentence]
        public var model: HTMLReport.ModelInfo
        public var data: String

        /// Writes the self-contained HTML page (scores, confusion matrix, the sentences with wrong tags), never over
        /// the model or the data.
        public func writeReport(to path: String) throws {
            try TaggingHTMLReport(model: model, report: report, dataSource: data, sentences: sentences)
                .write(to: path, inputs: [model.path, data])
        }
    }

    /// The model (read from `path`) on the tagged sentences in `data`.
    public static func evaluate(model: Model, path: String = "model", data: String, tagColumn: TagColumn = .upos) throws
        -> Evaluation {
        let tagger = try WordTagger(model: model, file: path)
        let corpus = try TaggedCorpus.load(data, tagColumn: tagColumn)
        guard !corpus.sentences.isEmpty else { throw PipelineError.badInput(file: data, reason: "no tagged sentences") }
        let (report, predicted) = tagger.evaluate(corpus)
        return Evaluation(report: report, sentences: zip(corpus.sentences, predicted).map {
            TaggingHTMLReport.Sentence(tokens: $0.tokens, truth: $0.tags, predicted: $1)
        }, model: HTMLReport.ModelInfo(path: path, model: model), data: data)
    }
}

extension TaggingReport {
    /// The scores as `mltool eval` prints them: accuracy, a row per tag, entity scores for BIO/BIOES tags.
    public func text(title: String) -> String {
        var lines = ["\(title): \(sentences) sentences, \(tokens) tokens",
                     String(format: "  accuracy   %.4f (macro F1 %.4f)", accuracy, macro.f1),
                     "  tag              precision  recall      F1  support"]
        for m in perTag {
            lines.append("  " + m.label.padding(toLength: max(16, m.label.count), withPad: " ", startingAt: 0)
                + String(format: " %9.4f  %6.4f  %6.4f  %7d", m.precision, m.recall, m.f1, m.support))
        }
        // The most frequent confusions (true → predicted), from the confusion matrix.
        var pairs: [(count: Int, truth: Int, predicted: Int)] = []
        for (i, row) in confusion.enumerated() { for (j, n) in row.enumerated() where i != j && n > 0 { pairs.append((n, i, j)) } }
        pairs.sort { ($0.count, $1.truth, $1.predicted) > ($1.count, $0.truth, $0.predicted) }
        if !pairs.isEmpty {
            lines.append("  confused   " + pairs.prefix(5).map { "\(labels[$0.truth]) → \(labels[$0.predicted]) \($0.count)" }
                .joined(separator: ", "))
        }
        if let e = entities {
            lines.append(String(format: "  entities   precision %.4f, recall %.4f, F1 %.4f (%d true, %d predicted, %d correct)",
                                e.precision, e.recall, e.f1, e.trueEntities, e.predictedEntities, e.correctEntities))
        }
        return lines.joined(separator: "\n")
    }
}
