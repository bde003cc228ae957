import Foundation
import MLToolCore
import MLToolTabular

/// A tabular model's prediction throughput in process (`mltool bench MODEL --rows TABLE`): the table is read and
/// turned into features once, then `TreeEnsemble.predict` runs over all its rows, the best of the runs made in about
/// `seconds` kept — the way LightGBM's and XGBoost's `predict` are timed on data already in memory. (`mltool predict`
/// on a CSV also pays for starting the process, reading the file and writing the answers.)
public struct TabularBenchmark: Sendable {
    public struct Result: Sendable, Encodable {
        public var model: String
        public var rows: Int
        /// The fastest run's time for every row.
        public var bestSeconds: Double
        public var runs: Int
        public var rowsPerSecond: Double

        enum CodingKeys: String, CodingKey {
            case model, rows, runs, bestSeconds = "best_seconds", rowsPerSecond = "rows_per_second"
        }
    }

    public var modelPath: String
    public var table: String
    public var seconds = 3.0

    public init(modelPath: String, table: String) {
        self.modelPath = modelPath; self.table = table
    }

    public func run() throws -> Result {
        guard seconds > 0 else { throw PipelineError.invalidParameter(name: "seconds", reason: "\(seconds) is not > 0") }
        let ensemble = try TreeEnsemble(model: try ModelLoader.load(modelPath), file: modelPath)
        let rows = try RawTable.read(table)
        guard !rows.rows.isEmpty else { throw PipelineError.badInput(file: table, reason: "no rows to predict") }
        let matrix = try FeatureMatrix(table: rows, features: ensemble.features)
        _ = ensemble.predict(matrix)   // warm-up: pages and caches
        var best = Double.infinity, runs = 0
        let started = Date()
        repeat {
            let t = Date()
            _ = ensemble.predict(matrix)
            best = min(best, Date().timeIntervalSince(t))
            runs += 1
        } while Date().timeIntervalSince(started) < seconds || runs < 3
        return Result(model: modelPath, rows: rows.rows.count, bestSeconds: best, runs: runs,
                      rowsPerSecond: Double(rows.rows.count) / max(best, .leastNormalMagnitude))
    }
}
