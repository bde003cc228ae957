import MLToolCore

extension ModelFile {
    /// A tree ensemble's metadata and tensors (docs/FORMAT.md section 4.5 and rule 15): counts checked before they
    /// are used, every child inside its tree and after its parent (so no tree has a cycle), every node reached once.
    static func validateTabular(_ m: ModelMetadata, tensors: [StoredTensor], file: String) throws {
        func bad(_ field: String, _ reason: String) -> FormatError {
            .badGraph(file: file, node: "tabular", field: field, reason: reason)
        }
        guard m.task == .tabular else {
            if m.tabular != nil { throw bad("tabular", "present for task \(m.task.rawValue)") }
            return
        }
        guard let c = m.tabular else { throw bad("tabular", "missing for task tabular") }
        let k: Int
        switch c.objective {
        case "binary":
            guard m.labels.count == 2 else { throw bad("labels", "\(m.labels.count) labels for objective binary; need 2") }
            k = 1
        case "multiclass":
            guard m.labels.count >= 3 else { throw bad("labels", "\(m.labels.count) labels for objective multiclass; need at least 3") }
            k = m.labels.count
        case "regression":
            guard m.labels.isEmpty else { throw bad("labels", "\(m.labels.count) labels for objective regression; need none") }
            k = 1
        default: throw bad("objective", "'\(c.objective)'; expected binary, multiclass or regression")
        }
        try validateLearner(c, scores: k, tensors: tensors, file: file)
        var seen = Set<String>()
        for label in m.labels where !seen.insert(label).inserted { throw bad("labels", "'\(label)' occurs twice") }
        guard c.baseScores.count == k else { throw bad("baseScores", "\(c.baseScores.count) scores; expected \(k)") }
        guard c.baseScores.allSatisfy(\.isFinite) else { throw bad("baseScores", "not finite") }
        guard !c.features.isEmpty else { throw bad("features", "none") }
        var names = Set<String>()
        for (i, f) in c.features.enumerated() {
            guard names.insert(f.name).inserted else { throw bad("features[\(i)].name", "'\(f.name)' occurs twice") }
            guard f.gain.isFinite, f.gain >= 0, f.splits >= 0 else { throw bad("features[\(i)]", "gain or splits negative or not finite") }
            switch f.kind {
            case .numeric:
                guard f.categories == nil else { throw bad("features[\(i)].categories", "present for a numeric feature") }
            case .categorical:
                guard let cats = f.categories else { throw bad("features[\(i)].categories", "missing for a categorical feature") }
                guard cats.count <= 65_536 else { throw bad("features[\(i)].categories", "\(cats.count) categories; at most 65,536") }
            }
        }
        var byName: [String: StoredTensor] = [:]
        for t in tensors where byName[t.name] == nil { byName[t.name] = t }
        func tensor(_ field: String, _ name: String, _ dtype: DType, rank: Int) throws -> StoredTensor {
            guard let t = byName[name] else { throw bad(field, "no stored tensor named '\(name)'") }
            guard t.dtype == dtype else {
                throw FormatError.badTensor(file: file, tensor: name, field: "dtype", expected: dtype.name, actual: t.dtype.name)
            }
            guard t.shape.count == rank else {
                throw FormatError.badTensor(file: file, tensor: name, field: "shape", expected: "rank \(rank)", actual: "\(t.shape)")
            }
            return t
        }
        let trees = try tensor("treesTensor", c.treesTensor, .i32, rank: 1)
        let nodes = try tensor("nodesTensor", c.nodesTensor, .i32, rank: 2)
        let values = try tensor("valuesTensor", c.valuesTensor, .f32, rank: 1)
        let categories = try tensor("categoriesTensor", c.categoriesTensor, .i32, rank: 1)
        let n = nodes.shape[0], w = categories.shape[0]
        func shape(_ t: StoredTensor, _ expected: [Int]) throws {
            guard t.shape == expected else {
                throw FormatError.badTensor(file: file, tensor: t.name, field: "shape", expected: "\(expected)", actual: "\(t.shape)")
            }
        }
        try shape(nodes, [n, 5])
        try shape(values, [n])
        // Shared trees stand for K trees each: any count is whole rounds.
        let perRound = c.leafValuesTensor == nil ? k : 1
        guard trees.shape[0] >= 1, (trees.shape[0] - 1) % perRound == 0 else {
            throw FormatError.badTensor(file: file, tensor: trees.name, field: "shape",
                                        expected: "[T + 1] with T a multiple of \(k)", actual: "\(trees.shape)")
        }
        let tables = TreeTables(trees: trees, nodes: nodes, values: values, categories: categories)
        try tables.validate(features: c.features, words: w, file: file)
        if let name = c.leafValuesTensor { try tables.validateSharedLeaves(byName[name], named: name, scores: k, file: file) }
        if c.learner == "linear" { try validateLinear(c, scores: k, tensors: byName, file: file) }
    }

    /// The learner's name, its tree count ("tree": K, "linear": none) and the linear model's tensor names.
    static func validateLearner(_ c: TabularConfig, scores k: Int, tensors: [StoredTensor], file: String) throws {
        func bad(_ field: String, _ reason: String) -> FormatError { .badGraph(file: file, node: "tabular", field: field, reason: reason) }
        switch c.learner {
        case nil, "boosted", "forest": break
        case "linear":
            guard let trees = tensors.first(where: { $0.name == c.treesTensor }), trees.shape == [1] else {
                throw bad("learner", "'linear' with trees (it has none: treesTensor [1])")
            }
        case "tree":
            let stored = c.leafValuesTensor == nil ? k : 1
            guard let trees = tensors.first(where: { $0.name == c.treesTensor }), trees.shape == [stored + 1] else {
                throw bad("learner", "'tree' with other than \(k) tree\(k == 1 ? "" : "s") (one per score)")
            }
        case let other?: throw bad("learner", "'\(other)'; expected boosted, forest, tree or linear")
        }
        if c.leafValuesTensor != nil, c.learner != "forest" && c.learner != "tree" || c.objective != "multiclass" {
            throw bad("leafValuesTensor", "present for learner '\(c.learner ?? "boosted")' and objective '\(c.objective)'; only multiclass forests and trees share trees")
        }
        if c.learner != "linear", c.weightsTensor != nil || c.scalingTensor != nil {
            throw bad("weightsTensor", "present for learner '\(c.learner ?? "boosted")'; only a linear model has weights")
        }
    }

    /// A linear model's two tensors (docs/FORMAT.md 4.5, "Linear models"): f32 scaling [F, 2] with finite means and
    /// positive finite scales, f32 weights [D, K] all finite, D counted from the features with overflow checks.
    static func validateLinear(_ c: TabularConfig, scores k: Int, tensors: [String: StoredTensor], file: String) throws {
        var d = 0
        for f in c.features {
            let (sum, overflow) = d.addingReportingOverflow(f.kind == .numeric ? 2 : f.categories?.count ?? 0)
            guard !overflow else { throw FormatError.badGraph(file: file, node: "tabular", field: "features", reason: "too many derived columns") }
            d = sum
        }
        for (field, name, expected) in [("scalingTensor", c.scalingTensor, [c.features.count, 2]), ("weightsTensor", c.weightsTensor, [d, k])] {
            guard let name else { throw FormatError.badGraph(file: file, node: "tabular", field: field, reason: "missing for learner 'linear'") }
            guard let t = tensors[name] else {
                throw FormatError.badGraph(file: file, node: "tabular", field: field, reason: "no stored tensor named '\(name)'")
            }
            guard t.dtype == .f32 else { throw FormatError.badTensor(file: file, tensor: name, field: "dtype", expected: "f32", actual: t.dtype.name) }
            guard t.shape == expected else {
                throw FormatError.badTensor(file: file, tensor: name, field: "shape", expected: "\(expected)", actual: "\(t.shape)")
            }
            for i in 0..<(t.bytes.count / 4) {
                let v = t.bytes.buffer.loadUnaligned(fromByteOffset: i &* 4, as: Float.self)
                let scale = field == "scalingTensor" && i % 2 == 1
                guard v.isFinite, !scale || v > 0 else {
                    throw FormatError.badTensor(file: file, tensor: name, field: "values", expected: scale ? "a finite scale > 0" : "finite",
                                                actual: "element \(i): \(v)")
                }
            }
        }
    }
}

/// The four tensors of a tree ensemble read as integers and floats, for the node rules of docs/FORMAT.md 4.5.
struct TreeTables {
    let trees: StoredTensor, nodes: StoredTensor, values: StoredTensor, categories: StoredTensor

    init(trees: StoredTensor, nodes: StoredTensor, values: StoredTensor, categories: StoredTensor) {
        self.trees = trees; self.nodes = nodes; self.values = values; self.categories = categories
    }

    func int(_ t: StoredTensor, _ i: Int) -> Int {
        Int(Int32(littleEndian: t.bytes.buffer.loadUnaligned(fromByteOffset: i &* 4, as: Int32.self)))
    }

    func validate(features: [TabularConfig.Feature], words: Int, file: String) throws {
        let count = trees.shape[0] - 1, n = nodes.shape[0]
        func bad(_ tree: Int, _ node: Int?, _ reason: String) -> FormatError {
            .badTensor(file: file, tensor: node == nil ? trees.name : nodes.name, field: "values",
                       expected: "docs/FORMAT.md section 4.5",
                       actual: "tree \(tree)" + (node.map { ", node \($0)" } ?? "") + ": " + reason)
        }
        guard int(trees, 0) == 0 else { throw bad(0, nil, "starts at \(int(trees, 0)), not 0") }
        guard int(trees, count) == n else { throw bad(count, nil, "the last offset is \(int(trees, count)), not \(n)") }
        var parents = [UInt8](repeating: 0, count: n)
        for t in 0..<count {
            let start = int(trees, t), end = int(trees, t + 1)
            guard start < end else { throw bad(t, nil, "offsets \(start), \(end) are not increasing") }
            let size = end - start
            for local in 0..<size {
                let row = (start + local) * 5
                let feature = int(nodes, row), left = int(nodes, row + 1), right = int(nodes, row + 2)
                let flags = int(nodes, row + 3), offset = int(nodes, row + 4)
                let value = values.bytes.buffer.loadUnaligned(fromByteOffset: (start + local) * 4, as: Float.self)
                guard value.isFinite else { throw bad(t, local, "value \(value) is not finite") }
                if feature == -1 {
                    guard left == -1, right == -1, flags == 0, offset == 0 else {
                        throw bad(t, local, "a leaf with children, flags or a category offset")
                    }
                    continue
                }
                guard feature >= 0, feature < features.count else { throw bad(t, local, "feature \(feature) of \(features.count)") }
                guard left > local, left < size, right > local, right < size, left != right else {
                    throw bad(t, local, "children \(left), \(right) are not after the node inside the tree of \(size) nodes")
                }
                guard flags & ~3 == 0 else { throw bad(t, local, "unknown flags \(flags)") }
                let categorical = flags & 2 != 0
                guard categorical == (features[feature].kind == .categorical) else {
                    throw bad(t, local, "flags \(flags) do not match feature \(feature)'s kind \(features[feature].kind.rawValue)")
                }
                if categorical {
                    let span = ((features[feature].categories?.count ?? 0) + 31) / 32
                    guard offset >= 0, offset <= words - span else {
                        throw bad(t, local, "category words \(offset)..<\(offset + span) outside \(words)")
                    }
                } else {
                    guard offset == 0 else { throw bad(t, local, "a category offset on a numeric split") }
                }
                for child in [left, right] {
                    guard parents[start + child] == 0 else { throw bad(t, child, "the child of two splits") }
                    parents[start + child] = 1
                }
            }
            for local in 1..<max(size, 1) where parents[start + local] == 0 { throw bad(t, local, "the child of no split") }
        }
    }
}
