import MLToolCore
import MLToolTabular

/// Writes a linear tabular model (docs/FORMAT.md 4.5, "Linear models") as ONNX-ML (opset 13 and ai.onnx.ml 2), with
/// the input contract of the tree ensembles (`features` float32 (N, F), categorical fields as category indices, NaN
/// where missing):
///
/// - the derived columns as plain ops: IsNaN marks missing values, Where puts the feature's mean there, Sub and Mul
///   standardise (N, F), Cast gives the missing indicators (N, F); per categorical feature, Gather takes its code
///   (N, 1) and Equal against 0…C−1 gives its one-hot columns (NaN and unknown codes: all 0). Concat joins them.
/// - `LinearClassifier` (LOGISTIC of one score for two classes, SOFTMAX for more) with outputs `label` and
///   `probabilities`, or `LinearRegressor` with output `prediction` (N, 1). The weights of the standardised and
///   indicator columns of categorical features are 0.
enum ONNXLinearModel {
    static func program(_ e: TreeEnsemble, _ linear: LinearTerms) -> ONNXProgram {
        var p = ONNXProgram()
        p.extraOpsets = [("ai.onnx.ml", 2)]
        p.inputs = [.init(name: "features", dims: [-1, e.features.count])]
        func floats(_ name: String, _ dims: [Int], _ v: [Float]) {
            p.initializers.append(.init(name: name, dataType: ONNXProgram.DataType.float, dims: dims,
                                        raw: v.flatMap { x in withUnsafeBytes(of: x.bitPattern.littleEndian) { Array($0) } }))
        }
        func node(_ op: String, _ inputs: [String], _ out: String, _ attributes: [(String, ONNXProgram.AttributeValue)] = []) {
            p.nodes.append(.init(op: op, name: out, inputs: inputs, outputs: [out], attributes: attributes))
        }
        let f = e.features.count
        floats("linear.means", [f], linear.means)
        floats("linear.scales", [f], linear.scales)
        node("IsNaN", ["features"], "linear.missing")
        node("Where", ["linear.missing", "linear.means", "features"], "linear.filled")
        node("Sub", ["linear.filled", "linear.means"], "linear.centred")
        node("Mul", ["linear.centred", "linear.scales"], "linear.standardised")
        node("Cast", ["linear.missing"], "linear.indicators", [("to", .int(Int(ONNXProgram.DataType.float)))])
        var columns = ["linear.standardised", "linear.indicators"]
        for (i, feature) in e.features.enumerated() where feature.kind == .categorical {
            let s = "cat\(i)", count = feature.categories?.count ?? 0
            p.initializers.append(.init(name: s + ".column", dataType: ONNXProgram.DataType.int64, dims: [1],
                                        raw: withUnsafeBytes(of: Int64(i).littleEndian) { Array($0) }))
            floats(s + ".levels", [count], (0..<count).map(Float.init))
            node("Gather", ["features", s + ".column"], s + ".code", [("axis", .int(1))])
            node("Equal", [s + ".code", s + ".levels"], s + ".equal")
            node("Cast", [s + ".equal"], s + ".onehot", [("to", .int(Int(ONNXProgram.DataType.float)))])
            columns.append(s + ".onehot")
        }
        node("Concat", columns, "linear.columns", [("axis", .int(1))])
        let k = e.scoreCount, coefficients = (0..<k).flatMap { weights(e, linear, score: $0) }
        var a: [(String, ONNXProgram.AttributeValue)] = [("coefficients", .floats(coefficients)), ("intercepts", .floats(e.baseScores))]
        if e.objective == .regression {
            a.append(("targets", .int(1)))
            p.nodes.append(.init(op: "LinearRegressor", name: "linear", inputs: ["linear.columns"], outputs: ["prediction"], attributes: a,
                                 domain: "ai.onnx.ml"))
            p.outputs = [.init(name: "prediction", dims: [-1, 1])]
        } else {
            a += [("classlabels_strings", .strings(e.labels)), ("post_transform", .string(e.objective == .binary ? "LOGISTIC" : "SOFTMAX"))]
            p.nodes.append(.init(op: "LinearClassifier", name: "linear", inputs: ["linear.columns"], outputs: ["label", "probabilities"],
                                 attributes: a, domain: "ai.onnx.ml"))
            p.outputs = [.init(name: "label", dims: [-1], elemType: ONNXProgram.DataType.string),
                         .init(name: "probabilities", dims: [-1, e.labels.count])]
        }
        return p
    }

    /// Score k's weights over the graph's columns: F standardised values, F indicators, then the one-hot blocks.
    static func weights(_ e: TreeEnsemble, _ linear: LinearTerms, score k: Int) -> [Float] {
        let offsets = LinearTerms.offsets(e.features), scores = e.scoreCount, f = e.features.count
        var values = [Float](repeating: 0, count: 2 * f), onehot: [Float] = []
        for (i, feature) in e.features.enumerated() {
            if feature.kind == .numeric {
                values[i] = linear.weights[offsets[i] * scores + k]
                values[f + i] = linear.weights[(offsets[i] + 1) * scores + k]
            } else {
                for d in offsets[i]..<offsets[i + 1] { onehot.append(linear.weights[d * scores + k]) }
            }
        }
        return values + onehot
    }
}
