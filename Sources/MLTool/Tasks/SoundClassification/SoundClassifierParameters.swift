import MLToolCore
import MLToolData
import MLToolTrain

/// How a sound classifier is trained. These defaults are the only ones: `mltool train` reads them from here.
public struct SoundClassifierParameters: Sendable {
    /// How a recording is cut into the windows the embedding sees: padded (centred, with silence) to at least
    /// `minimumSamples` 16 kHz samples, windows at `overlap` (Create ML's overlap factor).
    public struct Windowing: Sendable, Equatable, CustomStringConvertible {
        public var minimumSamples: Int
        public var overlap: Double
        public init(minimumSamples: Int, overlap: Double) { self.minimumSamples = minimumSamples; self.overlap = overlap }
        public var description: String {
            String(format: "pad to %.2f s, overlap %.2f", Double(minimumSamples) / 16000, overlap)
        }
    }

    /// Seed for the splits: the same data, seed and files give a byte-identical model.
    public var seed: UInt64 = 42
    /// Fraction of the data held out (stratified) and recorded in the model, when no test data is given.
    public var holdoutFraction = 0.2
    /// The validation split taken from the rest (`.auto`: Create ML's rule). It ranks the windowings and the L2.
    public var validation: ValidationRule = .auto
    /// A folder (or table) of validation recordings instead of `validation`'s split: recordings of other
    /// speakers or devices than the training ones, so that the windowing and L2 are chosen for new ones.
    public var validationData: String?
    /// The windowings tried, each ranked by the validation recordings' log-loss (a recording's probabilities: the
    /// mean of its windows'); the first is taken when there is no validation split. One window at overlap 0.5
    /// (Create ML's default factor), and short clips padded to 1 s and 1.5 s with windows every 8 frames
    /// (overlap 0.9, openWakeWord's step), which gives a spoken word several shifted views.
    public var windowings: [Windowing] = [
        Windowing(minimumSamples: 24000, overlap: 0.9),
        Windowing(minimumSamples: 16000, overlap: 0.9),
        Windowing(minimumSamples: 12032, overlap: 0.5),
    ]
    /// The speech embedding (a model file); nil looks for the bundled one (`BundledModel.speechEmbedding`).
    public var embedding: String?
    /// The L2 strength, or `.auto`: each value of `l2Grid` ranked on the validation windows.
    public var l2: LogisticRegressionOptions.L2 = .auto
    /// The strengths `.auto` tries, strongest first (`LogisticRegressionOptions`' grid, measured on FSDD).
    public var l2Grid: [Double] = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5]
    /// L-BFGS iterations per fit.
    public var maxIterations = 500
    /// Stop at the first recording that cannot be decoded (else: skip it and name it, within 10 % of the data).
    public var strict = false
    /// Threads: extraction runs this many workers, one engine thread each (0: all cores).
    public var threads = 0
    /// The feature cache folder; nil: `FeatureCache.defaultDirectory()`.
    public var cacheDirectory: String?
    /// The model's name in its metadata (`mltool train -o x.bin` names it "x").
    public var name = "model"

    public init() {}
}
