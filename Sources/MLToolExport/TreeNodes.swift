import MLToolCore
import MLToolTabular

/// A tree ensemble (docs/FORMAT.md 4.5) as the node lists ONNX-ML's and Core ML's tree ensembles take: every split a
/// test of one input column, "value ≤ threshold" or (`equal`) "value = threshold", whose yes child a missing value
/// takes when `missingYes`.
///
/// Numeric splits keep their feature and threshold. A categorical split on a set S of feature f becomes, as `Style`
/// says:
/// - `.lookups`: a test on a derived column, a look-up of f's category code in a table of (categories + 1) rows and
///   one column per categorical split on f, holding 0 where the category is in the split's set (the split sends it
///   left: 0 ≤ 0.5), 1 where it is not, and in its last row NaN, where a code that is missing, negative or not below
///   the category count lands (the model sends those the split's missing way, and a NaN follows `missingYes`). The
///   derived columns follow the F features, categorical features in feature order, each feature's splits in node
///   order.
/// - `.equalityChains`: a chain of "code = c" tests over the smaller of S and its complement, each true child a copy
///   of the subtree those categories go to, the last false child the other subtree (so a code that is neither a
///   category nor missing goes where the complement's codes go, not the missing way: the input must hold a
///   category's index or NaN).
/// Nodes are numbered per tree in pre-order. The base scores are added to the leaves of the first K trees (tree t
/// adds to score t mod K), so a runtime that sums trees in order from 0 adds in binary32 exactly as mltool does
/// (base + tree 0 + tree 1 …).
struct TreeNodes {
    enum Style { case lookups, equalityChains }

    struct Node {
        var tree: Int, id: Int
        /// A leaf has no test: `feature`, `threshold`, `yes`, `no` are 0.
        var leaf: Bool
        var feature: Int, threshold: Float, equal: Bool, yes: Int, no: Int, missingYes: Bool
        /// A leaf's value (with the base score for the first K trees); its score is `tree mod K`.
        var weight: Float
    }

    /// One categorical feature's table: row c (c < categories) for category c, row `categories` for the rest.
    struct Lookup {
        var feature: Int, categories: Int
        /// The first derived column, and how many (one per categorical split on the feature).
        var firstColumn: Int, columns: Int
        /// (categories + 1) × columns, row-major.
        var table: [Float]
    }

    var nodes: [Node] = []
    var lookups: [Lookup] = []
    var scoreCount: Int
    /// The F features and then the derived columns.
    var width: Int

    /// The most values the look-up tables may hold together (64 MiB of binary32), and the most nodes (equality
    /// chains copy subtrees: a file of ~250 MB); an ensemble needing more is refused, naming the feature or tree.
    static let tableValueLimit = 1 << 24
    static let nodeLimit = 1 << 22
    let maxTableValues: Int, maxNodes: Int

    init(_ shared: TreeEnsemble, style: Style, model name: String, format: String,
         maxTableValues: Int = TreeNodes.tableValueLimit, maxNodes: Int = TreeNodes.nodeLimit) throws {
        // Every node is read, several times: the tables in full once, not through a shared forest's accessors.
        let e = shared.inFull()
        guard e.learner != .linear else {
            // Exported as ONNX's LinearClassifier / LinearRegressor (ONNXLinearModel) or Core ML's GLMs (CoreMLLinearModel).
            throw ExportError.unsupported(model: name, format: format, place: "learner 'linear'", reason: "a linear model has no trees")
        }
        self.maxTableValues = maxTableValues; self.maxNodes = maxNodes
        scoreCount = e.scoreCount
        width = e.features.count
        let column = style == .lookups ? try lookupColumns(e, model: name, format: format) : [:]
        for t in 0..<e.treeCount {
            var next = 0
            try emit(e, tree: t, node: Int(e.treeStarts[t]), start: Int(e.treeStarts[t]), id: &next, column: column, model: name, format: format)
        }
        // Without trees (training stopped before the first round), one leaf per score holds its base score.
        if e.treeCount == 0 {
            for k in 0..<scoreCount { nodes.append(Self.leaf(tree: k, id: 0, weight: e.baseScores[k])) }
        }
    }

    static func leaf(tree: Int, id: Int, weight: Float) -> Node {
        Node(tree: tree, id: id, leaf: true, feature: 0, threshold: 0, equal: false, yes: 0, no: 0, missingYes: false, weight: weight)
    }

    /// Appends node `i` of tree `t` and its subtree in pre-order, numbered from `id`; returns the node's number.
    @discardableResult
    mutating func emit(_ e: TreeEnsemble, tree t: Int, node i: Int, start: Int, id: inout Int, column: [Int: Int],
                       model name: String, format: String) throws -> Int {
        guard nodes.count < maxNodes else {
            throw ExportError.unsupported(model: name, format: format, place: "tree \(t)",
                                          reason: "its categorical splits as equality tests need more than \(maxNodes) nodes")
        }
        let row = i * 5, feature = Int(e.nodes[row]), me = id
        id += 1
        if feature < 0 {
            nodes.append(Self.leaf(tree: t, id: me, weight: t < scoreCount ? e.baseScores[t] + e.values[i] : e.values[i]))
            return me
        }
        let left = start + Int(e.nodes[row + 1]), right = start + Int(e.nodes[row + 2]), missingLeft = e.nodes[row + 3] & 1 != 0
        func child(_ n: Int, _ id: inout Int) throws -> Int {
            try emit(e, tree: t, node: n, start: start, id: &id, column: column, model: name, format: format)
        }
        guard e.nodes[row + 3] & 2 != 0, column[i] == nil else {
            let at = nodes.count
            nodes.append(Node(tree: t, id: me, leaf: false, feature: column[i] ?? feature, threshold: column[i] == nil ? e.values[i] : 0.5,
                              equal: false, yes: 0, no: 0, missingYes: missingLeft, weight: 0))
            nodes[at].yes = try child(left, &id)
            nodes[at].no = try child(right, &id)
            return me
        }
        // An equality chain over the smaller side; a NaN takes the first test's yes child only when that is its way.
        let count = e.features[feature].categories?.count ?? 0, offset = Int(e.nodes[row + 4])
        let inSet = (0..<count).filter { e.categoryWords[offset + $0 >> 5] >> UInt32($0 & 31) & 1 != 0 }
        let onSet = inSet.count * 2 <= count
        var tests = onSet ? inSet : (0..<count).filter { !inSet.contains($0) }
        if tests.isEmpty { tests = [-1] }
        let yes = onSet ? left : right, no = onSet ? right : left
        var at = nodes.count
        for (j, c) in tests.enumerated() {
            let number = j == 0 ? me : id
            if j > 0 { nodes[at].no = number; id += 1; at = nodes.count }
            nodes.append(Node(tree: t, id: number, leaf: false, feature: feature, threshold: Float(c), equal: true, yes: 0, no: 0,
                              missingYes: j == 0 && missingLeft == onSet, weight: 0))
            nodes[at].yes = try child(yes, &id)
        }
        nodes[at].no = try child(no, &id)
        return me
    }

    /// The look-up tables of the categorical splits (`lookups`, `width`); the derived column of each such split node.
    mutating func lookupColumns(_ e: TreeEnsemble, model name: String, format: String) throws -> [Int: Int] {
        // Categorical splits per feature, in node order.
        var splits = [[Int]](repeating: [], count: e.features.count)
        for i in 0..<e.values.count where e.nodes[i * 5] >= 0 && e.nodes[i * 5 + 3] & 2 != 0 {
            splits[Int(e.nodes[i * 5])].append(i)
        }
        var column = [Int: Int](), total = 0
        for (feature, list) in splits.enumerated() where !list.isEmpty {
            let categories = e.features[feature].categories?.count ?? 0
            total += (categories + 1) * list.count
            guard total <= maxTableValues else {
                throw ExportError.unsupported(model: name, format: format, place: "feature '\(e.features[feature].name)'",
                                              reason: "its categorical splits need look-up tables of more than \(maxTableValues) values")
            }
            var table = [Float](repeating: 1, count: (categories + 1) * list.count)
            for (j, node) in list.enumerated() {
                column[node] = width + j
                let offset = Int(e.nodes[node * 5 + 4])
                for c in 0..<categories where e.categoryWords[offset + c >> 5] >> UInt32(c & 31) & 1 != 0 {
                    table[c * list.count + j] = 0
                }
                table[categories * list.count + j] = .nan
            }
            lookups.append(Lookup(feature: feature, categories: categories, firstColumn: width, columns: list.count, table: table))
            width += list.count
        }
        return column
    }
}
