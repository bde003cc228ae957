import CCoreMLProto
import MLToolCore
import MLToolTabular

/// Writes a linear tabular model (docs/FORMAT.md 4.5, "Linear models") as a Core ML pipeline (specification version
/// 1) with the tree ensembles' input contract (`features`, F doubles: numbers, category indices, NaN where missing):
///
/// 1. `Imputer`: NaN → the feature's mean (0 for a categorical one), giving `filled`.
/// 2. `TreeEnsembleRegressor` on `features`, giving `terms` (J values): what the standardised columns cannot carry —
///    per numeric feature with a missing-indicator weight, one tree "x ≤ +∞" whose false child (NaN) holds the
///    indicator's weights; per categorical feature, a chain of "code = c" tests whose true children hold category c's
///    one-hot weights (a NaN or unknown code ends at a leaf of zeros). One leaf of zeros when no feature needs one.
/// 3. `FeatureVectorizer`: `filled` then `terms`, giving `columns` (F + J).
/// 4. `GLMClassifier` (Logit, ReferenceClass: score j = class j + 1's score minus class 0's, so the first class gets
///    1 / (1 + Σ e^s) and class j + 1 e^s_j / (1 + Σ e^s) — the softmax of mltool's K scores, exactly; two classes:
///    one score, the second class's) with outputs `classLabel` and `classProbability`, or `GLMRegressor` with output
///    `prediction`. The standardisation is folded into the weights: numeric feature f's weight is w_f · scale_f and
///    the offset takes − Σ w_f · scale_f · mean_f (a filled mean adds 0, as mltool's standardised missing value does);
///    a categorical feature's code has weight 0; `terms` have weight 1 on their own score.
/// J = 1 for two classes and regression, K − 1 for K classes. All in binary64; mltool sums the same terms in binary64
/// and rounds the scores once to binary32.
enum CoreMLLinearModel {
    /// The model's scores as J Core ML scores: weight of derived column `d` (or the base score, `d` nil) on score `j`.
    struct Scores {
        let e: TreeEnsemble, linear: LinearTerms
        var count: Int { e.objective == .multiclass ? e.scoreCount - 1 : 1 }

        func value(_ d: Int?, _ j: Int) -> Double {
            let k = e.scoreCount, multi = e.objective == .multiclass
            func raw(_ s: Int) -> Double { Double(d.map { linear.weights[$0 * k + s] } ?? e.baseScores[s]) }
            return multi ? raw(j + 1) - raw(0) : raw(j)
        }
    }

    static func export(_ model: Model, _ e: TreeEnsemble, _ linear: LinearTerms, name: String) throws -> ExportResult {
        let arena = CArena(), types = CoreMLTreeEnsemble.FeatureTypes(arena), s = Scores(e: e, linear: linear)
        let f = e.features.count, j = s.count
        let input = types.feature("features", "\(f) features (userDefined 'features'): numbers, category indices, NaN when missing",
                                  types.array(f))
        let filled = types.feature("filled", "The features, missing values replaced by their means", types.array(f))
        let terms = types.feature("terms", "Scores of missing values and categories", types.array(j))
        let columns = types.feature("columns", "filled, then terms", types.array(f + j))
        var outputs: [CoreML__Specification__FeatureDescription]
        if e.objective == .regression {
            outputs = [types.feature("prediction", "The predicted \(e.target)", types.double)]
        } else {
            outputs = [types.feature("classLabel", "The most likely \(e.target)", types.string),
                       types.feature("classProbability", "The probability of each class", types.stringDictionary)]
        }
        var stages = [stage([input], [filled], arena) { $0.imputer = imputer(linear, arena) },
                      stage([input], [terms], arena) { $0.treeensembleregressor = termTrees(s, arena) },
                      stage([filled, terms], [columns], arena) { $0.featurevectorizer = vectorizer([("filled", f), ("terms", j)], arena) }]
        let (weights, offsets) = glm(s)
        stages.append(stage([columns], outputs, arena) { m in
            if e.objective == .regression { m.glmregressor = regressor(weights, offsets, arena) } else {
                m.glmclassifier = classifier(weights, offsets, labels: e.labels, arena)
                m.description.pointee.predictedfeaturename = arena.string("classLabel")
                m.description.pointee.predictedprobabilitiesname = arena.string("classProbability")
            }
        })
        var pipe = CoreML__Specification__Pipeline()
        core_ml__specification__pipeline__init(&pipe)
        pipe.n_models = stages.count; pipe.models = arena.messages(stages)
        pipe.n_names = stages.count; pipe.names = arena.strings(["imputer", "terms", "vectorizer", "linear"])
        var m = CoreML__Specification__Model()
        core_ml__specification__model__init(&m)
        m.specificationversion = CoreMLTreeEnsemble.specificationVersion
        let desc = description([input], outputs, arena)
        desc.pointee.metadata = CoreMLTreeEnsemble.metadata(model, e, arena)
        if e.objective == .regression {
            var r = CoreML__Specification__PipelineRegressor()
            core_ml__specification__pipeline_regressor__init(&r)
            r.pipeline = arena.new(pipe)
            m.pipelineregressor = arena.new(r)
            desc.pointee.predictedfeaturename = arena.string("prediction")
        } else {
            var c = CoreML__Specification__PipelineClassifier()
            core_ml__specification__pipeline_classifier__init(&c)
            c.pipeline = arena.new(pipe)
            m.pipelineclassifier = arena.new(c)
            desc.pointee.predictedfeaturename = arena.string("classLabel")
            desc.pointee.predictedprobabilitiesname = arena.string("classProbability")
        }
        m.description = desc
        return ExportResult(bytes: try CoreMLWriter.serialize(&m, modelName: name), notes: [])
    }

    /// The GLM's J weight rows over `columns` (F filled features, then J terms) and its J offsets.
    static func glm(_ s: Scores) -> (weights: [[Double]], offsets: [Double]) {
        let offsets = LinearTerms.offsets(s.e.features), f = s.e.features.count
        var weights: [[Double]] = [], base: [Double] = []
        for j in 0..<s.count {
            var row = [Double](repeating: 0, count: f + s.count), b = s.value(nil, j)
            for (i, feature) in s.e.features.enumerated() where feature.kind == .numeric {
                row[i] = s.value(offsets[i], j) * Double(s.linear.scales[i])
                b -= row[i] * Double(s.linear.means[i])
            }
            row[f + j] = 1
            weights.append(row); base.append(b)
        }
        return (weights, base)
    }

    /// A pipeline stage: a model of specification version 1 with these inputs and outputs, its type set by `body`.
    static func stage(_ inputs: [CoreML__Specification__FeatureDescription], _ outputs: [CoreML__Specification__FeatureDescription],
                      _ arena: CArena, _ body: (inout CoreML__Specification__Model) -> Void) -> CoreML__Specification__Model {
        var m = CoreML__Specification__Model()
        core_ml__specification__model__init(&m)
        m.specificationversion = CoreMLTreeEnsemble.specificationVersion
        m.description = description(inputs, outputs, arena)
        body(&m)
        return m
    }

    static func description(_ inputs: [CoreML__Specification__FeatureDescription], _ outputs: [CoreML__Specification__FeatureDescription],
                            _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__ModelDescription> {
        var d = CoreML__Specification__ModelDescription()
        core_ml__specification__model_description__init(&d)
        d.n_input = inputs.count; d.input = arena.messages(inputs)
        d.n_output = outputs.count; d.output = arena.messages(outputs)
        return arena.new(d)
    }

    static func imputer(_ linear: LinearTerms, _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__Imputer> {
        var v = CoreML__Specification__DoubleVector()
        core_ml__specification__double_vector__init(&v)
        v.n_vector = linear.means.count; v.vector = arena.array(linear.means.map(Double.init))
        var i = CoreML__Specification__Imputer()
        core_ml__specification__imputer__init(&i)
        i.imputeddoublearray = arena.new(v)
        i.replacedoublevalue = .nan
        return arena.new(i)
    }

    static func vectorizer(_ inputs: [(String, Int)], _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__FeatureVectorizer> {
        let columns = inputs.map { name, count in
            var c = CoreML__Specification__FeatureVectorizer__InputColumn()
            core_ml__specification__feature_vectorizer__input_column__init(&c)
            c.inputcolumn = arena.string(name); c.inputdimensions = UInt64(count)
            return c
        }
        var v = CoreML__Specification__FeatureVectorizer()
        core_ml__specification__feature_vectorizer__init(&v)
        v.n_inputlist = columns.count; v.inputlist = arena.messages(columns)
        return arena.new(v)
    }
}
