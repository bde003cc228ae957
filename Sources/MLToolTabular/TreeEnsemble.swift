import Foundation
import MLToolCore

/// A trained tree ensemble: the trees of docs/FORMAT.md section 4.5, flattened into node tables, with its features,
/// objective and labels. `scores` and `predict` follow that section's rule exactly. A linear model (learner `.linear`)
/// is an ensemble of no trees whose scores come from `linear` instead.
///
///     let model = try TreeEnsemble(model: ModelLoader.load("model.bin"))
///     let p = model.probabilities(FeatureMatrix(table: RawTable.read("rows.csv"), features: model.features))
public struct TreeEnsemble: Sendable {
    public var objective: TabularSchema.Objective { willSet { expandTrees() } }
    public var target: String
    public var labels: [String] { willSet { expandTrees() } }
    public var features: [TabularConfig.Feature]
    public var baseScores: [Float]
    /// Boosted trees (sums through a sigmoid or softmax) or averaged ones (forest, tree: the sums are the prediction),
    /// or no trees and a linear model (`linear`, its scores through a sigmoid or softmax).
    public var learner: Learner = .boosted
    /// The linear model's terms (learner `.linear` only).
    public var linear: LinearTerms?
    /// Where each tree's nodes start, then the node count.
    public var treeStarts: [Int32] {
        get { full?.treeStarts ?? compact!.expanded.treeStarts }
        _modify { expandTrees(); yield &full!.treeStarts }
    }
    /// Per node: feature (−1: leaf), left, right (relative to the tree's first node), flags, category offset.
    public var nodes: [Int32] {
        get { full?.nodes ?? compact!.expanded.nodes }
        _modify { expandTrees(); yield &full!.nodes }
    }
    /// Per node: a numeric split's threshold or a leaf's value.
    public var values: [Float] {
        get { full?.values ?? compact!.expanded.values }
        _modify { expandTrees(); yield &full!.values }
    }
    public var categoryWords: [UInt32] {
        get { full?.categoryWords ?? compact!.expanded.categoryWords }
        _modify { expandTrees(); yield &full!.categoryWords }
    }
    /// The four tables above, every tree in full; nil while a multiclass forest is held as its shared trees alone.
    var full: NodeTables?
    /// A multiclass forest's shared trees (`shareTrees()`), its tables in full made from them only when something
    /// reads them (an export, a file in the unshared encoding): letter's 100-tree forest is 29 MB shared, 238 MB in full.
    var compact: CompactTrees?
    /// A multiclass forest's trees as `scores` walks them, each round's once (`SharedTrees.forScoring`); nil for other
    /// ensembles. Set by `shareTrees()`; any change to the tables drops it (setting nil keeps the trees in full).
    var scoringTrees: SharedTrees? {
        get { compact?.scoring }
        set {
            expandTrees()
            if let newValue { compact = CompactTrees(scoring: newValue, k: scoreCount); full = nil }
        }
    }

    /// Every tree's nodes in full (docs/FORMAT.md 4.5's tables).
    struct NodeTables: Sendable {
        var treeStarts: [Int32] = [0], nodes: [Int32] = [], values: [Float] = [], categoryWords: [UInt32] = []
    }

    /// This ensemble with its tables in full (what reads every node, an export, reads them at the cost of an array).
    public func inFull() -> TreeEnsemble {
        var e = self
        e.expandTrees()
        return e
    }

    /// Makes the tables in full from the shared trees, if that is how the trees are held, and drops the shared ones.
    mutating func expandTrees() {
        guard let c = compact else { return }
        full = c.expanded
        compact = nil
    }

    /// How the trees were grown, and so how their sums become predictions (docs/FORMAT.md 4.5, `learner`).
    public enum Learner: String, Sendable, CaseIterable {
        case boosted, forest, tree, linear
    }

    /// Scores per row: K = 1, or the class count for multiclass.
    public var scoreCount: Int { objective == .multiclass ? labels.count : 1 }
    public var treeCount: Int { compact.map { ($0.scoring.treeStarts.count - 1) * $0.k } ?? full!.treeStarts.count - 1 }
    /// Nodes in all trees (each shared tree counted K times), without making the tables in full.
    public var nodeCount: Int { compact.map { $0.scoring.values.count * $0.k } ?? full!.values.count }

    public init(objective: TabularSchema.Objective, target: String, labels: [String], features: [TabularConfig.Feature],
                baseScores: [Float], treeStarts: [Int32] = [0], nodes: [Int32] = [], values: [Float] = [],
                categoryWords: [UInt32] = []) {
        self.objective = objective; self.target = target; self.labels = labels; self.features = features
        self.baseScores = baseScores
        full = NodeTables(treeStarts: treeStarts, nodes: nodes, values: values, categoryWords: categoryWords)
    }

    /// The leaf value tree `t` gives a row whose feature values `value(f)` returns.
    @inline(__always)
    func leafValue(_ t: Int, _ value: (Int) -> Float) -> Float {
        // The tables once, not through an accessor at every node.
        let tables = full ?? compact!.expanded
        let treeStarts = tables.treeStarts, nodes = tables.nodes, values = tables.values, categoryWords = tables.categoryWords
        let start = Int(treeStarts[t])
        var i = 0
        while true {
            let row = (start + i) * 5
            let f = Int(nodes[row])
            if f < 0 { return values[start + i] }
            let x = value(f), flags = nodes[row + 3]
            let left: Bool
            if x.isNaN {
                left = flags & 1 != 0
            } else if flags & 2 != 0 {
                let c = Int(x), offset = Int(nodes[row + 4])
                let known = c >= 0 && c < (features[f].categories?.count ?? 0)
                left = known ? categoryWords[offset + c >> 5] >> UInt32(c & 31) & 1 != 0 : flags & 1 != 0
            } else {
                left = x <= values[start + i]
            }
            i = Int(nodes[row + (left ? 1 : 2)])
        }
    }

    /// Raw scores, [row · K + k], trees added in order from the base scores (binary32). Rows are split across
    /// `threads` workers (each row's sum is the same whatever the split).
    public func scores(_ m: FeatureMatrix, trees: Int? = nil, threads: Int = 0) -> [Float] {
        if let linear { return linear.scores(m, features: features, base: baseScores) }
        let k = scoreCount, n = m.rowCount, count = min(trees ?? treeCount, treeCount), width = features.count
        var out = [Float](repeating: 0, count: n * k)
        guard n > 0 else { return out }
        let rows = m.rowMajor()
        let workers = max(1, min(threads > 0 ? threads : ProcessInfo.processInfo.activeProcessorCount, n / 256 + 1))
        // A multiclass forest walks each round's shared tree once and adds its leaf's K values: the same additions in
        // the same order as the walks of the K copies, so the same bits (SharedTreesTests). Measured with `mltool bench
        // --rows` (10,000 rows) on letter's default 100-tree forest, this 2-core Zen 4 under a build: 18,147 and 50,488
        // rows/s, against 1,016 and 1,724 walking the 26 copies (main at 1285fd6, runs interleaved).
        let shared = count == treeCount ? scoringTrees : nil, base = baseScores
        let walked = shared ?? SharedTrees(treeStarts: treeStarts, nodes: nodes, values: values, categoryWords: categoryWords)
        out.withUnsafeMutableBufferPointer { op in
            let o = SharedPointer(p: op.baseAddress!), sharing = shared != nil
            walked.withTables(rows: rows, categoryCounts: features.map { Int32($0.categories?.count ?? 0) }) { tables in
                DispatchQueue.concurrentPerform(iterations: workers) { w in
                    let lo = n * w / workers, hi = n * (w + 1) / workers
                    for r in lo..<hi { for j in 0..<k { o.p[r * k + j] = base[j] } }
                    if sharing { Self.addShared(tables, o.p, lo, hi, k: k, width: width) } else {
                        Self.addTrees(0..<count, tables, o.p, lo, hi, k: k, width: width)
                    }
                }
            }
        }
        return out
    }

    /// Adds the leaf values of `trees` (tree t to score t mod K) to `out` ([row · K + k]) for the rows of `m`, as
    /// `scores` adds them: training adds each round's trees to its scores this way. Rows are split across `threads`
    /// workers, each copying its rows into row-major blocks of 64 as it goes (a table as wide as Fashion-MNIST's is not
    /// copied whole).
    func addTrees(_ trees: Range<Int>, _ m: FeatureMatrix, to out: inout [Float], threads: Int) {
        let k = scoreCount, width = features.count, n = m.rowCount
        precondition(trees.upperBound <= treeCount && m.columns.count == width && out.count == n * k, "addTrees: tables disagree")
        guard n > 0, !trees.isEmpty else { return }
        let workers = max(1, min(threads, n / 256 + 1))
        let walked = SharedTrees(treeStarts: treeStarts, nodes: nodes, values: values, categoryWords: categoryWords)
        out.withUnsafeMutableBufferPointer { op in
            let o = SharedPointer(p: op.baseAddress!)
            walked.withTables(rows: [], categoryCounts: features.map { Int32($0.categories?.count ?? 0) }) { tables in
                DispatchQueue.concurrentPerform(iterations: workers) { w in
                    let rows = UnsafeMutableBufferPointer<Float>.allocate(capacity: 64 * width)
                    defer { rows.deallocate() }
                    let local = tables.with(rows: UnsafeBufferPointer(rows)), end = n * (w + 1) / workers
                    for lo in stride(from: n * w / workers, to: end, by: 64) {
                        let count = min(64, end - lo)
                        for (f, column) in m.columns.enumerated() { for r in 0..<count { rows[r * width + f] = column[lo + r] } }
                        Self.addTrees(trees, local, o.p + lo * k, 0, count, k: k, width: width)
                    }
                }
            }
        }
    }

    /// Adds `trees` (tree t to score t mod K) to rows lo..<hi of `out`. Blocks of rows go through one tree at a time:
    /// a tree stays in cache while the block walks it (a row through every tree would sweep the whole ensemble).
    static func addTrees(_ trees: Range<Int>, _ t: ScoringTables, _ out: UnsafeMutablePointer<Float>, _ lo: Int, _ hi: Int,
                         k: Int, width: Int) {
        let rows = t.rows.baseAddress!
        for block in stride(from: lo, to: hi, by: 64) {
            let end = min(block + 64, hi)
            for tree in trees {
                let start = Int(t.starts[tree]), j = tree % k
                var r = block
                while r + 8 <= end {
                    let v = leaves8(start, rows + r * width, width, t)
                    for l in 0..<8 { out[(r + l) * k + j] += v[l] }
                    r += 8
                }
                for r in r..<end { out[r * k + j] += leaf(start, rows + r * width, t.nodes, t.values, t.words, t.counts) }
            }
        }
    }

    /// The leaf value of the tree whose nodes start at `start`, for one row's values `x` (docs/FORMAT.md 4.5).
    @inline(__always)
    static func leaf(_ start: Int, _ x: UnsafePointer<Float>, _ nodes: UnsafeBufferPointer<Int32>, _ values: UnsafeBufferPointer<Float>,
                     _ words: UnsafeBufferPointer<UInt32>, _ categoryCounts: UnsafeBufferPointer<Int32>) -> Float {
        values[leafNode(start, x, nodes, values, words, categoryCounts)]
    }

    /// The leaf node (its index in the node table) that `leaf` reads.
    @inline(__always)
    static func leafNode(_ start: Int, _ x: UnsafePointer<Float>, _ nodes: UnsafeBufferPointer<Int32>, _ values: UnsafeBufferPointer<Float>,
                         _ words: UnsafeBufferPointer<UInt32>, _ categoryCounts: UnsafeBufferPointer<Int32>) -> Int {
        var i = start
        while true {
            let node = nodes.baseAddress! + i * 5
            let f = Int(node[0])
            if f < 0 { return i }
            let v = x[f], flags = node[3]
            let left: Bool
            if v.isNaN {
                left = flags & 1 != 0
            } else if flags & 2 != 0 {
                let c = Int(v)
                left = c >= 0 && c < Int(categoryCounts[f]) ? words[Int(node[4]) + c >> 5] >> UInt32(c & 31) & 1 != 0 : flags & 1 != 0
            } else {
                left = v <= values[i]
            }
            i = start + Int(node[left ? 1 : 2])
        }
    }

    /// Class probabilities, [row · C + c] (C = labels), or for a regression the predictions (one per row).
    public func predict(_ m: FeatureMatrix) -> [Float] {
        let s = scores(m)
        guard learner != .boosted, learner != .linear else { return Self.transform(s, objective: objective, classes: labels.count) }
        // Averaged trees: the sums are the probabilities (of labels[1] for binary) or the values.
        guard objective == .binary else { return s }
        var out = [Float](repeating: 0, count: s.count * 2)
        for (r, v) in s.enumerated() { out[2 * r + 1] = min(max(v, 0), 1); out[2 * r] = 1 - out[2 * r + 1] }
        return out
    }

    /// Scores to probabilities (sigmoid for binary, softmax for multiclass) or predictions (regression).
    public static func transform(_ s: [Float], objective: TabularSchema.Objective, classes: Int) -> [Float] {
        switch objective {
        case .regression: return s
        case .binary:
            var out = [Float](repeating: 0, count: s.count * 2)
            // The larger probability is rounded and the smaller is 1 minus it, exact in binary32 (Sterbenz): each
            // row sums to exactly 1.
            for (r, v) in s.enumerated() {
                let p = 1 / (1 + exp(-Double(v)))
                if p >= 0.5 { out[2 * r + 1] = Float(p); out[2 * r] = 1 - out[2 * r + 1] } else {
                    out[2 * r] = Float(1 - p); out[2 * r + 1] = 1 - out[2 * r]
                }
            }
            return out
        case .multiclass:
            var out = s
            for r in 0..<(s.count / classes) {
                let row = r * classes
                var top = -Float.infinity
                for j in 0..<classes { top = max(top, s[row + j]) }
                var sum: Float = 0
                for j in 0..<classes { out[row + j] = Float(exp(Double(s[row + j] - top))); sum += out[row + j] }
                for j in 0..<classes { out[row + j] /= sum }
            }
            return out
        }
    }

    /// Reads the ensemble of a model file (task "tabular"; the format's reader has checked docs/FORMAT.md 4.5).
    public init(model: Model, file: String = "model") throws {
        let md = model.metadata
        guard md.task == .tabular, let c = md.tabular else {
            throw TabularError.invalidModel(file: file, what: "task", expected: "tabular", actual: md.task.rawValue)
        }
        guard let objective = TabularSchema.Objective(rawValue: c.objective) else {
            throw TabularError.invalidModel(file: file, what: "objective", expected: "binary, multiclass or regression", actual: c.objective)
        }
        func ints(_ name: String) throws -> [Int32] {
            guard let t = model.tensor(named: name), t.dtype == .i32 else {
                throw TabularError.invalidModel(file: file, what: "tensor '\(name)'", expected: "an i32 tensor", actual: "none")
            }
            return (0..<(t.bytes.count / 4)).map { Int32(littleEndian: t.bytes.buffer.loadUnaligned(fromByteOffset: $0 * 4, as: Int32.self)) }
        }
        guard let learner = Learner(rawValue: c.learner ?? "boosted") else {
            throw TabularError.invalidModel(file: file, what: "learner", expected: "boosted, forest, tree or linear", actual: c.learner ?? "")
        }
        func floats(_ name: String?) throws -> [Float] {
            guard let name, let t = model.tensor(named: name), t.dtype == .f32 else {
                throw TabularError.invalidModel(file: file, what: "tensor '\(name ?? "")'", expected: "an f32 tensor", actual: "none")
            }
            return (0..<(t.bytes.count / 4)).map { t.bytes.buffer.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
        }
        let words = try ints(c.categoriesTensor).map { UInt32(bitPattern: $0) }
        if let leaves = c.leafValuesTensor {
            let shared = SharedTrees(treeStarts: try ints(c.treesTensor), nodes: try ints(c.nodesTensor), values: try floats(c.valuesTensor),
                                     categoryWords: words, leaves: try floats(leaves))
            self.init(objective: objective, target: c.target, labels: md.labels, features: c.features, baseScores: c.baseScores)
            try Self.checkLeaves(shared, k: scoreCount, file: file)
            full = nil
            compact = CompactTrees(scoring: shared.forScoring(), k: scoreCount)
        } else {
            self.init(objective: objective, target: c.target, labels: md.labels, features: c.features, baseScores: c.baseScores,
                      treeStarts: try ints(c.treesTensor), nodes: try ints(c.nodesTensor), values: try floats(c.valuesTensor),
                      categoryWords: words)
        }
        self.learner = learner
        // A multiclass forest in a file from before shared trees: scored the shared way all the same.
        if scoringTrees == nil, learner == .forest || learner == .tree { shareTrees() }
        if learner == .linear {
            let scaling = try floats(c.scalingTensor), weights = try floats(c.weightsTensor)
            let d = LinearTerms.offsets(c.features)[c.features.count]
            guard scaling.count == 2 * c.features.count, weights.count == d * scoreCount else {
                throw TabularError.invalidModel(file: file, what: "linear tensors", expected: "[\(c.features.count), 2] and [\(d), \(scoreCount)]",
                                                actual: "\(scaling.count) and \(weights.count) values")
            }
            linear = LinearTerms(means: stride(from: 0, to: scaling.count, by: 2).map { scaling[$0] },
                                 scales: stride(from: 1, to: scaling.count, by: 2).map { scaling[$0] }, weights: weights)
        }
    }

    /// The model file's contents: metadata (task "tabular") and the four tensors (a linear model: six; shared
    /// multiclass trees: five).
    public func model(name: String? = nil, metrics: [String: Double] = [:], provenance: Provenance = Provenance()) -> Model {
        model(name: name, metrics: metrics, provenance: provenance, sharing: true)
    }

    /// `sharing` false writes every tree, as files before shared trees did (for the tests of both encodings).
    func model(name: String?, metrics: [String: Double], provenance: Provenance, sharing: Bool) -> Model {
        var md = ModelMetadata(task: .tabular, labels: labels, provenance: provenance)
        md.name = name
        md.metrics = metrics
        var c = TabularConfig(objective: objective.rawValue, target: target, features: features, baseScores: baseScores,
                              learner: learner == .boosted ? nil : learner.rawValue)
        if linear != nil { c.weightsTensor = "tabular.weights"; c.scalingTensor = "tabular.scaling" }
        // A multiclass forest's K trees per round are stored once (docs/FORMAT.md 4.5, "Shared multiclass trees").
        let shared = sharing ? sharedTrees() : nil
        if shared != nil { c.leafValuesTensor = "tabular.leafValues" }
        md.tabular = c
        let s = shared ?? SharedTrees(treeStarts: treeStarts, nodes: nodes, values: values, categoryWords: categoryWords)
        func bytes<T>(_ v: [T]) -> TensorBytes { TensorBytes(copying: v.withUnsafeBytes { Array($0) }) }
        var tensors = [
            StoredTensor(name: c.treesTensor, dtype: .i32, shape: [s.treeStarts.count], bytes: bytes(s.treeStarts.map(\.littleEndian))),
            StoredTensor(name: c.nodesTensor, dtype: .i32, shape: [s.values.count, 5], bytes: bytes(s.nodes.map(\.littleEndian))),
            StoredTensor(name: c.valuesTensor, tensor: Tensor(shape: [s.values.count], data: s.values)),
            StoredTensor(name: c.categoriesTensor, dtype: .i32, shape: [s.categoryWords.count],
                         bytes: bytes(s.categoryWords.map { Int32(bitPattern: $0).littleEndian })),
        ]
        if let name = c.leafValuesTensor {
            tensors.append(StoredTensor(name: name, tensor: Tensor(shape: [s.leaves.count / scoreCount, scoreCount], data: s.leaves)))
        }
        if let linear, let w = c.weightsTensor, let s = c.scalingTensor {
            tensors.append(StoredTensor(name: s, tensor: Tensor(shape: [features.count, 2], data: zip(linear.means, linear.scales).flatMap { [$0, $1] })))
            tensors.append(StoredTensor(name: w, tensor: Tensor(shape: [linear.weights.count / scoreCount, scoreCount], data: linear.weights)))
        }
        return Model(metadata: md, tensors: tensors)
    }
}

/// The tables `scores` walks, shared read-only by its workers.
struct ScoringTables: @unchecked Sendable {
    let rows: UnsafeBufferPointer<Float>, nodes: UnsafeBufferPointer<Int32>, values: UnsafeBufferPointer<Float>
    let words: UnsafeBufferPointer<UInt32>, starts: UnsafeBufferPointer<Int32>, counts: UnsafeBufferPointer<Int32>
    /// Shared trees' leaf values, [leaf · K + k] (empty when every tree is walked).
    let leaves: UnsafeBufferPointer<Float>

    init(_ rows: UnsafeBufferPointer<Float>, _ nodes: UnsafeBufferPointer<Int32>, _ values: UnsafeBufferPointer<Float>,
         _ words: UnsafeBufferPointer<UInt32>, _ starts: UnsafeBufferPointer<Int32>, _ counts: UnsafeBufferPointer<Int32>,
         _ leaves: UnsafeBufferPointer<Float>) {
        self.rows = rows; self.nodes = nodes; self.values = values; self.words = words; self.starts = starts; self.counts = counts
        self.leaves = leaves
    }

    /// The same tables over other rows.
    func with(rows: UnsafeBufferPointer<Float>) -> ScoringTables {
        ScoringTables(rows, nodes, values, words, starts, counts, leaves)
    }
}
