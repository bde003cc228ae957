import MLToolCore

extension ONNXGraphBuilder {
    /// ONNX LSTM, GRU and RNN: one IR `lstm` / `gru` / `rnn` node per requested output (Y, Y_h, Y_c), each naming the
    /// same weights (a node has one output; the engine runs only the nodes whose output is needed). W, R, B, P and
    /// sequence_lens must be constants; X and the initial states may be computed (a streaming model passes its
    /// state in as a graph input). Layout 1 (batch first) is turned into the IR's time-major form by transposes
    /// around the nodes; Y (T, D, B, H) is given in NHWC as the IR keeps every rank-4 tensor: (T, B, H, D).
    mutating func recurrent(_ node: ONNXFile.Node, _ op: Op) throws {
        let x = try activation(node)
        guard x.shape.count == 3 else { throw recurrentError(node, "X", "rank 3 (seq_length, batch_size, input_size)", "\(x.shape)") }
        let layout = int(node, "layout", 0)
        guard layout == 0 || layout == 1 else { throw recurrentError(node, "layout", "0 or 1", "\(layout)") }
        let (steps, batch) = layout == 0 ? (x.shape[0], x.shape[1]) : (x.shape[1], x.shape[0])
        let direction = string(node, "direction", "forward")
        guard ["forward", "reverse", "bidirectional"].contains(direction) else {
            throw recurrentError(node, "direction", "forward, reverse or bidirectional", "'\(direction)'")
        }
        let d = direction == "bidirectional" ? 2 : 1
        var (inputs, h) = try recurrentWeights(node, op, x, directions: d)

        var attrs = Attributes()
        attrs.direction = direction == "forward" ? nil : direction
        try sequenceLengths(node, &attrs, steps: steps, batch: batch, layout: layout)
        let states = try initialStates(node, op, &inputs, layout: layout, expected: [d, batch, h])
        attrs.initialStates = states.isEmpty ? nil : states

        let (names, alphas, betas) = try recurrentFunctions(node, op, directions: d)
        attrs.activations = names
        attrs.activationAlpha = alphas
        attrs.activationBeta = betas
        if let c = node.attributes["clip"]?.f {
            guard c >= 0 else { throw recurrentError(node, "clip", "≥ 0", "\(c)") }
            attrs.clip = c
        }
        if op == .lstm, int(node, "input_forget", 0) != 0 { attrs.inputForget = true }
        if op == .gru, int(node, "linear_before_reset", 0) != 0 { attrs.linearBeforeReset = true }

        if layout == 1 {
            let t = fresh("\(x.name).time_major")
            emit("\(node.name).to_time_major", .transpose, [x.name], t, Attributes(perm: [1, 0, 2]))
            inputs[0] = t
        }
        recurrentOutputs(node, op, inputs, attrs, layout: layout, dims: (steps, d, batch, h))
    }

    private func recurrentError(_ node: ONNXFile.Node, _ what: String, _ expected: String, _ actual: String) -> ImportError {
        .invalid(file: file, place: "\(place(node)) \(what)", expected: expected, actual: actual)
    }

    /// Weights: W (D, G·H, I), R (D, G·H, H), B (D, 2·G·H), P (D, 3·H), each checked and added: X and the weights as
    /// the node's first inputs, and the hidden size.
    private mutating func recurrentWeights(_ node: ONNXFile.Node, _ op: Op, _ x: (name: String, shape: [Int]),
                                           directions d: Int) throws -> (inputs: [String], hidden: Int) {
        let gates = op == .lstm ? 4 : op == .gru ? 3 : 1
        let w = try constant(node, 1, what: "W"), r = try constant(node, 2, what: "R")
        guard r.rank == 3, r.shape[0] == d, r.shape[2] > 0, r.shape[1] == gates * r.shape[2] else {
            throw recurrentError(node, "R", "shape (\(d), \(gates)·hidden_size, hidden_size)", "\(r.shape)")
        }
        let h = r.shape[2]
        if let hs = node.attributes["hidden_size"]?.i, hs != h { throw recurrentError(node, "hidden_size", "\(h) (from R)", "\(hs)") }
        guard w.rank == 3, w.shape[0] == d, w.shape[1] == gates * h, w.shape[2] > 0 else {
            throw recurrentError(node, "W", "shape (\(d), \(gates * h), input_size)", "\(w.shape)")
        }
        guard x.shape[2] < 0 || x.shape[2] == w.shape[2] else { throw recurrentError(node, "X", "input_size \(w.shape[2]) (from W)", "\(x.shape)") }
        let b = try optionalConstant(node, 3, what: "B") ?? ONNXConstant(shape: [d, 2 * gates * h], values: [Double](repeating: 0, count: d * 2 * gates * h))
        guard b.shape == [d, 2 * gates * h] else { throw recurrentError(node, "B", "shape [\(d), \(2 * gates * h)]", "\(b.shape)") }
        var inputs = [x.name, addWeight(node.inputs[1], w), addWeight(node.inputs[2], r), addWeight(node.inputs.count > 3 && !node.inputs[3].isEmpty ? node.inputs[3] : "\(node.name).B", b)]
        if op == .lstm {
            let p = try optionalConstant(node, 7, what: "P") ?? ONNXConstant(shape: [d, 3 * h], values: [Double](repeating: 0, count: d * 3 * h))
            guard p.shape == [d, 3 * h] else { throw recurrentError(node, "P", "shape [\(d), \(3 * h)]", "\(p.shape)") }
            inputs.append(addWeight(node.inputs.count > 7 && !node.inputs[7].isEmpty ? node.inputs[7] : "\(node.name).P", p))
        }
        return (inputs, h)
    }

    /// sequence_lens, when given and some length stops short of the end.
    private mutating func sequenceLengths(_ node: ONNXFile.Node, _ attrs: inout Attributes, steps: Int, batch: Int, layout: Int) throws {
        guard let lens = try optionalConstant(node, 4, what: "sequence_lens") else { return }
        let values = lens.ints
        guard lens.rank == 1, batch < 0 || values.count == batch,
              values.allSatisfy({ v in v.map { $0 >= 0 && (steps < 0 || $0 <= steps) } ?? false }) else {
            throw recurrentError(node, "sequence_lens", "\(batch < 0 ? "one" : "\(batch)") value\(batch == 1 ? "" : "s") in 0…\(steps < 0 ? "seq_length" : "\(steps)")",
                                 "shape \(lens.shape) values \(lens.values)")
        }
        let lengths = values.map { $0 ?? 0 }
        // Lengths that all reach the end change nothing: the layer then keeps any batch size.
        if steps < 0 || lengths.contains(where: { $0 != steps }) {
            attrs.sequenceLengths = lengths
            if layout == 1 { batchFree = false }
        }
    }

    /// Initial states (D, B, H) (layout 1: (B, D, H)), computed or constant, appended to `inputs`; the states given.
    private mutating func initialStates(_ node: ONNXFile.Node, _ op: Op, _ inputs: inout [String], layout: Int,
                                        expected dbh: [Int]) throws -> [String] {
        var states: [String] = []
        for (index, state) in (op == .lstm ? [(5, "h"), (6, "c")] : [(5, "h")]) where index < node.inputs.count && !node.inputs[index].isEmpty {
            let name = node.inputs[index], what = index == 5 ? "initial_h" : "initial_c"
            let expected = layout == 0 ? dbh : [dbh[1], dbh[0], dbh[2]]
            let given = try shape(of: name, in: node)
            guard given.count == 3, zip(given, expected).allSatisfy({ $0 < 0 || $1 < 0 || $0 == $1 }) else {
                throw recurrentError(node, what, "shape \(expected.map { $0 < 0 ? "batch_size" : String($0) })", "\(given)")
            }
            if var c = constants[name] {
                if layout == 1 { c = c.transposed([1, 0, 2]) }
                inputs.append(addWeight(name, c))
            } else if layout == 1 {
                let t = fresh("\(name).time_major")
                emit("\(node.name).\(what).to_time_major", .transpose, [name], t, Attributes(perm: [1, 0, 2]))
                inputs.append(t)
                batchFree = false
            } else {
                inputs.append(name)
                batchFree = false   // a state's first axis is the direction, not the batch
            }
            states.append(state)
        }
        return states
    }

    /// One node per requested output (Y, Y_h, Y_c), turned back to batch-major for layout 1.
    private mutating func recurrentOutputs(_ node: ONNXFile.Node, _ op: Op, _ inputs: [String], _ attrs: Attributes, layout: Int,
                                           dims: (steps: Int, d: Int, batch: Int, h: Int)) {
        let (steps, d, batch, h) = dims
        let kinds = op == .lstm ? ["y", "h", "c"] : ["y", "h"]
        for (i, kind) in kinds.enumerated() where i < node.outputs.count && !node.outputs[i].isEmpty {
            let out = node.outputs[i]
            var a = attrs
            a.mode = kind
            let name = i == 0 ? node.name : "\(node.name).Y_\(kind)"
            if layout == 0 {
                emit(name, op, inputs, out, a)
                shapes[out] = kind == "y" ? [steps, d, batch, h] : [d, batch, h]
            } else {
                // Y (T, B, H, D) → ONNX (B, T, D, H), in NHWC (B, D, H, T); a state (D, B, H) → (B, D, H).
                let mid = fresh("\(out).time_major")
                emit(name, op, inputs, mid, a)
                emit("\(name).to_batch_major", .transpose, [mid], out, Attributes(perm: kind == "y" ? [1, 3, 2, 0] : [1, 0, 2]))
                shapes[out] = kind == "y" ? [batch, steps, d, h] : [batch, d, h]
            }
        }
    }

    /// The layer's gate functions by ONNX name, D times the functions of one direction (LSTM f, g, h; GRU f, g; RNN
    /// f), each with its α and β: `activation_alpha` / `activation_beta` are taken in order by the functions that
    /// use them (ONNX Runtime's reading), the others' defaults filled in.
    private func recurrentFunctions(_ node: ONNXFile.Node, _ op: Op, directions d: Int) throws -> ([String], [Float], [Float]) {
        let defaults = op == .lstm ? ["Sigmoid", "Tanh", "Tanh"] : op == .gru ? ["Sigmoid", "Tanh"] : ["Tanh"]
        var names = node.attributes["activations"]?.strings ?? []
        if names.isEmpty { names = defaults }
        if d == 2 && names.count == defaults.count { names += names }
        guard names.count == defaults.count * d else {
            throw ImportError.invalid(file: file, place: "\(place(node)) activations", expected: "\(defaults.count * d) function\(defaults.count * d == 1 ? "" : "s") (\(d) direction\(d == 1 ? "" : "s"))",
                                      actual: "\(names)")
        }
        var alphas = node.attributes["activation_alpha"]?.floats ?? [], betas = node.attributes["activation_beta"]?.floats ?? []
        var resolved: [String] = [], a: [Float] = [], b: [Float] = []
        for name in names {
            guard let f = RecurrentFunction(onnxName: name) else {
                throw ImportError.invalid(file: file, place: "\(place(node)) activations",
                                          expected: "one of " + RecurrentFunction.allCases.map(\.rawValue).joined(separator: ", "), actual: "'\(name)'")
            }
            resolved.append(f.rawValue)
            if let alpha = f.defaultAlpha { a.append(alphas.isEmpty ? alpha : alphas.removeFirst()) } else { a.append(0) }
            if let beta = f.defaultBeta { b.append(betas.isEmpty ? beta : betas.removeFirst()) } else { b.append(0) }
        }
        return (resolved, a, b)
    }
}
