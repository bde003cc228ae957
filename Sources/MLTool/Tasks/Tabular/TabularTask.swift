import Foundation
import MLToolCore
import MLToolData
import MLToolTabular

/// Tabular data (Create ML's `MLBoostedTreeClassifier` / `MLBoostedTreeRegressor`, LightGBM): a CSV, TSV or JSON
/// Lines table with a --target column; histogram gradient-boosted trees.
public enum TabularTask: TaskKind {
    public typealias Setup = TrainingSetup<TabularParameters>
    public static let name = "tabular"
    public static let title = "Tabular data"
    public static var trainingHelp: String {
        let t = BoostedTreeParameters(), f = ForestParameters()
        return """
            A CSV, TSV or JSON Lines table and --target COLUMN (a table with neither a path nor a text column is
            tabular data without it, and the error names its columns). Columns are numeric,
            or categorical when their fields are words (--categorical, --ignore override); empty, NA and NaN fields are
            missing, and each split learns where they go. A target of words or of at most 10 distinct integers is a
            classification (binary or multiclass log-loss), else a regression (squared error); --objective overrides.
            Histogram gradient-boosted trees grown leaf-wise (\(t.leaves) leaves, learning rate \(t.learningRate), \(t.minDataInLeaf) rows per leaf, \(t.maxBins) bins,
            native categorical splits), at most \(t.iterations) rounds, stopping \(t.earlyStopping) rounds after the best loss on the
            validation rows (--validation, or --validation-data TABLE). --learner forest: \(f.trees) trees on bootstrap rows,
            √F features drawn per split for classes (all for a regression), grown to pure leaves, averaged (scikit-learn's
            random forest); --learner tree: one such tree on every row and feature. --learner linear: logistic (binary or
            softmax) or ridge regression on standardised numeric columns (a missing value: the mean and an indicator
            column) and one-hot categories, L2 α = --linear-l2 (scikit-learn's C = 1/α or Ridge alpha).
            """
    }

    static let id = OptionDeclaration("--id", value: "COLUMN", help: "Tables: copy this column into each prediction.")

    @Sendable static func names(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The options, in the order the recorded command lists them.
    public static let options: OptionTable<Setup> = {
        let d = TabularParameters()
        typealias O = TaskOption<Setup>
        return OptionTable([
            TrainingOptions.out(\.name, default: d.name),
            O(OptionDeclaration("--target", value: "COLUMN", help: "The column to predict (required)."),
              set: { s, v in s.parameters.target = v }, record: { s in s.parameters.target.map { ["--target", $0] } ?? [] }),
            TrainingOptions.test(),
            TrainingOptions.holdout(\.holdoutFraction, default: d.holdoutFraction),
            TrainingOptions.validation(\.validation),
            O(OptionDeclaration("--validation-data", value: "TABLE", help: "Validation rows for early stopping (instead of --validation)."),
              set: { s, v in s.parameters.validationData = v }, record: { s in s.parameters.validationData.map { ["--validation-data", $0] } ?? [] }),
            TrainingOptions.seed(\.seed, default: d.seed),
            O(OptionDeclaration("--categorical", value: "COL,…", help: "Read these columns as categories."),
              set: { s, v in s.parameters.categorical = names(v) },
              record: { s in s.parameters.categorical.isEmpty ? [] : ["--categorical", s.parameters.categorical.joined(separator: ",")] }),
            O(OptionDeclaration("--ignore", value: "COL,…", help: "Leave these columns out."),
              set: { s, v in s.parameters.ignore = names(v) },
              record: { s in s.parameters.ignore.isEmpty ? [] : ["--ignore", s.parameters.ignore.joined(separator: ",")] }),
            O(OptionDeclaration("--objective", value: "classification|regression", help: "Override how the target is told."), set: { s, v in
                guard v == "classification" || v == "regression" else {
                    throw OptionText.refuse("--objective", "--objective must be classification or regression")
                }
                s.parameters.regression = v == "regression"
            }, record: { s in s.parameters.regression.map { ["--objective", $0 ? "regression" : "classification"] } ?? [] }),
            O(OptionDeclaration("--learner", value: "boosted|forest|tree|linear", help: "The learner (default \(d.learner.rawValue))."),
              set: { s, v in
                  guard let learner = TabularParameters.Learner(rawValue: v) else {
                      throw OptionText.refuse("--learner", "--learner must be boosted, forest, tree or linear")
                  }
                  s.parameters.learner = learner
              }, record: { s in s.parameters.learner == d.learner ? [] : ["--learner", s.parameters.learner.rawValue] }),
            O(OptionDeclaration("--linear-l2", value: "X", kind: .number,
                                help: "--learner linear: α of Σ loss + α/2·‖W‖², scikit-learn's C = 1/α or Ridge alpha (default \(d.linearL2))."),
              set: { s, v in
                  let x = try OptionText.double("--linear-l2", v)
                  guard x > 0, x.isFinite else { throw OptionText.refuse("--linear-l2", "--linear-l2 must be a number > 0") }
                  s.parameters.linearL2 = x
              }, record: { s in s.parameters.linearL2 == d.linearL2 ? [] : ["--linear-l2", "\(s.parameters.linearL2)"] }),
            O(OptionDeclaration("--forest-trees", value: "N", kind: .integer, help: "--learner forest: trees (default \(d.forest.trees))."),
              set: { s, v in
                  guard let trees = Int(v), trees >= 1 else { throw OptionText.refuse("--forest-trees", "--forest-trees must be an integer ≥ 1") }
                  s.parameters.forest.trees = trees
              }, record: { s in s.parameters.forest.trees == d.forest.trees ? [] : ["--forest-trees", "\(s.parameters.forest.trees)"] }),
            O(OptionDeclaration("--max-depth", value: "N", kind: .integer, help: "--learner forest or tree: the deepest split level (default: none)."),
              set: { s, v in
                  guard let depth = Int(v), depth >= 1 else { throw OptionText.refuse("--max-depth", "--max-depth must be an integer ≥ 1") }
                  s.parameters.forest.maxDepth = depth
              }, record: { s in s.parameters.forest.maxDepth.map { ["--max-depth", "\($0)"] } ?? [] }),
            TrainingOptions.int(OptionDeclaration("--iterations", value: "N", kind: .integer, help: "Boosting rounds at most (default \(d.trees.iterations))."),
                                \.trees.iterations, default: d.trees.iterations),
            TrainingOptions.int(OptionDeclaration("--leaves", value: "N", kind: .integer, help: "Leaves per tree (default \(d.trees.leaves))."),
                                \.trees.leaves, default: d.trees.leaves),
            TrainingOptions.int(OptionDeclaration("--min-data-in-leaf", value: "N", kind: .integer, help: "Rows per leaf at least (default \(d.trees.minDataInLeaf))."),
                                \.trees.minDataInLeaf, default: d.trees.minDataInLeaf),
            TrainingOptions.int(OptionDeclaration("--stop-after", value: "N", kind: .integer, help: "Stop N rounds after the best validation loss (default \(d.trees.earlyStopping))."),
                                \.trees.earlyStopping, default: d.trees.earlyStopping),
            O(OptionDeclaration("--learning-rate", value: "X", kind: .number, help: "Shrinkage (default \(d.trees.learningRate))."), set: { s, v in
                let x = try OptionText.double("--learning-rate", v)
                guard x > 0, x <= 1 else { throw OptionText.refuse("--learning-rate", "--learning-rate must be in (0, 1]") }
                s.parameters.trees.learningRate = Float(x)
            }, record: { s in s.parameters.trees.learningRate == d.trees.learningRate ? [] : ["--learning-rate", "\(s.parameters.trees.learningRate)"] }),
            O(OptionDeclaration("--leaf-l2", value: "X", kind: .number, help: "L2 regularisation of leaf values (default \(d.trees.l2))."), set: { s, v in
                s.parameters.trees.l2 = try OptionText.double("--leaf-l2", v)
                guard s.parameters.trees.l2 >= 0 else { throw OptionText.refuse("--leaf-l2", "--leaf-l2 must be ≥ 0") }
            }, record: { s in s.parameters.trees.l2 == d.trees.l2 ? [] : ["--leaf-l2", "\(s.parameters.trees.l2)"] }),
            O(OptionDeclaration("--leaf-l1", value: "X", kind: .number, help: "L1 regularisation of leaf values (default \(d.trees.l1))."), set: { s, v in
                s.parameters.trees.l1 = try OptionText.double("--leaf-l1", v)
                guard s.parameters.trees.l1 >= 0 else { throw OptionText.refuse("--leaf-l1", "--leaf-l1 must be ≥ 0") }
            }, record: { s in s.parameters.trees.l1 == d.trees.l1 ? [] : ["--leaf-l1", "\(s.parameters.trees.l1)"] }),
            O(OptionDeclaration("--loss", value: "squared|absolute|huber", help: "A regression's loss (default \(d.trees.regressionLoss.rawValue))."),
              set: { s, v in
                  guard let loss = BoostedTreeParameters.RegressionLoss(rawValue: v) else {
                      throw OptionText.refuse("--loss", "--loss must be squared, absolute or huber")
                  }
                  s.parameters.trees.regressionLoss = loss
              }, record: { s in s.parameters.trees.regressionLoss == d.trees.regressionLoss ? [] : ["--loss", s.parameters.trees.regressionLoss.rawValue] }),
            fraction("--huber-delta", "Huber's loss: errors beyond X count linearly", \.trees.huberDelta, default: d.trees.huberDelta, upTo: .infinity),
            fraction("--row-fraction", "The share of rows each round's trees grow on", \.trees.rowFraction, default: d.trees.rowFraction),
            fraction("--feature-fraction", "The share of features each tree may split on", \.trees.featureFraction, default: d.trees.featureFraction),
            O(OptionDeclaration("--class-weights", value: "balanced|LABEL=W,…", help: "Weigh each class's rows (classification)."),
              set: { s, v in s.parameters.classWeights = try classWeights(v) },
              record: { s in
                  switch s.parameters.classWeights {
                  case .none: return []
                  case .balanced: return ["--class-weights", "balanced"]
                  case .given(let w): return ["--class-weights", w.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")]
                  }
              }),
            TrainingOptions.threads(\.trees.threads),
        ])
    }()

    /// A number option in (0, `upTo`] that sets `path`, recorded when it is not the default.
    static func fraction(_ flag: String, _ help: String, _ path: WritableKeyPath<TabularParameters, Double> & Sendable, default value: Double,
                         upTo top: Double = 1) -> TaskOption<Setup> {
        TaskOption<Setup>(OptionDeclaration(flag, value: "X", kind: .number, help: "\(help) (default \(value))."), set: { s, v in
            let x = try OptionText.double(flag, v)
            guard x > 0, x <= top, x.isFinite else { throw OptionText.refuse(flag, "\(flag) must be in (0, \(top == 1 ? "1" : "∞"))" + (top == 1 ? "]" : "")) }
            s.parameters[keyPath: path] = x
        }, record: { s in s.parameters[keyPath: path] == value ? [] : [flag, "\(s.parameters[keyPath: path])"] })
    }

    /// `balanced`, or LABEL=W pairs (W > 0) separated by commas.
    @Sendable static func classWeights(_ text: String) throws -> TabularParameters.ClassWeights {
        if text == "balanced" { return .balanced }
        var weights: [String: Double] = [:]
        for pair in names(text) {
            guard let eq = pair.lastIndex(of: "="), let w = Double(pair[pair.index(after: eq)...]), w > 0, w.isFinite else {
                throw OptionText.refuse("--class-weights", "--class-weights: '\(pair)' is not LABEL=W with a weight W > 0 (or give 'balanced')")
            }
            weights[String(pair[..<eq])] = w
        }
        return .given(weights)
    }

    public static var trainOptions: [OptionDeclaration] { options.declarations }
    public static var predictionOptions: [OptionDeclaration] { [id] }

    /// A table (.csv, .tsv, .jsonl) given with --target.
    public static func handles(model: Model) -> Bool { model.metadata.task == .tabular }

    public static func predictsOn(file: String, model: Model) -> Bool { RawTable.isTable(file) }

    public static func train(_ request: TaskRequest) throws {
        let setup = try Setup.reading(request, options, parameters: TabularParameters())
        let trainer = TabularTrainer(data: setup.data, test: setup.test, parameters: setup.parameters)
        let r = try trainer.train(progress: request.progress, cancellation: request.cancellation)
        try r.write(to: setup.output)
        let e = r.ensemble, split = setup.test == nil ? "holdout" : "test"
        let kind = e.objective == .regression ? "a regressor" : "a \(e.objective.rawValue) classifier of \(e.labels.count) classes"
        request.print("trained \(kind) for '\(e.target)' on \(r.trainRows) rows (\(r.validationRows) validation, \(r.testRows) \(split)), \(e.features.count) features")
        if let w = e.linear?.weights {
            request.print("  linear     \(w.count / e.scoreCount) derived columns × \(e.scoreCount) score\(e.scoreCount == 1 ? "" : "s"), α \(setup.parameters.linearL2)")
        } else {
            request.print("  trees      \(e.treeCount) (\(r.rounds) rounds), \(e.nodeCount) nodes")
        }
        if let c = r.evaluation?.classification {
            request.print(String(format: "  %@ accuracy %.4f, macro F1 %.4f, log-loss %.4f", split, c.accuracy, c.macro.f1, c.logLoss))
        }
        if let g = r.evaluation?.regression { request.print(String(format: "  %@ RMSE %.6g, MAE %.6g, R² %.4f", split, g.rmse, g.mae, g.r2)) }
        request.print(String(format: "  seconds    %.2f", r.seconds))
        request.print("  wrote      \(setup.output)")
    }

    /// Metrics and feature importance on a table with the target column.
    public static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws {
        guard models.count == 1 else { throw TabularError.notYetSupported(what: "comparing two tabular models") }
        let model = try ModelLoader.load(models[0])
        let ensemble = try TreeEnsemble(model: model, file: models[0])
        // Without a table, the rows recorded at training (its holdout or --test rows).
        let table = try data.map { try RawTable.read($0) } ?? TabularHoldout.table(model, modelPath: models[0])
        let ev = try TabularEvaluation(ensemble: ensemble, table: table)
        let source = data ?? "its recorded holdout (\(table.rows.count) rows of \(table.file))"
        try request.writeReport { path in
            try ev.htmlReport(model: model, path: models[0], source: source).write(to: path, inputs: models + [table.file])
        }
        guard request.values.has("--json") else { return request.print(ev.text(title: "\(models[0]) on \(source)")) }
        struct Importance: Encodable { var feature: String; var gain: Double; var splits: Int }
        struct Report: Encodable {
            var classification: EvaluationReport?; var regression: RegressionMetrics?; var importance: [Importance]
        }
        request.print(try TaskOutput.json(Report(classification: ev.classification, regression: ev.regression,
                                                 importance: ev.importance.map { Importance(feature: $0.name, gain: $0.gain, splits: $0.splits) })))
    }

    /// Each row's prediction (and class probabilities) as CSV, or as JSON lines with --json; --id copies a column.
    public static func predict(_ request: TaskRequest, model: Model, modelPath: String, inputs: [String]) throws {
        let ensemble = try TreeEnsemble(model: model, file: modelPath)
        let idColumn = request.values.string("--id"), json = request.values.has("--json")
        let classes = ensemble.objective == .regression ? [] : ensemble.labels
        if !json {
            request.print(((idColumn.map { [$0] } ?? []) + [ensemble.target] + classes.map { "p(\($0))" }).map(csvField).joined(separator: ","))
        }
        for input in inputs {
            let table = try RawTable.read(input)
            let id = try idColumn.map { try table.column($0) }
            let out = ensemble.predict(try FeatureMatrix(table: table, features: ensemble.features))
            for r in 0..<table.rows.count {
                let row = RowPrediction(out, row: r, classes: classes)
                let rowID = id.map { table.rows[r][$0] }
                request.print(json ? row.json(id: rowID) : ((rowID.map { [$0] } ?? []) + row.fields).map(csvField).joined(separator: ","))
            }
        }
    }

    /// One row's prediction as `mltool predict` prints it (and `mltool serve` answers it): the class and its
    /// probabilities, or the value.
    struct RowPrediction {
        let value: String
        let probabilities: [Float]
        let classes: [String]

        /// Row `r` of the ensemble's output for a batch (`classes.count` values a row, or one value for a regressor).
        init(_ out: [Float], row r: Int, classes: [String]) {
            self.classes = classes
            let p = classes.isEmpty ? [] : Array(out[(r * classes.count)..<((r + 1) * classes.count)])
            probabilities = p
            value = classes.isEmpty ? "\(out[r])" : classes[p.indices.max { p[$0] < p[$1] } ?? 0]
        }

        /// The CSV fields after the id: the prediction, then each class's probability.
        var fields: [String] { [value] + probabilities.map { "\($0)" } }

        /// `{"id": …, "prediction": …, "probabilities": {…}}` (no id when nil, no probabilities for a regressor).
        func json(id: String?) -> String {
            var fields = id.map { ["\"id\": \(TaskOutput.jsonString($0))"] } ?? []
            fields.append("\"prediction\": " + (classes.isEmpty ? value : TaskOutput.jsonString(value)))
            if !classes.isEmpty {
                fields.append("\"probabilities\": {" + zip(classes, probabilities).map { "\(TaskOutput.jsonString($0)): \($1)" }
                    .joined(separator: ", ") + "}")
            }
            return "{" + fields.joined(separator: ", ") + "}"
        }
    }

    /// A CSV field, quoted when it holds a comma, a quote or a line break.
    static func csvField(_ s: String) -> String {
        s.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) ? "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : s
    }
}
