/// A tree ensemble's (or a linear model's) settings (task "tabular"): its objective, the column it predicts, its features (how a table's
/// fields become feature values, and how much each one contributed) and the names of its four tensors
/// (docs/FORMAT.md, section 4.5).
public struct TabularConfig: Codable, Equatable, Sendable {
    /// One input column.
    public struct Feature: Codable, Equatable, Sendable {
        public enum Kind: String, Codable, Sendable {
            case numeric, categorical
        }

        public var name: String
        public var kind: Kind
        /// Categorical features: category c is `categories[c]`; nil for numeric ones.
        public var categories: [String]?
        /// The loss reduction of this feature's splits, summed over the trees.
        public var gain: Double
        /// How many splits use this feature.
        public var splits: Int

        public init(name: String, kind: Kind, categories: [String]? = nil, gain: Double = 0, splits: Int = 0) {
            self.name = name; self.kind = kind; self.categories = categories; self.gain = gain; self.splits = splits
        }
    }

    /// "binary", "multiclass" or "regression".
    public var objective: String
    /// How the trees' sums become predictions: nil or "boosted" (sigmoid / softmax of the sums), "forest" or "tree"
    /// (the leaves hold probabilities or values already divided by the trees per score: the sums are the prediction).
    public var learner: String?
    /// The column the model predicts.
    public var target: String
    public var features: [Feature]
    /// K starting scores (K = 1, or the class count for "multiclass").
    public var baseScores: [Float]
    /// i32 [T + 1]: where each tree's nodes start, then N.
    public var treesTensor: String
    /// i32 [N, 5]: feature, left, right, flags, category offset per node.
    public var nodesTensor: String
    /// f32 [N]: thresholds and leaf values.
    public var valuesTensor: String
    /// i32 [W]: the category bit sets of categorical splits.
    public var categoriesTensor: String
    /// Learner "linear" only: f32 [D, K], the weights of the derived columns, and f32 [F, 2], each feature's mean and
    /// scale (docs/FORMAT.md 4.5, "Linear models").
    public var weightsTensor: String?
    public var scalingTensor: String?
    /// Multiclass "forest" and "tree" only: f32 [L, K], the K values of each leaf of trees stored once for all K
    /// scores (docs/FORMAT.md 4.5, "Shared multiclass trees"); nil: every tree stored.
    public var leafValuesTensor: String?

    public init(objective: String, target: String, features: [Feature], baseScores: [Float], learner: String? = nil,
                treesTensor: String = "tabular.trees", nodesTensor: String = "tabular.nodes",
                valuesTensor: String = "tabular.values", categoriesTensor: String = "tabular.categories") {
        self.objective = objective; self.target = target; self.features = features; self.baseScores = baseScores
        self.learner = learner
        self.treesTensor = treesTensor; self.nodesTensor = nodesTensor; self.valuesTensor = valuesTensor
        self.categoriesTensor = categoriesTensor
    }
}
