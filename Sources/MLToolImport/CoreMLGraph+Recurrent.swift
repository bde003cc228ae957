import MLToolCore

/// One Core ML recurrent layer or op (NeuralNetwork `uniDirectionalLSTM`, `biDirectionalLSTM`, `gru`,
/// `simpleRecurrent`; MIL `lstm`, `gru`, `rnn`) in ONNX's terms, so both readers emit the same ONNX LSTM / GRU /
/// RNN node and the IR's recurrent ops run it. Each reader puts its weights in ONNX's gate order (lstm i, o, f, c;
/// gru z, r, h) with `reordered`.
struct CoreMLRecurrence {
    enum Cell: String { case lstm = "LSTM", gru = "GRU", rnn = "RNN" }
    let cell: Cell
    let input: Int, hidden: Int
    /// "forward", "reverse" or "bidirectional".
    var direction = "forward"
    /// Per direction, ONNX gate order: w (G·H, I) and r (G·H, H) row-major, bias (G·H) (input and recurrent biases
    /// summed: Core ML keeps one), lstm peephole (3·H) in ONNX's order i, o, f (zeros when absent).
    var w: [[Double]] = [], r: [[Double]] = [], bias: [[Double]] = [], peephole: [[Double]] = []
    /// One direction's functions (lstm f, g, h; gru f, g; rnn f) with their α and β.
    var functions: [(RecurrentFunction, Float, Float)] = []
    /// Gate pre-activations clamped to ±clip (NeuralNetwork layers clamp at 50).
    var clip: Float?
    /// lstm: f = 1 − i.
    var inputForget = false

    var gates: Int { cell == .lstm ? 4 : cell == .gru ? 3 : 1 }
    var directions: Int { direction == "bidirectional" ? 2 : 1 }

    /// `v`, blocks of `size` values, with its blocks taken in `order` (Core ML's gate order → ONNX's).
    static func reordered(_ v: [Double], _ order: [Int], size: Int) -> [Double] {
        order.flatMap { v[($0 * size)..<(($0 + 1) * size)] }
    }

    /// Whether clipping the cell state to ±`threshold` (NeuralNetwork `cellClipThreshold`, MIL lstm `clip`) can
    /// never change a value, so running without it is exact: with gates in [0, 1] and a candidate in [−1, 1], |c|
    /// grows by at most 1 a step from its start, so |c_T| ≤ max |c_0| + T. `steps` < 0 (flexible) or a computed
    /// initial cell state (`start` nil) proves nothing.
    func cellClipIsInert(_ threshold: Float, steps: Int, start: Double?) -> Bool {
        guard cell == .lstm, steps >= 0, let start, functions.count == 3 else { return false }
        let bounded01: Set<RecurrentFunction> = [.sigmoid, .hardSigmoid]
        let gate = functions[0].0, candidate = functions[1]
        let candidateBounded = bounded01.contains(candidate.0) || candidate.0 == .tanh || (candidate.0 == .scaledTanh && abs(candidate.1) <= 1)
        return bounded01.contains(gate) && candidateBounded && start + Double(steps) <= Double(threshold)
    }
}

extension CoreMLGraph {
    /// The layer as one ONNX LSTM / GRU / RNN node: x (T, B, I) time-major; initial states (D, B, H) or nil (zeros).
    /// Returns Y (T, D, B, H), Y_h and (lstm) Y_c (D, B, H), named from `base`; those not in `wanted` ("y", "h",
    /// "c") are not computed (empty names).
    mutating func recurrence(_ rec: CoreMLRecurrence, x: String, initialH: String?, initialC: String?,
                             base: String, wanted: Set<String>) throws -> (y: String, h: String, c: String) {
        let d = rec.directions, gh = rec.gates * rec.hidden
        guard rec.w.count == d, rec.r.count == d, rec.bias.count == d, rec.w.allSatisfy({ $0.count == gh * rec.input }),
              rec.r.allSatisfy({ $0.count == gh * rec.hidden }), rec.bias.allSatisfy({ $0.count == gh }),
              rec.cell != .lstm || (rec.peephole.count == d && rec.peephole.allSatisfy { $0.count == 3 * rec.hidden }) else {
            throw invalid("weights", expected: "\(d) direction(s) of \(rec.gates) gates, hidden size \(rec.hidden), input size \(rec.input)",
                          actual: "\(rec.w.map(\.count)) / \(rec.r.map(\.count)) / \(rec.bias.map(\.count)) values")
        }
        let zeros = [Double](repeating: 0, count: gh)
        var inputs = [x,
                      constant(base + ".W", ONNXConstant(shape: [d, gh, rec.input], values: rec.w.flatMap { $0 })),
                      constant(base + ".R", ONNXConstant(shape: [d, gh, rec.hidden], values: rec.r.flatMap { $0 })),
                      constant(base + ".B", ONNXConstant(shape: [d, 2 * gh], values: rec.bias.flatMap { $0 + zeros })),
                      "", initialH ?? "", initialC ?? ""]
        if rec.cell == .lstm {
            inputs.append(constant(base + ".P", ONNXConstant(shape: [d, 3 * rec.hidden], values: rec.peephole.flatMap { $0 })))
        }
        var names: [String] = [], alphas: [Float] = [], betas: [Float] = []
        for (f, alpha, beta) in Array(repeating: rec.functions, count: d).flatMap({ $0 }) {
            names.append(f.rawValue)
            if f.defaultAlpha != nil { alphas.append(alpha) }
            if f.defaultBeta != nil { betas.append(beta) }
        }
        var attrs: [String: ONNXFile.Attribute] = [
            "hidden_size": Self.int(rec.hidden), "direction": Self.string(rec.direction),
            "activations": .init(name: "", type: 8, strings: names),
        ]
        if !alphas.isEmpty { attrs["activation_alpha"] = .init(name: "", type: 6, floats: alphas) }
        if !betas.isEmpty { attrs["activation_beta"] = .init(name: "", type: 6, floats: betas) }
        if let c = rec.clip { attrs["clip"] = Self.float(c) }
        if rec.inputForget { attrs["input_forget"] = Self.int(1) }
        let outputs = (y: wanted.contains("y") ? fresh(base + ".Y") : "", h: wanted.contains("h") ? fresh(base + ".Y_h") : "",
                       c: rec.cell == .lstm && wanted.contains("c") ? fresh(base + ".Y_c") : "")
        try node(rec.cell.rawValue, inputs, [outputs.y, outputs.h] + (rec.cell == .lstm ? [outputs.c] : []), attrs)
        // x's first axis is the sequence's (a NeuralNetwork blob's Seq, or a time-major input's): not a free batch.
        b.batchFree = false
        return outputs
    }

    /// One ONNX-semantics node with several outputs (an empty name: not produced).
    mutating func node(_ type: String, _ inputs: [String], _ outputs: [String], _ attributes: [String: ONNXFile.Attribute]) throws {
        var attrs = attributes
        for k in attrs.keys { attrs[k]?.name = k }
        let n = ONNXFile.Node(name: fresh((outputs.first { !$0.isEmpty } ?? "node") + "#node"), opType: type, domain: "", inputs: inputs,
                              outputs: outputs, attributes: attrs, label: label)
        try b.convert(n)
    }

    /// x with its first axis in reverse order (Core ML gives a reverse layer's output sequence in processing order,
    /// ONNX in input order).
    mutating func reversedInTime(_ x: String, _ output: String) throws {
        try op("Slice", [x, ints(output + ".starts", [-1]), ints(output + ".ends", [Int(Int32.min)]), ints(output + ".axes", [0]),
                         ints(output + ".steps", [-1])], output)
    }
}
