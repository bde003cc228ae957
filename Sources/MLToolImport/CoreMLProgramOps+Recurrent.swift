import CCoreMLProto
import MLToolCore

/// The MIL recurrent ops `lstm`, `gru` and `rnn` (coremltools' mil/ops/defs/iOS15–18/recurrent.py), run as the
/// IR's lstm / gru / rnn through `CoreMLGraph.recurrence`. x is (s, b, I); the states (b, D·H) with the forward
/// direction's H values first; the outputs y (s or 1, b, D·H), h and (lstm) c (b, D·H). MIL's conventions: lstm
/// weights i, f, o, z (ifoz) and peepholes i, f, o; gru r, o, z with the reset applied before the recursion matrix
/// (ONNX's linear_before_reset = 0); one bias per gate; a "reverse" op's output sequence in processing order; lstm
/// `clip` clamps the cell state.
extension CoreMLProgramOps {
    static let recurrentConverters: [String: Converter] = [
        "lstm": { try $0.recurrent(.lstm, $1, $2) },
        "gru": { try $0.recurrent(.gru, $1, $2) },
        "rnn": { try $0.recurrent(.rnn, $1, $2) },
    ]
}

extension CoreMLProgramReader {
    mutating func recurrent(_ cell: CoreMLRecurrence.Cell, _ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x"), s = try g.need(x)
        guard s.count == 3 else { throw g.invalid("x", expected: "rank 3 (s, b, I)", actual: "\(s)") }
        let direction = try string(op, "direction", "forward")
        guard direction == "forward" || direction == "reverse" || (cell == .lstm && direction == "bidirectional") else {
            throw g.invalid("direction", expected: cell == .lstm ? "forward, reverse or bidirectional" : "forward or reverse", actual: direction)
        }
        guard try !bool(op, "reset_after", false) else { throw g.refused("gru reset_after = true is not supported") }
        let ih = try matrix(op, "weight_ih"), hh = try matrix(op, "weight_hh")
        let hidden = hh.shape[1], gates = cell == .lstm ? 4 : cell == .gru ? 3 : 1
        guard hh.shape[0] == gates * hidden, ih.shape[0] == gates * hidden, s[2] < 0 || ih.shape[1] == s[2] else {
            throw g.invalid("weight_ih / weight_hh", expected: "(\(gates)·H, I) / (\(gates)·H, H), I = \(s[2])", actual: "\(ih.shape) / \(hh.shape)")
        }
        var rec = CoreMLRecurrence(cell: cell, input: ih.shape[1], hidden: hidden)
        rec.direction = direction
        rec.functions = try milFunctions(cell, op)
        try addDirection(&rec, op, ih, hh, suffix: "")
        if direction == "bidirectional" { try addDirection(&rec, op, try matrix(op, "weight_ih_back"), try matrix(op, "weight_hh_back"), suffix: "_back") }

        let d = rec.directions
        let h0 = try initialState(op, "initial_h", directions: d, hidden: hidden)
        let c0 = cell == .lstm ? try initialState(op, "initial_c", directions: d, hidden: hidden) : nil
        if let clip = try constInput(op, "clip")?.values.first {
            let start: Double? = c0 == nil ? 0 : nil
            guard rec.cellClipIsInert(Float(clip), steps: s[0], start: start) else {
                throw g.refused("clip \(clip): clipping the cell state is not supported, and here it could bind (it cannot with sigmoid gates, "
                                + "a bounded candidate, a zero initial state and a known sequence length ≤ clip)")
            }
        }
        let sequence = try bool(op, "output_sequence", false)
        var wanted: Set<String> = [sequence ? "y" : "h"]
        if out.count > 1 && !out[1].isEmpty { wanted.insert("h") }
        if out.count > 2 && !out[2].isEmpty { wanted.insert("c") }
        let r = try g.recurrence(rec, x: x, initialH: h0, initialC: c0, base: out[0], wanted: wanted)
        let dh = d * hidden
        var y = sequence ? r.y : r.h
        if sequence && direction == "reverse" {
            y = g.fresh(out[0] + ".processing_order")
            try g.reversedInTime(r.y, y)
        }
        let moved = g.fresh(out[0] + ".batch_second")
        try g.op("Transpose", [y], moved, ["perm": CoreMLGraph.ints(sequence ? [0, 2, 1, 3] : [1, 0, 2])])
        try g.op("Reshape", [moved, g.ints(out[0] + ".shape", sequence ? [0, 0, dh] : [1, -1, dh])], out[0])
        for (k, state) in [r.h, r.c].enumerated() where k + 1 < out.count && !out[k + 1].isEmpty {
            let t = g.fresh(out[k + 1] + ".batch_first")
            try g.op("Transpose", [state], t, ["perm": CoreMLGraph.ints([1, 0, 2])])
            try g.op("Reshape", [t, g.ints(out[k + 1] + ".shape", [0, dh])], out[k + 1])
        }
    }

    /// A constant rank-2 weight input.
    private mutating func matrix(_ op: CoreMLProgramOps.Op, _ key: String) throws -> ONNXConstant {
        guard let name = try weight(op, key), let c = g.b.constants[name], c.rank == 2, c.shape.allSatisfy({ $0 > 0 }) else {
            throw g.invalid(key, expected: "a constant matrix", actual: "none")
        }
        return c
    }

    /// One direction's weights, bias (with iOS 18 gru's input_bias) and lstm peephole, in ONNX's gate order.
    private mutating func addDirection(_ rec: inout CoreMLRecurrence, _ op: CoreMLProgramOps.Op, _ ih: ONNXConstant, _ hh: ONNXConstant,
                                       suffix: String) throws {
        let (i, h) = (rec.input, rec.hidden)
        // lstm i, f, o, z → ONNX i, o, f, c; gru r, o, z → ONNX z, r, h.
        let order = rec.cell == .lstm ? [0, 2, 1, 3] : rec.cell == .gru ? [2, 0, 1] : [0]
        guard ih.shape == [rec.gates * h, i], hh.shape == [rec.gates * h, h] else {
            throw g.invalid("weight_ih\(suffix) / weight_hh\(suffix)", expected: "(\(rec.gates * h), \(i)) / (\(rec.gates * h), \(h))",
                            actual: "\(ih.shape) / \(hh.shape)")
        }
        rec.w.append(CoreMLRecurrence.reordered(ih.values, order, size: h * i))
        rec.r.append(CoreMLRecurrence.reordered(hh.values, order, size: h * h))
        var bias = [Double](repeating: 0, count: rec.gates * h)
        for key in ["bias" + suffix] + (suffix.isEmpty && rec.cell == .gru ? ["input_bias"] : []) {
            guard let name = try weight(op, key), let b = g.b.constants[name] else { continue }
            guard b.values.count == bias.count else { throw g.invalid(key, expected: "\(bias.count) values", actual: "\(b.shape)") }
            bias = zip(bias, b.values).map(+)
        }
        rec.bias.append(CoreMLRecurrence.reordered(bias, order, size: h))
        guard rec.cell == .lstm else { return }
        var peephole = [Double](repeating: 0, count: 3 * h)
        if let name = try weight(op, "peephole" + suffix), let p = g.b.constants[name] {
            guard p.values.count == 3 * h else { throw g.invalid("peephole" + suffix, expected: "\(3 * h) values", actual: "\(p.shape)") }
            peephole = CoreMLRecurrence.reordered(p.values, [0, 2, 1], size: h)   // i, f, o → i, o, f
        }
        rec.peephole.append(peephole)
    }

    /// lstm: recurrent_activation, cell_activation, activation; gru: recurrent_activation, activation; rnn: activation.
    private mutating func milFunctions(_ cell: CoreMLRecurrence.Cell, _ op: CoreMLProgramOps.Op) throws -> [(RecurrentFunction, Float, Float)] {
        let keys = cell == .lstm ? [("recurrent_activation", "sigmoid"), ("cell_activation", "tanh"), ("activation", "tanh")]
            : cell == .gru ? [("recurrent_activation", "sigmoid"), ("activation", "tanh")] : [("activation", "tanh")]
        return try keys.map { key, fallback in
            switch try string(op, key, fallback).lowercased() {
            case "sigmoid": return (.sigmoid, 0, 0)
            case "tanh": return (.tanh, 0, 0)
            case "relu": return (.relu, 0, 0)
            case "linear": return (.affine, 1, 0)
            case "hard_sigmoid", "sigmoid_hard": return (.hardSigmoid, 0.2, 0.5)
            case let other:
                throw g.refused("\(key) '\(other)' is not supported (sigmoid, tanh, relu, linear and hard_sigmoid are; scaled_tanh's α and β are not defined by MIL)")
            }
        }
    }

    /// initial_h / initial_c (b, D·H) → (D, b, H); nil when a constant of zeros (the recurrence's default).
    private mutating func initialState(_ op: CoreMLProgramOps.Op, _ key: String, directions d: Int, hidden h: Int) throws -> String? {
        guard let v = try variable(op, key) else { return nil }
        if let c = g.b.constants[v], c.values.allSatisfy({ $0 == 0 }) { return nil }
        let s = try g.need(v)
        guard s.count == 2, s[1] == d * h else { throw g.invalid(key, expected: "(b, \(d * h))", actual: "\(s)") }
        let split = g.fresh(v + ".directions"), t = g.fresh(v + ".direction_first")
        try g.op("Reshape", [v, g.ints(split + ".shape", [0, d, h])], split)
        try g.op("Transpose", [split], t, ["perm": CoreMLGraph.ints([1, 0, 2])])
        return t
    }
}
