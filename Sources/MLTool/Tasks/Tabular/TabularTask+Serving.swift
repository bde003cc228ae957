import Foundation
import MLToolTabular

extension TabularTask {
    public static func servingPredictor(model: Model, path: String) throws -> any ServingPredictor {
        TabularServing(ensemble: try TreeEnsemble(model: model, file: path))
    }

    /// A row of the columns the model reads (from its metadata: the trees are not loaded).
    public static func previewInput(model: Model) -> PreviewInput? {
        let columns = (model.metadata.tabular?.features ?? []).map { PreviewInput.Column(name: $0.name, categories: $0.categories) }
        return PreviewInput(takes: .rows, columns: columns)
    }

    /// A tabular model's numbers are split thresholds and leaf values (or a linear model's few coefficients), not a
    /// network's weight tensors: `mltool quantize` has nothing to compress in it.
    public static func quantizationRefusal(model: Model) -> String? {
        "a tabular model holds split thresholds and leaf values (or a linear model's coefficients), not network "
            + "weights: quantize compresses networks (image, sound and text classifiers, detectors, word taggers)"
    }
}

/// A tabular model behind `mltool serve`: the rows of a batch are one table, predicted at once; each answer is the
/// object `mltool predict --json` prints for that row. A field is read as `mltool predict` reads it (FORMAT.md 4.5:
/// missing, not a number or an unknown category is a missing value), so a row can only be refused for its shape.
struct TabularServing: ServingPredictor {
    let ensemble: TreeEnsemble

    func predict(_ inputs: [ServingInput]) -> [Result<String, Error>] {
        let rows = inputs.map { input -> Result<[String: String], Error> in
            guard case .row(let r) = input else {
                return .failure(PipelineError.badInput(file: "request", reason: "a tabular model takes table rows, not images or texts"))
            }
            return .success(r)
        }
        let ready = rows.compactMap { try? $0.get() }
        let answers = Result { try answer(ready) }
        var next = 0
        return rows.map { r in
            r.flatMap { _ in answers.map { a in defer { next += 1 }; return a[next] } }
        }
    }

    /// The JSON answers for `rows`, in order.
    private func answer(_ rows: [[String: String]]) throws -> [String] {
        let table = TabularModel.table(rows: rows, columns: ensemble.features.map(\.name), file: "request rows")
        let out = ensemble.predict(try FeatureMatrix(table: table, features: ensemble.features))
        let classes = ensemble.objective == .regression ? [] : ensemble.labels
        return rows.indices.map { TabularTask.RowPrediction(out, row: $0, classes: classes).json(id: nil) }
    }
}
