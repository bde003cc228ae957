import CCoreMLProto
import MLToolCore

/// The NeuralNetwork recurrent layers (NeuralNetwork.proto): `uniDirectionalLSTM`, `biDirectionalLSTM`, `gru` and
/// `simpleRecurrent`, run as the IR's lstm / gru / rnn through `CoreMLGraph.recurrence`. Blobs are rank 5,
/// [Seq, Batch, C, 1, 1] (the exact shape mapping of spec 4+); the optional inputs after x are the initial states
/// (h, c; a bidirectional LSTM's forward then backward pair), the optional outputs after y the final ones, each
/// [1, Batch, H, 1, 1]. Core ML's conventions: gate pre-activations clamped to ±50, lstm weights i, f, z (block
/// input), o and peepholes i, f, o; gru z, r, o with the reset applied before the recursion matrix (ONNX's
/// linear_before_reset = 0); a reversed layer's output sequence in processing order.
extension CoreMLLayers {
    static let recurrentConverters: [String: Converter] = [
        "uniDirectionalLSTM": { c, l, x, _ in try c.uniDirectionalLSTM(c.param(l.unidirectionallstm), l, x) },
        "biDirectionalLSTM": { c, l, x, _ in try c.biDirectionalLSTM(c.param(l.bidirectionallstm), l, x) },
        "gru": { c, l, x, _ in try c.gru(c.param(l.gru), l, x) },
        "simpleRecurrent": { c, l, x, _ in try c.simpleRecurrent(c.param(l.simplerecurrent), l, x) },
    ]

    /// The recurrent `layer` members, set or not.
    static func recurrentKind(_ l: Layer) -> String? {
        [("uniDirectionalLSTM", l.unidirectionallstm != nil), ("biDirectionalLSTM", l.bidirectionallstm != nil), ("gru", l.gru != nil),
         ("simpleRecurrent", l.simplerecurrent != nil)].first { $0.1 }?.0
    }
}

extension CoreMLNeuralNetwork {
    typealias Weights = UnsafeMutablePointer<CoreML__Specification__WeightParams>?
    typealias Activations = UnsafeMutablePointer<UnsafeMutablePointer<CoreML__Specification__ActivationParams>?>?

    mutating func uniDirectionalLSTM(_ p: CoreML__Specification__UniDirectionalLSTMLayerParams, _ l: CoreMLLayers.Layer, _ x: [String]) throws {
        var rec = CoreMLRecurrence(cell: .lstm, input: Int(clamping: p.inputvectorsize), hidden: Int(clamping: p.outputvectorsize))
        rec.direction = p.reverseinput != 0 ? "reverse" : "forward"
        rec.functions = try recurrentFunctions(p.activations, p.n_activations, count: 3, "activations")
        guard let params = p.params?.pointee, let w = p.weightparams?.pointee else {
            throw g.invalid("", expected: "params and weightParams", actual: "missing")
        }
        try lstmWeights(w, params, into: &rec, "weightParams")
        try runRecurrent(rec, l, x, sequenceOutput: params.sequenceoutput != 0, cellClip: params)
    }

    mutating func biDirectionalLSTM(_ p: CoreML__Specification__BiDirectionalLSTMLayerParams, _ l: CoreMLLayers.Layer, _ x: [String]) throws {
        var rec = CoreMLRecurrence(cell: .lstm, input: Int(clamping: p.inputvectorsize), hidden: Int(clamping: p.outputvectorsize))
        rec.direction = "bidirectional"
        rec.functions = try recurrentFunctions(p.activationsforwardlstm, p.n_activationsforwardlstm, count: 3, "activationsForwardLSTM")
        let backward = try recurrentFunctions(p.activationsbackwardlstm, p.n_activationsbackwardlstm, count: 3, "activationsBackwardLSTM")
        guard backward.map({ "\($0.0)\($0.1)\($0.2)" }) == rec.functions.map({ "\($0.0)\($0.1)\($0.2)" }) else {
            throw g.refused("activationsBackwardLSTM differing from activationsForwardLSTM is not supported (Core ML requires them equal)")
        }
        guard let params = p.params?.pointee, p.n_weightparams == 2, let f = p.weightparams[0]?.pointee, let b = p.weightparams[1]?.pointee else {
            throw g.invalid("", expected: "params and 2 weightParams", actual: "\(p.n_weightparams) weightParams")
        }
        try lstmWeights(f, params, into: &rec, "weightParams[0]")
        try lstmWeights(b, params, into: &rec, "weightParams[1]")
        try runRecurrent(rec, l, x, sequenceOutput: params.sequenceoutput != 0, cellClip: params)
    }

    mutating func gru(_ p: CoreML__Specification__GRULayerParams, _ l: CoreMLLayers.Layer, _ x: [String]) throws {
        var rec = CoreMLRecurrence(cell: .gru, input: Int(clamping: p.inputvectorsize), hidden: Int(clamping: p.outputvectorsize))
        rec.direction = p.reverseinput != 0 ? "reverse" : "forward"
        rec.functions = try recurrentFunctions(p.activations, p.n_activations, count: 2, "activations")
        // Core ML z, r, o = ONNX z, r, h.
        try gateWeights(w: [p.updategateweightmatrix, p.resetgateweightmatrix, p.outputgateweightmatrix],
                        r: [p.updategaterecursionmatrix, p.resetgaterecursionmatrix, p.outputgaterecursionmatrix],
                        bias: p.hasbiasvectors != 0 ? [p.updategatebiasvector, p.resetgatebiasvector, p.outputgatebiasvector] : nil,
                        into: &rec, "")
        try runRecurrent(rec, l, x, sequenceOutput: p.sequenceoutput != 0, cellClip: nil)
    }

    mutating func simpleRecurrent(_ p: CoreML__Specification__SimpleRecurrentLayerParams, _ l: CoreMLLayers.Layer, _ x: [String]) throws {
        var rec = CoreMLRecurrence(cell: .rnn, input: Int(clamping: p.inputvectorsize), hidden: Int(clamping: p.outputvectorsize))
        rec.direction = p.reverseinput != 0 ? "reverse" : "forward"
        rec.functions = [try recurrentFunction(p.activation, "activation")]
        try gateWeights(w: [p.weightmatrix], r: [p.recursionmatrix], bias: p.hasbiasvector != 0 ? [p.biasvector] : nil, into: &rec, "")
        try runRecurrent(rec, l, x, sequenceOutput: p.sequenceoutput != 0, cellClip: nil)
    }

    // MARK: weights and functions

    /// One direction's LSTM weights: Core ML i, f, z, o → ONNX i, o, f, c; peepholes i, f, o → i, o, f; forgetBias
    /// adds 1 to b_f.
    private mutating func lstmWeights(_ w: CoreML__Specification__LSTMWeightParams, _ p: CoreML__Specification__LSTMParams,
                                      into rec: inout CoreMLRecurrence, _ what: String) throws {
        try gateWeights(w: [w.inputgateweightmatrix, w.outputgateweightmatrix, w.forgetgateweightmatrix, w.blockinputweightmatrix],
                        r: [w.inputgaterecursionmatrix, w.outputgaterecursionmatrix, w.forgetgaterecursionmatrix, w.blockinputrecursionmatrix],
                        bias: p.hasbiasvectors != 0 ? [w.inputgatebiasvector, w.outputgatebiasvector, w.forgetgatebiasvector, w.blockinputbiasvector] : nil,
                        into: &rec, what)
        let h = rec.hidden
        if p.forgetbias != 0, var b = rec.bias.popLast() {
            for j in (2 * h)..<(3 * h) { b[j] += 1 }
            rec.bias.append(b)
        }
        if p.haspeepholevectors != 0 {
            rec.peephole.append(try [w.inputgatepeepholevector, w.outputgatepeepholevector, w.forgetgatepeepholevector].flatMap {
                try reader.constant($0, shape: [h], place: "\(g.label) \(what) peephole").values
            })
        } else {
            rec.peephole.append([Double](repeating: 0, count: 3 * h))
        }
        rec.inputForget = p.coupledinputandforgetgate != 0
    }

    /// One direction's matrices and biases, given gate by gate in ONNX's order; appended to `rec`.
    private mutating func gateWeights(w: [Weights], r: [Weights], bias: [Weights]?, into rec: inout CoreMLRecurrence, _ what: String) throws {
        let (i, h) = (rec.input, rec.hidden)
        guard (1...1 << 20).contains(i), (1...1 << 20).contains(h) else {
            throw g.invalid("inputVectorSize / outputVectorSize", expected: "1…\(1 << 20)", actual: "\(i) / \(h)")
        }
        let place = what.isEmpty ? g.label : "\(g.label) \(what)"
        rec.w.append(try w.flatMap { try reader.constant($0, shape: [h, i], place: place + " weight matrix").values })
        rec.r.append(try r.flatMap { try reader.constant($0, shape: [h, h], place: place + " recursion matrix").values })
        rec.bias.append(try bias?.flatMap { try reader.constant($0, shape: [h], place: place + " bias vector").values }
                        ?? [Double](repeating: 0, count: w.count * h))
    }

    private func recurrentFunctions(_ list: Activations, _ n: Int, count: Int, _ what: String) throws -> [(RecurrentFunction, Float, Float)] {
        guard n == count, let list else { throw g.invalid(what, expected: "\(count) activations", actual: "\(n)") }
        return try (0..<n).map { try recurrentFunction(list[$0], "\(what)[\($0)]") }
    }

    /// A recurrent layer's activation: linear, sigmoid, tanh, ReLU or hard sigmoid. Core ML's recurrent layers take
    /// their parameters as fixed (the proto: hard sigmoid "only supported for alpha = 0.2, beta = 0.5"; a linear
    /// one passes values through, as MIL's `linear` lowered to them), and coremltools writes them unset (0, 0): unset
    /// or those values are read, others refused. Scaled tanh is refused: the proto fixes α = 1.7159, β = 2/3, while
    /// coremltools' own reference for MIL's scaled_tanh is a plain tanh.
    private func recurrentFunction(_ a: UnsafeMutablePointer<CoreML__Specification__ActivationParams>?, _ what: String) throws
        -> (RecurrentFunction, Float, Float) {
        guard let a = a?.pointee else { throw g.invalid(what, expected: "an activation", actual: "none") }
        func fixed(_ f: RecurrentFunction, _ given: (Float, Float), _ values: (Float, Float)) throws -> (RecurrentFunction, Float, Float) {
            guard given == (0, 0) || given == values else {
                throw g.refused("\(what): \(f.rawValue) with α \(given.0), β \(given.1) (Core ML's recurrent layers fix them at \(values.0), \(values.1))")
            }
            return (f, values.0, values.1)
        }
        if let p = a.linear?.pointee { return try fixed(.affine, (p.alpha, p.beta), (1, 0)) }
        if a.sigmoid != nil { return (.sigmoid, 0, 0) }
        if a.tanh != nil { return (.tanh, 0, 0) }
        if a.relu != nil { return (.relu, 0, 0) }
        if let p = a.sigmoidhard?.pointee { return try fixed(.hardSigmoid, (p.alpha, p.beta), (0.2, 0.5)) }
        throw g.refused("\(what): only linear, sigmoid, tanh, ReLU and hard sigmoid are supported recurrent activations")
    }
}

extension CoreMLNeuralNetwork {
    /// x [Seq, B, I, 1, 1] → the recurrence → y [Seq or 1, B, D·H, 1, 1] and the final states [1, B, H, 1, 1].
    /// `cellClip`: an LSTM's params, whose cellClipThreshold must be provably inert (the IR does not clip the cell).
    private mutating func runRecurrent(_ given: CoreMLRecurrence, _ l: CoreMLLayers.Layer, _ x: [String], sequenceOutput: Bool,
                                       cellClip params: CoreML__Specification__LSTMParams?) throws {
        var rec = given
        rec.clip = 50
        guard !classic else {
            throw g.refused("a recurrent layer in a network with the rank-5 shape mapping of spec versions 1–3 is not supported (the sequence axis is not tracked)")
        }
        let s = try g.need(x[0]), d = rec.directions, h = rec.hidden
        guard s.count == 5, s[3] == 1, s[4] == 1, s[2] < 0 || s[2] == rec.input else {
            throw g.invalid("input", expected: "[Seq, Batch, \(rec.input), 1, 1]", actual: "\(s)")
        }
        let kinds = rec.cell == .lstm ? ["h", "c"] : ["h"], outputs = (0..<l.n_output).map { cString(l.output[$0]) }
        guard x.count == 1 || x.count == 1 + kinds.count * d, outputs.count <= 1 + kinds.count * d else {
            throw g.invalid("inputs / outputs", expected: "x (y) alone or with \(kinds.count * d) states", actual: "\(x.count) / \(outputs.count)")
        }
        // Input and output states are ordered by direction, then h before c.
        func index(_ kind: Int, _ direction: Int) -> Int { 1 + direction * kinds.count + kind }
        var initial: [String?] = [nil, nil]
        if x.count > 1 {
            for k in kinds.indices { initial[k] = try initialState((0..<d).map { x[index(k, $0)] }, hidden: h) }
        }
        if let params {
            let threshold = params.cellclipthreshold == 0 ? 50 : params.cellclipthreshold
            // The largest |c_0|: 0 without state inputs, unknown when computed.
            let cells = x.count == 1 ? [] : (0..<d).map { g.b.constants[x[index(1, $0)]] }
            let start: Double? = cells.contains { $0 == nil } ? nil : cells.compactMap { $0 }.flatMap(\.values).map { Swift.abs($0) }.max() ?? 0
            guard rec.cellClipIsInert(threshold, steps: s[0], start: start) else {
                throw g.refused("cellClipThreshold \(threshold): clipping the cell state is not supported, and here it could bind "
                                + "(it cannot with sigmoid gates, a bounded candidate, a constant initial state and a known sequence length ≤ the threshold)")
            }
        }
        var wanted: Set<String> = [sequenceOutput ? "y" : "h"]
        for k in kinds.indices { for dir in 0..<d where index(k, dir) < outputs.count && !outputs[index(k, dir)].isEmpty { wanted.insert(kinds[k]) } }
        let seq = g.fresh(x[0] + ".sequence")
        try g.op("Reshape", [x[0], g.ints(seq + ".shape", [0, 0, rec.input])], seq)
        let r = try g.recurrence(rec, x: seq, initialH: initial[0], initialC: initial[1], base: outputs[0], wanted: wanted)
        try recurrentOutput(sequenceOutput ? r.y : r.h, sequence: sequenceOutput, reverse: rec.direction == "reverse", directions: d,
                            hidden: h, outputs[0])
        for (k, state) in [r.h, r.c].prefix(kinds.count).enumerated() {
            for dir in 0..<d where index(k, dir) < outputs.count && !outputs[index(k, dir)].isEmpty {
                let out = outputs[index(k, dir)]
                var one = state
                if d == 2 {
                    one = g.fresh(out + ".direction")
                    try g.op("Slice", [state, g.ints(out + ".starts", [dir]), g.ints(out + ".ends", [dir + 1]), g.ints(out + ".axes", [0])], one)
                }
                try g.op("Reshape", [one, g.ints(out + ".shape", [1, -1, h, 1, 1])], out)
            }
        }
    }

    /// Y (T, D, B, H) (`sequence`) or Y_h (D, B, H) → [T or 1, B, D·H, 1, 1]; a reversed layer's sequence in
    /// processing order.
    private mutating func recurrentOutput(_ v: String, sequence: Bool, reverse: Bool, directions d: Int, hidden h: Int, _ y: String) throws {
        var source = v
        if sequence && reverse {
            source = g.fresh(y + ".processing_order")
            try g.reversedInTime(v, source)
        }
        let moved = g.fresh(y + ".batch_second")
        try g.op("Transpose", [source], moved, ["perm": CoreMLGraph.ints(sequence ? [0, 2, 1, 3] : [1, 0, 2])])
        try g.op("Reshape", [moved, g.ints(y + ".shape", sequence ? [0, 0, d * h, 1, 1] : [1, -1, d * h, 1, 1])], y)
    }

    /// The initial states of one kind (h or c), one [1, B, H, 1, 1] blob per direction → (D, B, H); nil when all
    /// are constant zeros (the recurrence's default, which keeps any batch size).
    private mutating func initialState(_ names: [String], hidden h: Int) throws -> String? {
        if names.allSatisfy({ g.b.constants[$0]?.values.allSatisfy { $0 == 0 } ?? false }) { return nil }
        let parts = try names.map { n -> String in
            let t = g.fresh(n + ".state")
            try g.op("Reshape", [n, g.ints(t + ".shape", [1, -1, h])], t)
            return t
        }
        if parts.count == 1 { return parts[0] }
        let both = g.fresh(names[0] + ".states")
        try g.op("Concat", parts, both, ["axis": CoreMLGraph.int(0)])
        return both
    }
}
