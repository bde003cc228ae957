/// Settings for `LogisticRegression.fit`.
///
/// The objective minimised for one L2 strength λ is
///
///     J(W, b) = Σᵢ vᵢ · CEᵢ / Σᵢ vᵢ  +  λ/2 · ‖W‖²        (the bias b is not penalised)
///
/// where CEᵢ = log Σ_c exp(zᵢc) − zᵢ,yᵢ with zᵢ = xᵢ·W + b, and vᵢ = sampleWeightᵢ · classWeight(yᵢ) (1 when not
/// given). This is exactly scikit-learn's `LogisticRegression(C=…)` (multinomial, lbfgs) with λ = 1 / (C · Σᵢ vᵢ);
/// for n unweighted rows, λ = 1 / (C · n), so sklearn's default C = 1 is λ = 1/n.
public struct LogisticRegressionOptions: Sendable, Equatable {
    /// The L2 strength λ: a fixed value, or chosen on the validation split.
    public enum L2: Sendable, Equatable {
        case fixed(Double)
        /// Try every value of `l2Grid` (strongest first, each warm-started from the previous solution) and keep the
        /// one with the best validation accuracy (ties: lower validation log-loss). Without a validation split,
        /// λ = 1/n (scikit-learn's default C = 1) is used.
        case auto
    }

    public var l2: L2
    /// L-BFGS iterations per fit (per grid value with `.auto`).
    public var maxIterations: Int
    /// Stop when the largest gradient component, ‖∇J‖∞, is at most this (scikit-learn's `tol`).
    public var tolerance: Double
    /// Also stop when an iteration lowers J by less than this fraction of max(|J|, 1).
    public var lossTolerance: Double
    /// Class weights n / (k · count_c) (scikit-learn's `class_weight="balanced"`, weighted counts with sample weights).
    public var balanceClasses: Bool
    /// With a validation split: stop when the validation log-loss has not improved for this many iterations, and
    /// return the parameters with the best validation log-loss. Nil disables early stopping.
    public var earlyStoppingPatience: Int?
    /// The values tried by `.auto`, in the order tried (strongest first).
    public var l2Grid: [Double]
    /// L-BFGS memory (correction pairs kept).
    public var historySize: Int
    /// How `.auto` compares L2 values on the validation split.
    public enum Selection: Sendable, Equatable {
        /// Best validation accuracy, ties broken by lower validation log-loss.
        case accuracy
        /// Lowest validation log-loss: steadier than accuracy on a small validation split.
        case logLoss
    }
    public var selection: Selection = .accuracy
    /// Sparse features only: epochs of seeded stochastic gradient descent (`SoftmaxSGD`) that start each L2 value
    /// from zero before L-BFGS runs its `maxIterations` (which may be 0: the SGD result is the fit). With `.auto`
    /// the values are independent then, and run on all cores at once. 0 (the default) is plain L-BFGS.
    public var sgdEpochs: Int = 0
    /// The first SGD step size times the mean squared row norm; it falls linearly to 0 over the run.
    public var sgdLearningRate: Double = 4
    /// Seeds the SGD row order.
    public var seed: UInt64 = 0

    public init(l2: L2 = .auto, maxIterations: Int = 500, tolerance: Double = 1e-5, lossTolerance: Double = 1e-9,
                balanceClasses: Bool = false, earlyStoppingPatience: Int? = 20,
                l2Grid: [Double] = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5], historySize: Int = 10) {
        self.l2 = l2; self.maxIterations = maxIterations; self.tolerance = tolerance
        self.lossTolerance = lossTolerance; self.balanceClasses = balanceClasses
        self.earlyStoppingPatience = earlyStoppingPatience; self.l2Grid = l2Grid; self.historySize = historySize
    }
}

/// One L-BFGS iteration, as reported to the progress callback and kept in the model's history.
public struct IterationRecord: Sendable, Equatable {
    /// The L2 strength being fitted (changes during an `.auto` search).
    public var l2: Double
    /// 1-based within the fit for this `l2`; 0 is the starting point.
    public var iteration: Int
    /// The training objective J.
    public var loss: Double
    /// ‖∇J‖∞ (infinity when not computed: the SGD result of a fit with no L-BFGS iterations).
    public var gradientNorm: Double
    public var trainAccuracy: Double
    public var validationAccuracy: Double?
    /// Mean (unweighted) cross-entropy on the validation split.
    public var validationLoss: Double?
    /// Seconds since `fit` began (not deterministic: keep it out of model files).
    public var elapsed: Double

    public init(l2: Double, iteration: Int, loss: Double, gradientNorm: Double, trainAccuracy: Double,
                validationAccuracy: Double?, validationLoss: Double?, elapsed: Double) {
        self.l2 = l2; self.iteration = iteration; self.loss = loss; self.gradientNorm = gradientNorm
        self.trainAccuracy = trainAccuracy; self.validationAccuracy = validationAccuracy
        self.validationLoss = validationLoss; self.elapsed = elapsed
    }
}

/// Why a fit stopped.
public enum StopReason: String, Sendable, Equatable {
    case gradientTolerance
    case lossTolerance
    case maxIterations
    case earlyStopping
    /// The line search found no further decrease (the objective is flat to float precision).
    case lineSearchStalled
    /// Stochastic gradient descent ran its epochs and no L-BFGS iterations followed.
    case epochs
}
