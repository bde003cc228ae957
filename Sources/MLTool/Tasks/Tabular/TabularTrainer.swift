import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolFormat
import MLToolTabular

/// Trains a tabular model (Create ML's `MLBoostedTreeClassifier` / `MLBoostedTreeRegressor`, `MLRandomForest…`,
/// `MLDecisionTree…`, `MLLogisticRegressionClassifier` / `MLLinearRegressor`): reads the table, infers the columns,
/// splits a seeded holdout (unless a test table is given) and a validation share (unless a validation table is given;
/// boosted trees only), trains the learner (boosted trees with early stopping on validation) and scores the test rows.
///
///     var p = TabularParameters()
///     p.target = "price"
///     let r = try TabularTrainer(data: "diamonds.csv", parameters: p).train()
///     try r.write(to: "price.bin")
public struct TabularTrainer: Sendable {
    public var data: String
    public var test: String?
    public var parameters: TabularParameters

    public init(data: String, test: String? = nil, parameters: TabularParameters = TabularParameters()) {
        self.data = data; self.test = test; self.parameters = parameters
    }

    public struct Result: Sendable {
        public var model: Model
        public var ensemble: TreeEnsemble
        public var trainRows: Int, validationRows: Int, testRows: Int
        /// The rounds kept; the evaluation of the test or holdout rows (nil when there are none).
        public var rounds: Int
        public var evaluation: TabularEvaluation?
        public var seconds: Double

        public func write(to path: String) throws { try ModelFile.write(model, to: path) }
    }

    /// Each training row's weight, its class's; nil without class weights.
    static func rowWeights(_ w: TabularParameters.ClassWeights, schema: TabularSchema, targets: [Float]) throws -> [Float]? {
        guard w != .none else { return nil }
        guard schema.objective != .regression else {
            throw PipelineError.invalidParameter(name: "--class-weights", reason: "--class-weights needs classes; '\(schema.target)' is a regression target")
        }
        var perClass = [Double](repeating: 1, count: schema.labels.count)
        switch w {
        case .none: break
        case .balanced:
            var counts = [Double](repeating: 0, count: schema.labels.count)
            for t in targets { counts[Int(t)] += 1 }
            for c in perClass.indices where counts[c] > 0 { perClass[c] = Double(targets.count) / (Double(schema.labels.count) * counts[c]) }
        case .given(let given):
            for (label, weight) in given.sorted(by: { $0.key < $1.key }) {
                guard let c = schema.labels.firstIndex(of: label) else {
                    throw PipelineError.invalidParameter(name: "--class-weights", reason: "--class-weights: '\(label)' is not a class of '\(schema.target)' "
                        + "(\(schema.labels.prefix(20).joined(separator: ", "))\(schema.labels.count > 20 ? ", …" : ""))")
                }
                perClass[c] = weight
            }
        }
        return targets.map { Float(perClass[Int($0)]) }
    }

    /// The learner's trees: boosted with early stopping on `validation`, or a forest / one tree (which do not use it).
    static func fit(_ p: TabularParameters, schema: TabularSchema, train: FeatureMatrix, targets: [Float],
                    validation: (FeatureMatrix, [Float])?,
                    cancellation: Cancellation = Cancellation()) throws -> (ensemble: TreeEnsemble, rounds: Int) {
        let check = { try cancellation.check() }
        let weights = try rowWeights(p.classWeights, schema: schema, targets: targets)
        switch p.learner {
        case .boosted:
            var trees = p.trees
            trees.seed = p.seed
            let r = try BoostedTreeTrainer(parameters: trees).train(schema: schema, train: train, targets: targets, validation: validation,
                                                                      weights: weights, check: check)
            return (r.ensemble, r.rounds)
        case .forest, .tree:
            var forest = p.learner == .tree ? ForestParameters.singleTree : p.forest
            forest.maxDepth = p.forest.maxDepth; forest.seed = p.seed; forest.threads = p.trees.threads
            let e = try ForestTrainer(parameters: forest).train(schema: schema, train: train, targets: targets, weights: weights,
                                                                learner: p.learner == .tree ? .tree : .forest, check: check)
            return (e, e.treeCount / e.scoreCount)
        case .linear:
            return (try LinearTrainer(l2: p.linearL2).train(schema: schema, train: train, targets: targets, weights: weights), 0)
        }
    }

    /// Trains and evaluates; `cancellation` stops it before each boosting round or tree (`CancellationError`).
    public func train(progress: ((PipelineEvent) -> Void)? = nil, cancellation: Cancellation = Cancellation()) throws -> Result {
        let started = Date()
        let p = parameters
        guard let target = p.target else {
            let columns = TabularTask.header(of: data).map { "; \(data)'s columns: " + $0.joined(separator: ", ") } ?? ""
            throw PipelineError.invalidParameter(name: "--target", reason: "a tabular model needs --target COLUMN (the column to predict\(columns))")
        }
        let table = try RawTable.read(data)
        let schema = try TabularSchema.infer(table, target: target, categorical: Set(p.categorical), ignore: Set(p.ignore),
                                             regression: p.regression)
        var rng = SplitMix64(seed: p.seed)
        var order = Array(table.rows.indices)
        for i in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        // The rows evaluated at the end (the --test table, or the holdout's rows of the data), recorded in the model.
        let testTable: RawTable?, evaluated: (table: RawTable, rows: [Int])?
        if let test {
            let t = try RawTable.read(test)
            testTable = t; evaluated = (t, Array(t.rows.indices))
        } else if p.holdoutFraction > 0 {
            let count = min(Int((Double(order.count) * p.holdoutFraction).rounded()), order.count - 1)
            let rows = Array(order.suffix(count).sorted())
            testTable = TabularSchema.rows(table, rows); evaluated = (table, rows)
            order.removeLast(count)
        } else {
            testTable = nil; evaluated = nil
        }
        let validationTable: RawTable?
        if let v = p.validationData {
            validationTable = try RawTable.read(v)
        } else {
            // Forests, single trees and linear models do not stop early: their rows are all for training.
            let fraction = p.learner == .boosted ? p.validation.fraction(count: order.count) : 0
            let count = min(Int((Double(order.count) * fraction).rounded()), order.count - 1)
            validationTable = count > 0 ? TabularSchema.rows(table, order.suffix(count).sorted()) : nil
            order.removeLast(count)
        }
        let trainTable = TabularSchema.rows(table, order.sorted())
        let train = try FeatureMatrix(table: trainTable, features: schema.features)
        let validation = try validationTable.map { (try FeatureMatrix(table: $0, features: schema.features), try schema.targets(of: $0)) }
        progress?(.status("mltool: \(schema.features.count) features, \(schema.objective.rawValue); training on \(train.rowCount) rows"))
        guard p.trees.regressionLoss == .squared || schema.objective == .regression else {
            throw PipelineError.invalidParameter(name: "--loss", reason: "--loss \(p.trees.regressionLoss.rawValue) is a regression's loss; "
                + "'\(target)' is a classification target")
        }
        let targets = try schema.targets(of: trainTable)
        let r = try Self.fit(p, schema: schema, train: train, targets: targets, validation: validation, cancellation: cancellation)
        let evaluation = try testTable.map { try TabularEvaluation(ensemble: r.ensemble, table: $0) }
        var metrics: [String: Double] = ["rounds": Double(r.rounds)]
        let split = test == nil ? "holdout" : "test"
        if let c = evaluation?.classification {
            metrics["\(split).accuracy"] = c.accuracy; metrics["\(split).logLoss"] = c.logLoss
            metrics["\(split).macroF1"] = c.macro.f1
        }
        if let g = evaluation?.regression { metrics["\(split).rmse"] = g.rmse; metrics["\(split).r2"] = g.r2 }
        // No timings: the same data and seed give the same bytes.
        let provenance = Provenance(seed: p.seed, command: TabularTask.Setup(data: data, test: test, parameters: p).command(TabularTask.options))
        var model = r.ensemble.model(name: p.name, metrics: metrics, provenance: provenance)
        if let evaluated, !evaluated.rows.isEmpty {
            model.metadata.split = try TabularHoldout.manifest(evaluated.table, rows: evaluated.rows, target: target, trainCount: train.rowCount,
                                                               validationCount: validation?.0.rowCount ?? 0, seed: p.seed)
        }
        return Result(model: model, ensemble: r.ensemble,
                      trainRows: train.rowCount, validationRows: validation?.0.rowCount ?? 0, testRows: testTable?.rows.count ?? 0,
                      rounds: r.rounds, evaluation: evaluation, seconds: Date().timeIntervalSince(started))
    }
}
