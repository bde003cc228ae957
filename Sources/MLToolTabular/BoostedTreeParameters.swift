/// The settings of gradient-boosted trees, with LightGBM's defaults where it has one (num_leaves 31,
/// learning_rate 0.1, min_data_in_leaf 20, min_sum_hessian_in_leaf 1e-3, max_bin 255, lambda_l1/l2 0, cat_smooth 10,
/// cat_l2 10, max_cat_threshold 32, max_cat_to_onehot 4). Iterations: at most `iterations`, and with a validation set
/// training stops after `earlyStopping` rounds without a better validation loss, keeping the best round.
public struct BoostedTreeParameters: Sendable, Equatable {
    public var iterations = 1000
    public var earlyStopping = 20
    public var leaves = 31
    public var learningRate: Float = 0.1
    public var minDataInLeaf = 20
    public var minHessianInLeaf = 1e-3
    public var l1 = 0.0
    public var l2 = 0.0
    public var maxBins = 255
    public var catSmooth = 10.0
    public var catL2 = 10.0
    public var maxCatThreshold = 32
    public var maxCatToOneHot = 4
    /// The loss a regression minimises: squared error, absolute error (LightGBM's regression_l1: sign gradients,
    /// each leaf's value then the median of its rows' residuals), or Huber's with `huberDelta` (LightGBM's alpha, 0.9).
    public var regressionLoss: RegressionLoss = .squared
    public var huberDelta = 0.9
    /// The share of rows each round's trees are grown on (LightGBM's bagging_fraction with bagging_freq 1), and of
    /// features each tree may split on (feature_fraction); both drawn from `seed`.
    public var rowFraction = 1.0
    public var featureFraction = 1.0
    public var seed: UInt64 = 0
    /// Worker threads for histograms (the model does not depend on it).
    public var threads = 0

    public enum RegressionLoss: String, Sendable, CaseIterable {
        case squared, absolute, huber
    }

    public init() {}
}
