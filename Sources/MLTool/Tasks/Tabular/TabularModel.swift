import Foundation
import MLToolCore
import MLToolTabular

/// A trained tabular model for prediction (Create ML's `MLBoostedTreeClassifier.predictions(from:)`, LightGBM's
/// `Booster.predict`): rows in as column → field, predictions out.
///
///     let model = try TabularModel(contentsOf: "Diabetes.bin")
///     let p = try model.predict(rows: [["glucose": "148", "mass": "33.6", "age": "50"]])
///     print(p[0].label ?? "", p[0].probabilities)
public struct TabularModel: Sendable {
    public let ensemble: TreeEnsemble

    /// One row's prediction: the class and its probabilities (classifiers), or the value (regressors).
    public struct Prediction: Sendable, Equatable {
        public var label: String?
        public var probabilities: [String: Float]
        public var value: Float?
    }

    public init(contentsOf path: String) throws {
        ensemble = try TreeEnsemble(model: try ModelLoader.load(path), file: path)
    }

    public init(model: Model, file: String = "model") throws { ensemble = try TreeEnsemble(model: model, file: file) }

    /// The column names the model reads, and the one it predicts.
    public var features: [String] { ensemble.features.map(\.name) }
    public var target: String { ensemble.target }

    /// Predictions for rows given as column → field (a column a row lacks is missing there).
    public func predict(rows: [[String: String]]) throws -> [Prediction] {
        try predict(table: Self.table(rows: rows, columns: features, file: "<rows>"))
    }

    /// `rows` (column → field) as a table of `columns`, numbered from 1; a column a row lacks is missing there.
    static func table(rows: [[String: String]], columns: [String], file: String) -> RawTable {
        RawTable(file: file, header: columns, rows: rows.map { r in columns.map { r[$0] ?? "" } }, lines: rows.indices.map { $0 + 1 })
    }

    /// Predictions for the rows of a table (read with `RawTable.read`).
    public func predict(table: RawTable) throws -> [Prediction] {
        let out = ensemble.predict(try FeatureMatrix(table: table, features: ensemble.features))
        guard ensemble.objective != .regression else {
            return out.map { Prediction(label: nil, probabilities: [:], value: $0) }
        }
        let labels = ensemble.labels, k = labels.count
        return (0..<table.rows.count).map { r in
            let p = Array(out[(r * k)..<((r + 1) * k)])
            let best = p.indices.max { p[$0] < p[$1] } ?? 0
            return Prediction(label: labels[best], probabilities: Dictionary(uniqueKeysWithValues: zip(labels, p)), value: nil)
        }
    }
}
