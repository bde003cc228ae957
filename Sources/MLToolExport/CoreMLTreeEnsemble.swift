import CCoreMLProto
import CProtobufC
import Foundation
import MLToolCore
import MLToolTabular

/// Writes a tabular model (a tree ensemble, docs/FORMAT.md 4.5) as a Core ML tree ensemble (specification version 1):
///
/// - input `features`, a MultiArray of F doubles: element f is feature f (the order of `features` in userDefined): a
///   numeric field's binary32 value, a categorical field as the index of its string in the feature's `categories`;
///   NaN where the field is missing. An unknown category must be NaN too (its code would go where the split's other
///   categories go, `TreeNodes.Style.equalityChains`).
/// - a classifier: `treeEnsembleClassifier` (Regression_Logistic of one score for two classes, Classification_SoftMax
///   of K scores for more; tree t adds to score t mod K) with outputs `classLabel` (string) and `classProbability`
///   (label → probability); a regressor: `treeEnsembleRegressor` with output `prediction` (double).
///   Numeric splits are BranchOnValueLessThanEqual, categorical ones chains of BranchOnValueEqual;
///   `missingValueTracksTrueChild` is set where missing values take the true child.
/// A linear model becomes a pipeline ending in a glmClassifier / glmRegressor instead (`CoreMLLinearModel`).
enum CoreMLTreeEnsemble {
    static let specificationVersion: Int32 = 1

    static func export(_ model: Model, name: String) throws -> ExportResult {
        let e = try TreeEnsemble(model: model, file: name)
        if e.learner == .linear, let linear = e.linear { return try CoreMLLinearModel.export(model, e, linear, name: name) }
        let t = try TreeNodes(e, style: .equalityChains, model: name, format: "Core ML")
        let arena = CArena()
        // Averaged trees of two classes: two scores, 1 / T − v and v per leaf of value v = p / T, summed with no transform.
        let split = e.learner != .boosted && e.objective == .binary, share = 1 / Float(max(e.treeCount, 1))
        let dimensions = split ? 2 : t.scoreCount
        let nodes = t.nodes.map { node($0, scores: t.scoreCount, split: split, share: share, arena) }
        var params = CoreML__Specification__TreeEnsembleParameters()
        core_ml__specification__tree_ensemble_parameters__init(&params)
        params.n_nodes = nodes.count; params.nodes = arena.messages(nodes)
        params.numpredictiondimensions = UInt64(dimensions)
        // The base scores are in the first trees' leaves (TreeNodes).
        params.n_basepredictionvalue = dimensions; params.basepredictionvalue = arena.array([Double](repeating: 0, count: dimensions))

        var m = CoreML__Specification__Model()
        core_ml__specification__model__init(&m)
        m.specificationversion = specificationVersion
        let types = FeatureTypes(arena)
        var outputs: [CoreML__Specification__FeatureDescription]
        var desc = CoreML__Specification__ModelDescription()
        core_ml__specification__model_description__init(&desc)
        if e.objective == .regression {
            var r = CoreML__Specification__TreeEnsembleRegressor()
            core_ml__specification__tree_ensemble_regressor__init(&r)
            r.treeensemble = arena.new(params)
            m.treeensembleregressor = arena.new(r)
            outputs = [types.feature("prediction", "The predicted \(e.target)", types.double)]
            desc.predictedfeaturename = arena.string("prediction")
        } else {
            var labels = CoreML__Specification__StringVector()
            core_ml__specification__string_vector__init(&labels)
            labels.n_vector = e.labels.count; labels.vector = arena.strings(e.labels)
            var c = CoreML__Specification__TreeEnsembleClassifier()
            core_ml__specification__tree_ensemble_classifier__init(&c)
            c.treeensemble = arena.new(params)
            // NoTransform (0) for averaged trees: their sums are the probabilities.
            c.postevaluationtransform = e.learner != .boosted ? 0 : e.objective == .binary ? 2 : 1
            c.stringclasslabels = arena.new(labels)
            m.treeensembleclassifier = arena.new(c)
            outputs = [types.feature("classLabel", "The most likely \(e.target)", types.string),
                       types.feature("classProbability", "The probability of each class", types.stringDictionary)]
            desc.predictedfeaturename = arena.string("classLabel")
            desc.predictedprobabilitiesname = arena.string("classProbability")
        }
        let inputs = [types.feature("features", "\(e.features.count) features (userDefined 'features'): numbers, category indices, NaN when missing",
                                    types.array(e.features.count))]
        desc.n_input = inputs.count; desc.input = arena.messages(inputs)
        desc.n_output = outputs.count; desc.output = arena.messages(outputs)
        desc.metadata = metadata(model, e, arena)
        m.description = arena.new(desc)
        return ExportResult(bytes: try CoreMLWriter.serialize(&m, modelName: name), notes: [])
    }

    /// The model's description, author, license and version, and in userDefined its target, objective and features.
    static func metadata(_ model: Model, _ e: TreeEnsemble, _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__Metadata> {
        let md = model.metadata
        var p = CoreMLProgram()
        p.author = md.author ?? ""; p.license = md.license ?? ""; p.version = md.version ?? ""
        p.shortDescription = md.description ?? "\(md.name ?? "tabular model") (exported by mltool \(MLToolInfo.version))"
        p.metadata = ExportMetadata.pairs(md, notes: [], inputLayout: "") + [
            ("target", e.target), ("objective", e.objective.rawValue),
            ("features", ExportMetadata.json(e.features.map { ONNXTreeEnsemble.TabularInput(name: $0.name, kind: $0.kind.rawValue, categories: $0.categories) })),
        ]
        return arena.new(CoreMLWriter.metadata(p, arena))
    }

    /// One node of the spec: a leaf's value on its class's score (averaged binary trees: 1 / T − v and v on two
    /// scores), or a branch.
    static func node(_ n: TreeNodes.Node, scores: Int, split: Bool, share: Float, _ arena: CArena)
        -> CoreML__Specification__TreeEnsembleParameters__TreeNode {
        var c = CoreML__Specification__TreeEnsembleParameters__TreeNode()
        core_ml__specification__tree_ensemble_parameters__tree_node__init(&c)
        c.treeid = UInt64(n.tree); c.nodeid = UInt64(n.id)
        if n.leaf {
            c.nodebehavior = 6
            let infos = (split ? [(0, share - n.weight), (1, n.weight)] : [(n.tree % scores, n.weight)]).map { index, value in
                var info = CoreML__Specification__TreeEnsembleParameters__TreeNode__EvaluationInfo()
                core_ml__specification__tree_ensemble_parameters__tree_node__evaluation_info__init(&info)
                info.evaluationindex = UInt64(index); info.evaluationvalue = Double(value)
                return info
            }
            c.n_evaluationinfo = infos.count; c.evaluationinfo = arena.messages(infos)
        } else {
            c.nodebehavior = n.equal ? 4 : 0
            c.branchfeatureindex = UInt64(n.feature); c.branchfeaturevalue = Double(n.threshold)
            c.truechildnodeid = UInt64(n.yes); c.falsechildnodeid = UInt64(n.no)
            c.missingvaluetrackstruechild = n.missingYes ? 1 : 0
        }
        return c
    }

    /// Feature descriptions and the types a tree ensemble's take.
    struct FeatureTypes {
        let arena: CArena
        init(_ arena: CArena) { self.arena = arena }

        func feature(_ name: String, _ doc: String, _ type: CoreML__Specification__FeatureType) -> CoreML__Specification__FeatureDescription {
            var f = CoreML__Specification__FeatureDescription()
            core_ml__specification__feature_description__init(&f)
            f.name = arena.string(name); f.shortdescription = arena.string(doc); f.type = arena.new(type)
            return f
        }

        var string: CoreML__Specification__FeatureType {
            var s = CoreML__Specification__StringFeatureType()
            core_ml__specification__string_feature_type__init(&s)
            var t = CoreML__Specification__FeatureType()
            core_ml__specification__feature_type__init(&t)
            t.stringtype = arena.new(s)
            return t
        }

        var double: CoreML__Specification__FeatureType {
            var d = CoreML__Specification__DoubleFeatureType()
            core_ml__specification__double_feature_type__init(&d)
            var t = CoreML__Specification__FeatureType()
            core_ml__specification__feature_type__init(&t)
            t.doubletype = arena.new(d)
            return t
        }

        var stringDictionary: CoreML__Specification__FeatureType {
            var s = CoreML__Specification__StringFeatureType()
            core_ml__specification__string_feature_type__init(&s)
            var d = CoreML__Specification__DictionaryFeatureType()
            core_ml__specification__dictionary_feature_type__init(&d)
            d.stringkeytype = arena.new(s)
            var t = CoreML__Specification__FeatureType()
            core_ml__specification__feature_type__init(&t)
            t.dictionarytype = arena.new(d)
            return t
        }

        /// A MultiArray of `count` doubles (data type 65600).
        func array(_ count: Int) -> CoreML__Specification__FeatureType {
            var a = CoreML__Specification__ArrayFeatureType()
            core_ml__specification__array_feature_type__init(&a)
            a.n_shape = 1; a.shape = arena.array([Int64(count)])
            a.datatype = 65600
            var t = CoreML__Specification__FeatureType()
            core_ml__specification__feature_type__init(&t)
            t.multiarraytype = arena.new(a)
            return t
        }
    }
}
