import MLToolCore
import MLToolData
import MLToolTrain

/// How an image classifier is trained. These defaults are the only ones: `mltool train` reads them from here.
public struct ImageClassifierParameters: Sendable {
    /// Seed for the splits and the augmentation: the same data, seed and threads give a byte-identical model.
    public var seed: UInt64 = 42
    /// Fraction of the data held out (stratified) and recorded in the model, when no test data is given.
    public var holdoutFraction = 0.2
    /// The validation split taken from the rest (`.auto`: Create ML's rule).
    public var validation: ValidationRule = .auto
    /// The feature extractor (a model file); nil looks for the default one (`FeatureExtractor.candidates`).
    public var extractor: String?
    /// The extractor tensor to use as features; nil takes the one the extractor names.
    public var featureLayer: String?
    /// The L2 strength, or `.auto`: each value of `l2Grid` is ranked on the validation split (by log-loss), and
    /// the winner is refitted on training + validation images.
    public var l2: LogisticRegressionOptions.L2 = .auto
    /// The strengths `.auto` tries, strongest first.
    public var l2Grid: [Double] = [1, 0.3, 0.1, 0.03, 0.01, 1e-3]
    /// L-BFGS iterations of the final fit.
    public var maxIterations = 500
    /// L-BFGS iterations per candidate while `.auto` ranks them (warm-started along the path, each value's loss is
    /// flat to 1e-5 within ~20 iterations on Fashion-MNIST small); the refit converges.
    public var searchIterations = 25
    /// ‖∇J‖∞ at which a fit has converged: scikit-learn's default `tol` (on Fashion-MNIST small 1e-5 took 64
    /// iterations instead of 37 for the same holdout accuracy).
    public var tolerance = 1e-4
    /// Stop after this many iterations without validation improvement (nil: off — converged fits generalise
    /// better here than early-stopped ones, the validation split being small and noisy).
    public var earlyStoppingPatience: Int?
    /// Weight classes inversely to their frequency.
    public var balanceClasses = false
    /// Convolutions at the top of the extractor trained along with the head (0: none, the extractor stays frozen).
    /// Their input, the activations at the cut, is what the feature cache keeps, so only those layers run in each
    /// epoch; a cut that would split a residual block moves up to its start (`TrainableGraph.cut`). The head is first
    /// fitted on the frozen features of the training split, then both train by AdamW (`fineTuning`), and the epoch
    /// kept is the one with the best validation accuracy, the frozen start included. Batch norms train folded into
    /// their convolutions (their statistics are not estimated again). Off by default: it costs minutes, not seconds.
    public var fineTune = 0
    /// How fine-tuning trains (epochs, batch, rate, weight decay); its seed is `seed`.
    public var fineTuning = FineTuning.Options()
    /// Extra training variants of each image.
    public var augmentations: [Augmentation] = []
    /// Stop at the first image that cannot be decoded (else: skip it, within the data set's limit).
    public var strict = false
    /// Refuse images with more pixels than this.
    public var maxPixels = ImageDecoder.defaultMaxPixels
    /// Threads (0: all cores).
    public var threads = 0
    /// The feature cache folder; nil: `FeatureCache.defaultDirectory()` ($MLTOOL_CACHE or ~/.cache/mltool).
    public var cacheDirectory: String?
    /// Bytes the head may hold in memory (nil: `MemoryBudget.machineDefault()`, half the machine's or the
    /// container's memory). When the features need more (`HeadMemory.inMemoryBytes`), the head trains out of core
    /// from a scratch file in the cache folder: the same model, memory bounded whatever the number of images.
    public var memoryBudget: Int?
    /// The model's name in its metadata (`mltool train -o x.bin` names it "x").
    public var name = "model"

    public init() {}
}
