import MLToolCore
import MLToolData
import MLToolTrain

/// How a text classifier is trained. These defaults are the only ones: `mltool train` reads them from here.
public struct TextClassifierParameters: Sendable {
    /// Seed for the splits and SGD: the same data, seed and threads give a byte-identical model.
    public var seed: UInt64 = 42
    /// Fraction of the data held out (stratified) and recorded in the model, when no test data is given.
    public var holdoutFraction = 0.2
    /// The validation split taken from the rest (`.auto`: Create ML's rule).
    public var validation: ValidationRule = .auto

    // Features.
    /// Word n-gram lengths [min, max].
    public var wordNgrams = [1, 2]
    /// Character n-gram lengths [min, max], or nil for none.
    public var charNgrams: [Int]?
    /// Keep terms found in at least this many documents.
    public var minCount = 2
    /// "tfidf" (sublinear tf, L2-normalised rows), "count" or "binary".
    public var weighting = "tfidf"
    /// Hash terms into 2^hashBits buckets instead of keeping a vocabulary (1…24).
    public var hashBits: Int?
    /// Words dropped before n-grams are formed.
    public var stopWords: [String] = []

    // The classifier: max-entropy (multinomial logistic regression) on the sparse rows.
    /// The L2 strength, or `.auto`: λ = c/n for each c of `l2Factors`, ranked on the validation split; without a
    /// validation split `.auto` takes the first (strongest).
    public var l2: LogisticRegressionOptions.L2 = .auto
    /// c of λ = c/n for `.auto` (c = 1 is scikit-learn's default C = 1). TF-IDF rows are L2-normalised, so
    /// weaker-than-default values win on real text; on the Debian descriptions every c in 0.01…0.1 lands within 0.3
    /// points of holdout accuracy, and the two run side by side (one per core).
    public var l2Factors = [0.1, 0.01]
    /// Seeded SGD epochs (on the Debian descriptions 5 epochs reach the holdout accuracy of 100+ L-BFGS
    /// iterations at the cost of about 5 gradient evaluations).
    public var epochs = 5
    /// L-BFGS iterations after SGD (0: SGD only; with `epochs` 0, L-BFGS alone).
    public var maxIterations = 0
    /// A relative loss change per iteration under which L-BFGS stops: sparse text objectives flatten early, and
    /// below 1e-5 validation accuracy no longer moves (Debian descriptions; saves ~70% of the time).
    public var lossTolerance = 1e-5
    /// Stop after this many iterations without validation improvement (nil: off).
    public var earlyStoppingPatience: Int?
    /// Weight classes inversely to their frequency.
    public var balanceClasses = false
    /// The model's name in its metadata (`mltool train -o x.bin` names it "x").
    public var name = "model"

    public init() {}

    /// The feature settings these parameters give, checked (`TextTokenizer.validate`).
    public func textConfig() throws -> TextConfig {
        var c = TextConfig()
        c.wordNgrams = wordNgrams
        c.charNgrams = charNgrams
        c.minCount = minCount
        c.weighting = weighting
        c.stopWords = stopWords
        if let bits = hashBits {
            c.hashBits = bits
            c.vocabularyTensor = nil
        }
        if weighting != "tfidf" { c.idfTensor = nil }
        try TextTokenizer.validate(c)
        return c
    }
}
