/// The settings of random forests and single decision trees, with scikit-learn's defaults (RandomForestClassifier /
/// Regressor 1.x: 100 trees, bootstrap, √F features per split for classification and all F for regression,
/// min_samples_leaf 1, no depth limit: trees grown until their leaves are pure). A single decision tree is one tree on
/// every row once, every feature at every split (DecisionTreeClassifier / Regressor).
public struct ForestParameters: Sendable, Equatable {
    public var trees = 100
    /// Each tree's rows: n draws with replacement from the n training rows (a row drawn twice weighs 2), or every row once.
    public var bootstrap = true
    /// Features drawn (without replacement) at each split, at most F; nil: √F for classification, F for regression.
    public var featuresPerSplit: Int?
    /// Deepest split level (the root is level 0); nil: no limit.
    public var maxDepth: Int?
    /// Distinct rows per leaf at least.
    public var minDataInLeaf = 1
    public var maxBins = 255
    public var seed: UInt64 = 0
    /// Worker threads for histograms (the model does not depend on it).
    public var threads = 0

    public init() {}

    /// One unshrunk tree: every row, every feature.
    public static var singleTree: ForestParameters {
        var p = ForestParameters()
        p.trees = 1; p.bootstrap = false; p.featuresPerSplit = .max
        return p
    }
}
