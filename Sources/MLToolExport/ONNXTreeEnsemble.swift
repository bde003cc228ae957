import Foundation
import MLToolCore
import MLToolTabular

/// Writes a tabular model (a tree ensemble, docs/FORMAT.md 4.5) as ONNX-ML (opset 13 and ai.onnx.ml 2):
///
/// - input `features` float32 (N, F): column f is feature f (the order of `features` in `metadata_props`): a numeric
///   field as binary32, a categorical field as the index of its string in the feature's `categories`; NaN where the
///   field is missing (a categorical code that is not an index of a category is read as missing, as mltool does).
/// - categorical splits: per categorical feature, its code (NaN and codes outside [0, categories) mapped to the
///   table's last row with Greater, Less, And, Where, then Cast to int64) picks a row of a look-up table (Gather),
///   one column per split (`TreeNodes`); those columns are concatenated after the features.
/// - a classifier: `TreeEnsembleClassifier` (LOGISTIC for two classes, SOFTMAX for more) with outputs `label`
///   (N, string) and `probabilities` (N, C); a regressor: `TreeEnsembleRegressor` with output `prediction` (N, 1).
///   Every split is BRANCH_LEQ with `nodes_missing_value_tracks_true` set where missing values go left.
enum ONNXTreeEnsemble {
    static func export(_ model: Model, name: String) throws -> ExportResult {
        let e = try TreeEnsemble(model: model, file: name)
        if let linear = e.linear { return try pack(ONNXLinearModel.program(e, linear), e, model, name: name) }
        let t = try TreeNodes(e, style: .lookups, model: name, format: "ONNX")
        var p = ONNXProgram()
        p.extraOpsets = [("ai.onnx.ml", 2)]
        p.inputs = [.init(name: "features", dims: [-1, e.features.count])]
        var columns = ["features"]
        for l in t.lookups { columns.append(lookup(l, &p)) }
        var x = "features"
        if columns.count > 1 {
            x = "tree_input"
            p.nodes.append(.init(op: "Concat", name: "tree_input", inputs: columns, outputs: [x], attributes: [("axis", .int(1))]))
        }
        var a: [(String, ONNXProgram.AttributeValue)] = [
            ("nodes_treeids", .ints(t.nodes.map(\.tree))), ("nodes_nodeids", .ints(t.nodes.map(\.id))),
            ("nodes_featureids", .ints(t.nodes.map(\.feature))), ("nodes_modes", .strings(t.nodes.map { $0.leaf ? "LEAF" : "BRANCH_LEQ" })),
            ("nodes_values", .floats(t.nodes.map(\.threshold))), ("nodes_truenodeids", .ints(t.nodes.map(\.yes))),
            ("nodes_falsenodeids", .ints(t.nodes.map(\.no))), ("nodes_missing_value_tracks_true", .ints(t.nodes.map { $0.missingYes ? 1 : 0 })),
        ]
        let leaves = t.nodes.filter(\.leaf), k = t.scoreCount
        let prefix = e.objective == .regression ? "target" : "class"
        a += [("\(prefix)_treeids", .ints(leaves.map(\.tree))), ("\(prefix)_nodeids", .ints(leaves.map(\.id))),
              ("\(prefix)_ids", .ints(leaves.map { $0.tree % k })), ("\(prefix)_weights", .floats(leaves.map(\.weight)))]
        switch e.objective {
        case .regression:
            a += [("n_targets", .int(1)), ("aggregate_function", .string("SUM")), ("post_transform", .string("NONE"))]
            p.nodes.append(.init(op: "TreeEnsembleRegressor", name: "trees", inputs: [x], outputs: ["prediction"], attributes: a, domain: "ai.onnx.ml"))
            p.outputs = [.init(name: "prediction", dims: [-1, 1])]
        case .binary, .multiclass:
            a += [("classlabels_strings", .strings(e.labels)), ("post_transform", .string(e.learner != .boosted ? "NONE" : e.objective == .binary ? "LOGISTIC" : "SOFTMAX"))]
            p.nodes.append(.init(op: "TreeEnsembleClassifier", name: "trees", inputs: [x], outputs: ["label", "probabilities"],
                                 attributes: a, domain: "ai.onnx.ml"))
            p.outputs = [.init(name: "label", dims: [-1], elemType: ONNXProgram.DataType.string),
                         .init(name: "probabilities", dims: [-1, e.labels.count])]
        }
        return try pack(p, e, model, name: name)
    }

    /// The tabular model's metadata (target, objective, the features and the input contract) on `p`, packed.
    static func pack(_ program: ONNXProgram, _ e: TreeEnsemble, _ model: Model, name: String) throws -> ExportResult {
        var p = program
        let md = model.metadata
        p.graphName = md.name ?? "mltool"
        p.docString = md.description ?? "exported by mltool \(MLToolInfo.version)"
        p.metadata = ExportMetadata.pairs(md, notes: [], inputLayout: "") + [
            ("target", e.target), ("objective", e.objective.rawValue),
            ("features", ExportMetadata.json(e.features.map { TabularInput(name: $0.name, kind: $0.kind.rawValue, categories: $0.categories) })),
            ("input", "features (N, \(e.features.count)) float32: column f is features[f]; a numeric field as binary32, a categorical "
                + "field as the index of its string in features[f].categories; NaN where the field is missing or the category unknown"),
        ]
        return ExportResult(bytes: try ONNXWriter.pack(p, modelName: name), notes: [])
    }

    /// One input column of the exported model, as `metadata_props["features"]` lists it.
    struct TabularInput: Encodable {
        var name: String, kind: String, categories: [String]?
    }

    /// The nodes that turn feature `l.feature`'s codes into its split columns; returns their (N, columns) tensor.
    static func lookup(_ l: TreeNodes.Lookup, _ p: inout ONNXProgram) -> String {
        let s = "cat\(l.feature)"
        func constant(_ name: String, _ dims: [Int], floats: [Float]) {
            p.initializers.append(.init(name: name, dataType: ONNXProgram.DataType.float, dims: dims,
                                        raw: floats.flatMap { v in withUnsafeBytes(of: v.bitPattern.littleEndian) { Array($0) } }))
        }
        p.initializers.append(.init(name: s + ".column", dataType: ONNXProgram.DataType.int64, dims: [],
                                    raw: withUnsafeBytes(of: Int64(l.feature).littleEndian) { Array($0) }))
        constant(s + ".low", [], floats: [-1])
        constant(s + ".count", [], floats: [Float(l.categories)])
        constant(s + ".table", [l.categories + 1, l.columns], floats: l.table)
        func node(_ op: String, _ inputs: [String], _ out: String, _ attributes: [(String, ONNXProgram.AttributeValue)] = []) {
            p.nodes.append(.init(op: op, name: s + "." + out, inputs: inputs, outputs: [s + "." + out], attributes: attributes))
        }
        node("Gather", ["features", s + ".column"], "code", [("axis", .int(1))])
        // A code c is a category iff −1 < c < count (Cast truncates toward zero, as mltool's Int(c) does); NaN is not.
        node("Greater", [s + ".code", s + ".low"], "above")
        node("Less", [s + ".code", s + ".count"], "below")
        node("And", [s + ".above", s + ".below"], "known")
        node("Where", [s + ".known", s + ".code", s + ".count"], "row")
        node("Cast", [s + ".row"], "index", [("to", .int(Int(ONNXProgram.DataType.int64)))])
        node("Gather", [s + ".table", s + ".index"], "splits", [("axis", .int(0))])
        return s + ".splits"
    }
}
