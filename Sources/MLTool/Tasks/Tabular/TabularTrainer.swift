import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolFormat
import MLToolTabular

/// Trains a tabular model (Create ML's `MLBoostedTreeClassifier` / `MLBoostedTreeRegressor`): reads the table,
/// infers the columns, splits a seeded holdout (unless a test table is given) and a validation share (unless a
/// validation table is given), trains boosted trees with early stopping on validation and scores the test rows.
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

    public func train(progress: ((PipelineEvent) -> Void)? = nil) throws -> Result {
        let started = Date()
        let p = parameters
        guard let target = p.target else {
            throw PipelineError.invalidParameter(name: "--target", reason: "a tabular model needs --target COLUMN (the column to predict)")
        }
        let table = try RawTable.read(data)
        let schema = try TabularSchema.infer(table, target: target, categorical: Set(p.categorical), ignore: Set(p.ignore),
                                             regression: p.regression)
        var rng = SplitMix64(seed: p.seed)
        var order = Array(table.rows.indices)
        for i in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        let testTable: RawTable?
        if let test {
            testTable = try RawTable.read(test)
        } else if p.holdoutFraction > 0 {
            let count = min(Int((Double(order.count) * p.holdoutFraction).rounded()), order.count - 1)
            testTable = TabularSchema.rows(table, order.suffix(count).sorted())
            order.removeLast(count)
        } else {
            testTable = nil
        }
        let validationTable: RawTable?
        if let v = p.validationData {
            validationTable = try RawTable.read(v)
        } else {
            let count = min(Int((Double(order.count) * p.validation.fraction(count: order.count)).rounded()), order.count - 1)
            validationTable = count > 0 ? TabularSchema.rows(table, order.suffix(count).sorted()) : nil
            order.removeLast(count)
        }
        let trainTable = TabularSchema.rows(table, order.sorted())
        let train = try FeatureMatrix(table: trainTable, features: schema.features)
        let validation = try validationTable.map { (try FeatureMatrix(table: $0, features: schema.features), try schema.targets(of: $0)) }
        progress?(.status("mltool: \(schema.features.count) features, \(schema.objective.rawValue); training on \(train.rowCount) rows"))
        let r = BoostedTreeTrainer(parameters: p.trees).train(schema: schema, train: train, targets: try schema.targets(of: trainTable),
                                                              validation: validation)
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
        return Result(model: r.ensemble.model(name: p.name, metrics: metrics, provenance: provenance), ensemble: r.ensemble,
                      trainRows: train.rowCount, validationRows: validation?.0.rowCount ?? 0, testRows: testTable?.rows.count ?? 0,
                      rounds: r.rounds, evaluation: evaluation, seconds: Date().timeIntervalSince(started))
    }
}
