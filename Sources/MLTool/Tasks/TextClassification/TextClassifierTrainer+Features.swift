import Foundation
import MLToolCore
import MLToolData
import MLToolTrain

extension TextClassifierTrainer {
    /// The documents of each split, and the label indices of the two the head learns from.
    struct Splits {
        var train: [TextItem], validation: [TextItem], holdout: [TextItem]
        var trainLabels: [Int], validationLabels: [Int]

        /// Every document in corpus order: training, validation, holdout.
        var documents: [TextItem] { train + validation + holdout }
    }

    /// One feature set fitted: every document's terms, the vocabulary and idf the final model keeps, the matrix it
    /// learns from, and the head the L2 search chose on the validation split.
    struct FeatureFit {
        var parameters: TextClassifierParameters
        var config: TextConfig
        /// How any document's row is computed (its terms, the fitted vocabulary, its embedding).
        var rows: FeatureRows
        /// Training rows, then validation rows when `refits` (the refit learns from both).
        var fitMatrix: CSRMatrix
        var head: LogisticRegressionModel
        var featureSeconds: Double

        var corpus: TermCorpus { rows.corpus }
        var fitted: TermCorpus.Fitted { rows.fitted }
    }

    /// Every document's features: its n-gram row and, with sentence embeddings, the standardised embedding after it.
    struct FeatureRows: Sendable {
        var corpus: TermCorpus
        var fitted: TermCorpus.Fitted
        var embedded: Embedded?
        var block: EmbeddingBlock?

        /// The rows of the documents at `rows` (corpus order: training, validation, holdout).
        func matrix(_ rows: [Int]) -> CSRMatrix {
            let m = corpus.rows(rows, fitted)
            guard let block, let embedded else { return m }
            return block.appending(to: m, rows: rows, of: embedded.values)
        }

        /// The head's inputs: the n-gram features and the embedding's D.
        var featureCount: Int { fitted.featureCount + (block?.dimension ?? 0) }
    }

    /// Every document's sentence embedding (corpus order: training, validation, holdout), n × D.
    struct Embedded: Sendable {
        var source: TextEmbeddingFeatures
        var values: [Float]
        /// How many the encoder computed (the others came from the cache).
        var encoded: Int
    }

    /// Tokenizes every document once under `p`'s features; the vocabulary and idf come from the documents the
    /// final model learns from (training + validation when the winner is refitted on both: the validation texts then
    /// count towards document frequencies, never their labels), and the head's L2 strength is searched on the
    /// validation split. With `refits`, the search only has to rank the strengths: 3 of every 5 SGD epochs and at
    /// most 30 L-BFGS iterations per value (on the Debian descriptions 3 and 5 epochs pick the same strength).
    static func fitFeatures(_ p: TextClassifierParameters, _ s: Splits, embedded: Embedded?, classes: Int,
                            options: LogisticRegressionOptions, refits: Bool, source: String,
                            emit: @escaping (PipelineEvent) -> Void, phase: (String) -> Void) throws -> FeatureFit {
        let start = Date()
        let config = try p.textConfig()
        let corpus = try TermCorpus(documents: s.documents.map(\.text), config: config)
        phase("corpus")
        let trainRows = Array(0..<s.train.count)
        let validationRows = Array(s.train.count..<(s.train.count + s.validation.count))
        let fitted = corpus.vectorizer(fittedOn: refits ? trainRows + validationRows : trainRows)
        phase("vocabulary")
        guard fitted.featureCount > 0 else {
            throw PipelineError.badInput(file: source, reason: "the training documents contain no words")
        }
        // Standardised on the training split alone (the validation rows are what the search ranks on).
        let block = embedded.map {
            EmbeddingBlock(fittedOn: 0..<s.train.count, of: $0.values, dimension: $0.source.encoder.dimension,
                           weight: p.embeddingWeight)
        }
        let rows = FeatureRows(corpus: corpus, fitted: fitted, embedded: embedded, block: block)
        let fitMatrix = rows.matrix(refits ? trainRows + validationRows : trainRows)
        let trainMatrix = refits ? fitMatrix.rows(0..<s.train.count) : fitMatrix
        let validationMatrix = validationRows.isEmpty ? nil
            : refits ? fitMatrix.rows(s.train.count..<fitMatrix.rows) : rows.matrix(validationRows)
        phase("vectorize")
        let featureSeconds = Date().timeIntervalSince(start)
        var search = options
        if refits {
            search.maxIterations = min(options.maxIterations, 30)
            if search.sgdEpochs > 1 { search.sgdEpochs = (3 * search.sgdEpochs + 4) / 5 }
        }
        let head = try LogisticRegression.fit(
            sparse: trainMatrix, labels: s.trainLabels, classes: classes,
            validation: validationMatrix.map { ($0, s.validationLabels) }, options: search, progress: { emit(.iteration($0)) })
        phase("search")
        return FeatureFit(parameters: p, config: config, rows: rows, fitMatrix: fitMatrix, head: head,
                          featureSeconds: featureSeconds)
    }

    /// The fit with the best validation accuracy; the first (the rule's own choice) on a tie or with no validation.
    static func choose(_ fits: [FeatureFit]) -> Int {
        var best = 0
        for (i, f) in fits.enumerated().dropFirst()
        where (f.head.validationAccuracy ?? 0) > (fits[best].head.validationAccuracy ?? 0) { best = i }
        return best
    }

    /// What the short-text rule did: the features taken and, when both sets competed, their validation accuracies.
    static func shortTextNote(_ fits: [FeatureFit], chosen: Int, medianWords: Int) -> String {
        func describe(_ f: FeatureFit) -> String {
            let c = f.config
            return (c.charNgrams.map { "character n-grams \($0.map(String.init).joined(separator: "-")) within words, " } ?? "word n-grams only, ")
                + "min count \(c.minCount)" + (f.rows.block == nil ? "" : " + sentence embeddings")
        }
        var note = "short texts (median \(medianWords) words per document): " + describe(fits[chosen])
        if fits.count > 1 {
            let scores = fits.map { String(format: "%.4f", $0.head.validationAccuracy ?? 0) }
            note += ", chosen on the validation split (accuracy \(scores[chosen]); "
                + fits.indices.filter { $0 != chosen }.map { describe(fits[$0]) + " " + scores[$0] }.joined(separator: "; ")
                + ")"
        }
        return note
    }
}
