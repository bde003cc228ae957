import MLToolData
import MLToolTabular

/// How a tabular model is trained. These defaults are the only ones: `mltool train --task tabular` reads them here
/// (the trees' own, LightGBM's where it has one, in `MLToolTabular.BoostedTreeParameters`).
public struct TabularParameters: Sendable {
    /// The model's name (from -o).
    public var name = "model"
    /// The column to predict (required).
    public var target: String?
    /// Columns read as categories, whatever their values, and columns left out.
    public var categorical: [String] = []
    public var ignore: [String] = []
    /// nil: told from the target (numbers with more than 10 distinct values, or any fraction, are a regression);
    /// true / false: `--objective regression` / `classification`.
    public var regression: Bool?
    /// Seed of the holdout and validation splits: the same data and seed give a byte-identical model.
    public var seed: UInt64 = 42
    /// Fraction of the rows held out for testing when no test table is given.
    public var holdoutFraction = 0.2
    /// The validation split of the training rows, for early stopping (`.auto`: Create ML's rule), unless
    /// `validationData`.
    public var validation: ValidationRule = .auto
    /// A table of validation rows instead of a split.
    public var validationData: String?
    /// Which learner: boosted trees (the default), a random forest, one decision tree, or a linear model.
    public var learner: Learner = .boosted
    /// `--learner linear`: α of the objective Σ loss + α/2 · ‖W‖², scikit-learn's `LogisticRegression(C = 1/α)` and
    /// `Ridge(alpha = α)` (their defaults at 1).
    public var linearL2 = 1.0
    public var trees = BoostedTreeParameters()
    /// The forest's (and the single tree's) settings, with scikit-learn's defaults.
    public var forest = ForestParameters()
    /// How much each class's rows count (classification only): `.balanced` is scikit-learn's n / (K · n_c).
    public var classWeights: ClassWeights = .none

    public enum ClassWeights: Sendable, Equatable {
        case none, balanced
        /// Label → weight (> 0); a class not named weighs 1.
        case given([String: Double])
    }

    public enum Learner: String, Sendable, CaseIterable {
        case boosted, forest, tree, linear
    }

    public init() {}
}
