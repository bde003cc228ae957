import CCoreMLProto
import MLToolTabular

extension CoreMLLinearModel {
    typealias TreeNode = CoreML__Specification__TreeEnsembleParameters__TreeNode

    /// The `terms` stage: the missing indicators' and one-hot columns' weights as trees (see `CoreMLLinearModel`).
    static func termTrees(_ s: Scores, _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__TreeEnsembleRegressor> {
        let offsets = LinearTerms.offsets(s.e.features)
        var nodes: [TreeNode] = [], tree = 0
        let zeros = [Double](repeating: 0, count: s.count)
        func weights(_ d: Int) -> [Double] { (0..<s.count).map { s.value(d, $0) } }
        for (i, feature) in s.e.features.enumerated() {
            let first = offsets[i], count = offsets[i + 1] - first
            if feature.kind == .numeric {
                guard weights(first + 1).contains(where: { $0 != 0 }) else { continue }
                // x ≤ +∞ holds for every number; NaN takes the false child.
                nodes += [branch(tree, 0, feature: i, value: .infinity, equal: false, yes: 1, no: 2, arena),
                          leaf(tree, 1, zeros, arena), leaf(tree, 2, weights(first + 1), arena)]
            } else {
                guard (first..<first + count).contains(where: { weights($0).contains { $0 != 0 } }) else { continue }
                // Test c is node 2c, its leaf 2c + 1; node 2 · count is the leaf of NaN and unknown codes.
                for c in 0..<count {
                    nodes += [branch(tree, 2 * c, feature: i, value: Double(c), equal: true, yes: 2 * c + 1, no: 2 * c + 2, arena),
                              leaf(tree, 2 * c + 1, weights(first + c), arena)]
                }
                nodes.append(leaf(tree, 2 * count, zeros, arena))
            }
            tree += 1
        }
        if nodes.isEmpty { nodes = [leaf(0, 0, zeros, arena)] }
        var params = CoreML__Specification__TreeEnsembleParameters()
        core_ml__specification__tree_ensemble_parameters__init(&params)
        params.n_nodes = nodes.count; params.nodes = arena.messages(nodes)
        params.numpredictiondimensions = UInt64(s.count)
        params.n_basepredictionvalue = s.count; params.basepredictionvalue = arena.array(zeros)
        var r = CoreML__Specification__TreeEnsembleRegressor()
        core_ml__specification__tree_ensemble_regressor__init(&r)
        r.treeensemble = arena.new(params)
        return arena.new(r)
    }

    static func branch(_ tree: Int, _ id: Int, feature: Int, value: Double, equal: Bool, yes: Int, no: Int, _ arena: CArena) -> TreeNode {
        var n = TreeNode()
        core_ml__specification__tree_ensemble_parameters__tree_node__init(&n)
        n.treeid = UInt64(tree); n.nodeid = UInt64(id)
        n.nodebehavior = equal ? 4 : 0   // BranchOnValueEqual, BranchOnValueLessThanEqual
        n.branchfeatureindex = UInt64(feature); n.branchfeaturevalue = value
        n.truechildnodeid = UInt64(yes); n.falsechildnodeid = UInt64(no)
        n.missingvaluetrackstruechild = 0
        return n
    }

    static func leaf(_ tree: Int, _ id: Int, _ values: [Double], _ arena: CArena) -> TreeNode {
        var n = TreeNode()
        core_ml__specification__tree_ensemble_parameters__tree_node__init(&n)
        n.treeid = UInt64(tree); n.nodeid = UInt64(id)
        n.nodebehavior = 6   // LeafNode
        let infos = values.enumerated().map { index, value in
            var info = CoreML__Specification__TreeEnsembleParameters__TreeNode__EvaluationInfo()
            core_ml__specification__tree_ensemble_parameters__tree_node__evaluation_info__init(&info)
            info.evaluationindex = UInt64(index); info.evaluationvalue = value
            return info
        }
        n.n_evaluationinfo = infos.count; n.evaluationinfo = arena.messages(infos)
        return n
    }

    static func classifier(_ weights: [[Double]], _ offsets: [Double], labels: [String],
                           _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__GLMClassifier> {
        let rows = weights.map { w in
            var a = CoreML__Specification__GLMClassifier__DoubleArray()
            core_ml__specification__glmclassifier__double_array__init(&a)
            a.n_value = w.count; a.value = arena.array(w)
            return a
        }
        var names = CoreML__Specification__StringVector()
        core_ml__specification__string_vector__init(&names)
        names.n_vector = labels.count; names.vector = arena.strings(labels)
        var c = CoreML__Specification__GLMClassifier()
        core_ml__specification__glmclassifier__init(&c)
        c.n_weights = rows.count; c.weights = arena.messages(rows)
        c.n_offset = offsets.count; c.offset = arena.array(offsets)
        c.postevaluationtransform = 0   // Logit
        c.classencoding = 0             // ReferenceClass
        c.stringclasslabels = arena.new(names)
        return arena.new(c)
    }

    static func regressor(_ weights: [[Double]], _ offsets: [Double], _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__GLMRegressor> {
        let rows = weights.map { w in
            var a = CoreML__Specification__GLMRegressor__DoubleArray()
            core_ml__specification__glmregressor__double_array__init(&a)
            a.n_value = w.count; a.value = arena.array(w)
            return a
        }
        var r = CoreML__Specification__GLMRegressor()
        core_ml__specification__glmregressor__init(&r)
        r.n_weights = rows.count; r.weights = arena.messages(rows)
        r.n_offset = offsets.count; r.offset = arena.array(offsets)
        r.postevaluationtransform = 0   // NoTransform
        return arena.new(r)
    }
}
