import CMLToolKernels
import COpenBLAS
import MLToolCore

/// A compiled `lstm`, `gru` or `rnn` node (see `Op` in Graph.swift and docs/FORMAT.md): its weights in ONNX's layout
/// and settings. The node computes the whole layer and gives one of its outputs (`output`); the nodes of one ONNX
/// layer each hold a copy of its (small) weights.
struct RecurrentSpec: Sendable {
    enum Cell: Sendable { case lstm, gru, rnn }
    /// Which output the node gives: every step's hidden state (T, B, H, D), or the last hidden / cell state (D, B, H).
    enum Output: String, Sendable { case y, h, c }

    /// A gate function with its α and β, and the C kernels' code for it when they have one (the fast path's
    /// vectorised functions).
    struct Gate: Sendable {
        var function: RecurrentFunction
        var alpha: Float
        var beta: Float
        var act: Act?

        init(_ function: RecurrentFunction, alpha: Float, beta: Float) {
            self.function = function; self.alpha = alpha; self.beta = beta
            switch function {
            case .relu: act = Act(op: .relu, min: nil, max: nil, alpha: nil, beta: nil)
            case .tanh: act = Act(op: .tanh, min: nil, max: nil, alpha: nil, beta: nil)
            case .sigmoid: act = Act(op: .sigmoid, min: nil, max: nil, alpha: nil, beta: nil)
            case .leakyRelu: act = Act(op: .leakyRelu, min: nil, max: nil, alpha: alpha, beta: nil)
            case .hardSigmoid: act = Act(op: .hardSigmoid, min: nil, max: nil, alpha: alpha, beta: beta)
            default: act = nil
            }
        }

        func apply(_ x: Float) -> Float { function.apply(x, alpha: alpha, beta: beta) }
    }

    var cell: Cell
    var output: Output
    /// G: 4 (lstm: i, o, f, c), 3 (gru: z, r, h) or 1 (rnn).
    var gates: Int
    /// D: 2 when bidirectional, else 1.
    var directions: Int
    /// A single direction run from the last step to the first ("reverse").
    var reverse: Bool
    var hidden: Int
    var inputSize: Int
    /// Per direction: lstm f, g, h; gru f, g; rnn f.
    var functions: [[Gate]]
    var clip: Float?
    var inputForget: Bool
    var linearBeforeReset: Bool
    /// Per batch item, how many steps it has (nil: all T).
    var lengths: [Int]?
    /// The initial states the node's inputs hold after the weights, in order ("h", then "c").
    var states: [Output]
    /// w (D, G·H, I), r (D, G·H, H), b (D, 2·G·H), p (D, 3·H; lstm only).
    var w: Buffer, r: Buffer, b: Buffer
    var p: Buffer?

    /// How many functions each direction takes.
    static func functionCount(_ cell: Cell) -> Int { cell == .lstm ? 3 : cell == .gru ? 2 : 1 }

    /// Reads and checks the node's attributes and weights; `weight(i, rank)` loads the model tensor at input i.
    init(_ node: Node, weight: (Int, Int) throws -> (Buffer, [Int])) throws {
        let a = node.attributes
        func invalid(_ attribute: String, _ expected: String, _ actual: String) -> EngineError {
            .invalidAttribute(node: node.name, attribute: attribute, expected: expected, actual: actual)
        }
        switch node.op {
        case .lstm: cell = .lstm; gates = 4
        case .gru: cell = .gru; gates = 3
        default: cell = .rnn; gates = 1
        }
        guard let o = Output(rawValue: a.mode ?? "y"), o != .c || cell == .lstm else {
            throw invalid("mode", cell == .lstm ? "y, h or c" : "y or h", a.mode ?? "")
        }
        output = o
        switch a.direction ?? "forward" {
        case "forward": directions = 1; reverse = false
        case "reverse": directions = 1; reverse = true
        case "bidirectional": directions = 2; reverse = false
        default: throw invalid("direction", "forward, reverse or bidirectional", a.direction ?? "")
        }
        var states: [Output] = []
        for name in a.initialStates ?? [] {
            guard let st = Output(rawValue: name), st != .y, st != .c || cell == .lstm, !states.contains(st) else {
                throw invalid("initialStates", cell == .lstm ? "distinct h and c" : "h", "\(a.initialStates ?? [])")
            }
            states.append(st)
        }
        self.states = states
        let weightCount = cell == .lstm ? 5 : 4
        guard node.inputs.count == weightCount + states.count else {
            throw invalid("inputs", "x, \(cell == .lstm ? "w, r, b, p" : "w, r, b") and \(states.count) initial states",
                          "\(node.inputs.count) inputs")
        }
        let (w, ws) = try weight(1, 3), (r, rs) = try weight(2, 3), (b, bs) = try weight(3, 2)
        let d = directions, g = gates
        guard ws[0] == d, ws[1] % g == 0 else {
            throw EngineError.badWeights(node: node.name, tensor: node.inputs[1], reason: "shape \(ws), expected (\(d), \(g)·H, I)")
        }
        hidden = ws[1] / g
        inputSize = ws[2]
        guard rs == [d, g * hidden, hidden] else {
            throw EngineError.badWeights(node: node.name, tensor: node.inputs[2], reason: "shape \(rs), expected [\(d), \(g * hidden), \(hidden)]")
        }
        guard bs == [d, 2 * g * hidden] else {
            throw EngineError.badWeights(node: node.name, tensor: node.inputs[3], reason: "shape \(bs), expected [\(d), \(2 * g * hidden)]")
        }
        self.w = w; self.r = r; self.b = b
        if cell == .lstm {
            let (p, ps) = try weight(4, 2)
            guard ps == [d, 3 * hidden] else {
                throw EngineError.badWeights(node: node.name, tensor: node.inputs[4], reason: "shape \(ps), expected [\(d), \(3 * hidden)]")
            }
            self.p = p
        }
        let count = Self.functionCount(cell)
        let names = a.activations ?? Array((cell == .lstm ? ["Sigmoid", "Tanh", "Tanh"] : cell == .gru ? ["Sigmoid", "Tanh"] : ["Tanh"])
            .repeated(d))
        guard names.count == count * d else { throw invalid("activations", "\(count * d) functions", "\(names)") }
        let alphas = a.activationAlpha ?? [], betas = a.activationBeta ?? []
        guard alphas.isEmpty || alphas.count == names.count, betas.isEmpty || betas.count == names.count else {
            throw invalid("activationAlpha/activationBeta", "none or \(names.count) values each", "\(alphas.count) and \(betas.count)")
        }
        var gates: [Gate] = []
        for (i, name) in names.enumerated() {
            guard let f = RecurrentFunction(onnxName: name) else {
                throw invalid("activations", RecurrentFunction.allCases.map(\.rawValue).joined(separator: ", "), name)
            }
            gates.append(Gate(f, alpha: alphas.isEmpty ? f.defaultAlpha ?? 0 : alphas[i], beta: betas.isEmpty ? f.defaultBeta ?? 0 : betas[i]))
        }
        functions = (0..<d).map { Array(gates[($0 * count)..<($0 * count + count)]) }
        if let c = a.clip, !(c >= 0) { throw invalid("clip", "≥ 0", "\(c)") }
        clip = a.clip
        inputForget = a.inputForget ?? false
        linearBeforeReset = a.linearBeforeReset ?? false
        if let l = a.sequenceLengths, l.contains(where: { $0 < 0 }) { throw invalid("sequenceLengths", "values ≥ 0", "\(l)") }
        lengths = a.sequenceLengths
    }

    /// The output shape for input x (T, B, I), checking x and the initial states (D, B, H).
    func outputShape(_ s: Step, _ ins: [[Int]]) throws -> [Int] {
        let x = ins[0]
        guard x.count == 3, x[2] == inputSize else {
            throw EngineError.shapeMismatch(node: s.name, what: "input", expected: "(T, B, \(inputSize))", actual: x)
        }
        let (t, b) = (x[0], x[1])
        for (i, st) in ins.dropFirst().enumerated() where st != [directions, b, hidden] {
            throw EngineError.shapeMismatch(node: s.name, what: "initial \(states[i].rawValue)", expected: "[\(directions), \(b), \(hidden)]", actual: st)
        }
        // A length past T counts as T: a model whose T is free is planned with T = 1 before it runs.
        if let l = lengths, l.count != b {
            throw EngineError.invalidAttribute(node: s.name, attribute: "sequenceLengths", expected: "\(b) values (one per batch item)", actual: "\(l)")
        }
        return output == .y ? [t, b, hidden, directions] : [directions, b, hidden]
    }

    /// How many of the `steps` steps batch item `item` has.
    func length(_ item: Int, steps: Int) -> Int { min(lengths?[item] ?? steps, steps) }

    /// The step whose input is read at position `step` of batch item `item` (length `len`) in direction `d`.
    func time(_ step: Int, length len: Int, direction d: Int) -> Int { reverse || d == 1 ? len &- 1 &- step : step }
}

extension Reference {
    /// The ONNX equations, literally: one batch item and one step at a time, every sum written out.
    static func recurrent(_ s: Step, _ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        guard let rs = s.recurrent else { preconditionFailure("\(s.op) '\(s.name)': no recurrent spec (Program.compile)") }
        let (steps, batch, inSize) = (xs[0][0], xs[0][1], xs[0][2])
        let (h, g, dirs) = (rs.hidden, rs.gates, rs.directions)
        var all = [Float](repeating: 0, count: steps * batch * h * dirs)
        var lastH = [Float](repeating: 0, count: dirs * batch * h), lastC = lastH
        func clipped(_ v: Float) -> Float { rs.clip.map { min(max(v, -$0), $0) } ?? v }
        for d in 0..<dirs {
            let w = rs.w.pointer + d * g * h * inSize, r = rs.r.pointer + d * g * h * h
            let wb = rs.b.pointer + d * 2 * g * h, rb = wb + g * h
            let f = rs.functions[d]
            for item in 0..<batch {
                var hPrev = [Float](repeating: 0, count: h), cPrev = hPrev
                for (k, st) in rs.states.enumerated() {
                    for j in 0..<h {
                        let v = x[1 + k][(d * batch + item) * h + j]
                        if st == .h { hPrev[j] = v } else { cPrev[j] = v }
                    }
                }
                let len = rs.length(item, steps: steps)
                for step in 0..<len {
                    let t = rs.time(step, length: len, direction: d)
                    let xt = x[0] + (t * batch + item) * inSize
                    // xw = Xt·Wᵀ + Wb and hr = Ht-1·Rᵀ + Rb, per gate row.
                    var xw = [Float](repeating: 0, count: g * h), hr = xw
                    for row in 0..<(g * h) {
                        var a = wb[row], c = rb[row]
                        for i in 0..<inSize { a += xt[i] * w[row * inSize + i] }
                        for k in 0..<h { c += hPrev[k] * r[row * h + k] }
                        xw[row] = a; hr[row] = c
                    }
                    var hNew = [Float](repeating: 0, count: h), cNew = hNew
                    switch rs.cell {
                    case .rnn:
                        for j in 0..<h { hNew[j] = f[0].apply(clipped(xw[j] + hr[j])) }
                    case .gru:
                        let z = (0..<h).map { f[0].apply(clipped(xw[$0] + hr[$0])) }
                        let reset = (0..<h).map { f[0].apply(clipped(xw[h + $0] + hr[h + $0])) }
                        for j in 0..<h {
                            var pre = xw[2 * h + j]
                            if rs.linearBeforeReset {
                                pre += reset[j] * hr[2 * h + j]
                            } else {
                                var acc = rb[2 * h + j]
                                for k in 0..<h { acc += reset[k] * hPrev[k] * r[(2 * h + j) * h + k] }
                                pre += acc
                            }
                            let candidate = f[1].apply(clipped(pre))
                            hNew[j] = (1 - z[j]) * candidate + z[j] * hPrev[j]
                        }
                    case .lstm:
                        let p = rs.p!.pointer + d * 3 * h
                        for j in 0..<h {
                            let i = f[0].apply(clipped(xw[j] + hr[j] + p[j] * cPrev[j]))
                            let forget = rs.inputForget ? 1 - i : f[0].apply(clipped(xw[2 * h + j] + hr[2 * h + j] + p[2 * h + j] * cPrev[j]))
                            let candidate = f[1].apply(clipped(xw[3 * h + j] + hr[3 * h + j]))
                            cNew[j] = forget * cPrev[j] + i * candidate
                            let o = f[0].apply(clipped(xw[h + j] + hr[h + j] + p[h + j] * cNew[j]))
                            hNew[j] = o * f[2].apply(cNew[j])
                        }
                    }
                    for j in 0..<h { all[((t * batch + item) * h + j) * dirs + d] = hNew[j] }
                    hPrev = hNew; cPrev = cNew
                }
                for j in 0..<h { lastH[(d * batch + item) * h + j] = hPrev[j]; lastC[(d * batch + item) * h + j] = cPrev[j] }
            }
        }
        let out = rs.output == .y ? all : rs.output == .h ? lastH : lastC
        y.update(from: out, count: out.count)
    }
}

extension Fast {
    /// The layer with its products as GEMMs: X·Wᵀ for every step at once (one SGEMM per direction), then per step
    /// H·Rᵀ for the whole batch (accumulated onto the gates) and the gate functions over rows (`mlk_bias_act` where
    /// the C kernels have the function). Batch items past their length are computed and dropped.
    static func recurrent(_ s: Step, _ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        guard let rs = s.recurrent else { preconditionFailure("\(s.op) '\(s.name)': no recurrent spec (Program.compile)") }
        let (steps, batch, inSize) = (xs[0][0], xs[0][1], xs[0][2])
        let (h, g, dirs) = (rs.hidden, rs.gates, rs.directions)
        let gh = g &* h
        if rs.output == .y { y.initialize(repeating: 0, count: steps &* batch &* h &* dirs) }
        let xw = Buffer(uninitialized: steps &* batch &* gh)
        let gatesBuf = Buffer(uninitialized: batch &* gh)
        let state = Buffer(count: batch &* h), cell = Buffer(count: batch &* h), temp = Buffer(count: batch &* h)
        let lbr = rs.cell == .gru && rs.linearBeforeReset
        let maxLength = min(rs.lengths?.max() ?? steps, steps)
        for d in 0..<dirs {
            let w = rs.w.pointer + d &* gh &* inSize, r = rs.r.pointer + d &* gh &* h
            let wb = rs.b.pointer + d &* 2 &* gh, rb = wb + gh
            let f = rs.functions[d]
            // xw = X·Wᵀ + Wb + Rb (a GRU with linear_before_reset keeps Rbh for the product it is reset with).
            if steps &* batch > 0 && inSize > 0 {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(steps &* batch), Int32(gh), Int32(inSize), 1,
                            x[0], Int32(inSize), w, Int32(inSize), 0, xw.pointer, Int32(gh))
            } else {
                xw.pointer.initialize(repeating: 0, count: steps &* batch &* gh)
            }
            var bias = (0..<gh).map { wb[$0] + rb[$0] }
            if lbr { for j in (2 &* h)..<gh { bias[j] = wb[j] } }
            mlk_bias_act(xw.pointer, Int64(steps &* batch), Int64(gh), bias, Int32(MLK_ACT_NONE), 0, 0)
            state.pointer.initialize(repeating: 0, count: batch &* h)
            cell.pointer.initialize(repeating: 0, count: batch &* h)
            for (k, st) in rs.states.enumerated() {
                (st == .h ? state : cell).pointer.update(from: x[1 &+ k] + d &* batch &* h, count: batch &* h)
            }
            for step in 0..<maxLength {
                // Each item's row of X·Wᵀ at its own step (items reversed within their own lengths).
                var active = [Int](repeating: -1, count: batch)
                for item in 0..<batch {
                    let len = rs.length(item, steps: steps)
                    let row = gatesBuf.pointer + item &* gh
                    guard step < len else { row.initialize(repeating: 0, count: gh); continue }
                    let t = rs.time(step, length: len, direction: d)
                    active[item] = t
                    row.update(from: xw.pointer + (t &* batch &+ item) &* gh, count: gh)
                }
                // The recurrent product for every gate (GRU: z and r; its h gate's product comes after the reset).
                let product = rs.cell == .gru ? 2 &* h : gh
                if h > 0 && batch > 0 {
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(batch), Int32(product), Int32(h), 1,
                                state.pointer, Int32(h), r, Int32(h), 1, gatesBuf.pointer, Int32(gh))
                }
                switch rs.cell {
                case .rnn:
                    clipRows(rs.clip, gatesBuf.pointer, rows: batch, cols: h)
                    apply(f[0], gatesBuf.pointer, rows: batch, cols: h)
                    for item in 0..<batch where active[item] >= 0 {
                        (state.pointer + item &* h).update(from: gatesBuf.pointer + item &* h, count: h)
                    }
                case .gru:
                    // hr = Ht-1·Rhᵀ (+ Rbh with linear_before_reset) into temp.
                    if lbr {
                        for item in 0..<batch { (temp.pointer + item &* h).update(from: rb + 2 &* h, count: h) }
                        if h > 0 && batch > 0 {
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(batch), Int32(h), Int32(h), 1,
                                        state.pointer, Int32(h), r + 2 &* h &* h, Int32(h), 1, temp.pointer, Int32(h))
                        }
                    }
                    for item in 0..<batch {
                        let row = gatesBuf.pointer + item &* gh
                        clipRows(rs.clip, row, rows: 1, cols: 2 &* h)
                        apply(f[0], row, rows: 1, cols: 2 &* h)
                        let reset = row + h, candidate = row + 2 &* h, hp = state.pointer + item &* h, tp = temp.pointer + item &* h
                        if lbr {
                            for j in 0..<h { candidate[j] += reset[j] * tp[j] }
                        } else {
                            for j in 0..<h { tp[j] = reset[j] * hp[j] }
                        }
                    }
                    if !lbr && h > 0 && batch > 0 {
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(batch), Int32(h), Int32(h), 1,
                                    temp.pointer, Int32(h), r + 2 &* h &* h, Int32(h), 1, gatesBuf.pointer + 2 &* h, Int32(gh))
                    }
                    for item in 0..<batch where active[item] >= 0 {
                        let row = gatesBuf.pointer + item &* gh, candidate = row + 2 &* h, hp = state.pointer + item &* h
                        clipRows(rs.clip, candidate, rows: 1, cols: h)
                        apply(f[1], candidate, rows: 1, cols: h)
                        for j in 0..<h { hp[j] = (1 - row[j]) * candidate[j] + row[j] * hp[j] }
                    }
                case .lstm:
                    let p = rs.p!.pointer + d &* 3 &* h
                    for item in 0..<batch where active[item] >= 0 {
                        let row = gatesBuf.pointer + item &* gh
                        let (gi, go, gf, gc) = (row, row + h, row + 2 &* h, row + 3 &* h)
                        let cp = cell.pointer + item &* h, hp = state.pointer + item &* h, tp = temp.pointer + item &* h
                        for j in 0..<h { gi[j] += p[j] * cp[j]; gf[j] += p[2 &* h &+ j] * cp[j] }
                        clipRows(rs.clip, gi, rows: 1, cols: h)
                        clipRows(rs.clip, gf, rows: 1, cols: 2 &* h)   // f and c, side by side
                        apply(f[0], gi, rows: 1, cols: h)
                        if rs.inputForget {
                            for j in 0..<h { gf[j] = 1 - gi[j] }
                        } else {
                            apply(f[0], gf, rows: 1, cols: h)
                        }
                        apply(f[1], gc, rows: 1, cols: h)
                        for j in 0..<h {
                            cp[j] = gf[j] * cp[j] + gi[j] * gc[j]
                            go[j] += p[h &+ j] * cp[j]
                        }
                        clipRows(rs.clip, go, rows: 1, cols: h)
                        apply(f[0], go, rows: 1, cols: h)
                        tp.update(from: cp, count: h)
                        apply(f[2], tp, rows: 1, cols: h)
                        for j in 0..<h { hp[j] = go[j] * tp[j] }
                    }
                }
                if rs.output == .y {
                    for item in 0..<batch where active[item] >= 0 {
                        let at: Int = (active[item] &* batch &+ item) &* h &* dirs &+ d
                        let out = y + at, hp = state.pointer + item &* h
                        for j in 0..<h { out[j &* dirs] = hp[j] }
                    }
                }
            }
            if rs.output != .y {
                (y + d &* batch &* h).update(from: (rs.output == .h ? state : cell).pointer, count: batch &* h)
            }
        }
    }

    /// Clamps rows × cols floats to [−clip, clip] (nothing without a clip).
    private static func clipRows(_ clip: Float?, _ p: UnsafeMutablePointer<Float>, rows: Int, cols: Int) {
        guard let c = clip else { return }
        mlk_bias_act(p, Int64(rows), Int64(cols), nil, Int32(MLK_ACT_CLIP), -c, c)
    }

    /// A gate function over rows × cols floats: the C kernels' vectorised form when they have it.
    private static func apply(_ gate: RecurrentSpec.Gate, _ p: UnsafeMutablePointer<Float>, rows: Int, cols: Int) {
        if let act = gate.act {
            mlk_bias_act(p, Int64(rows), Int64(cols), nil, act.code, act.p0, act.p1)
        } else {
            for i in 0..<(rows &* cols) { p[i] = gate.apply(p[i]) }
        }
    }
}

private extension Array {
    /// The array repeated `n` times.
    func repeated(_ n: Int) -> [Element] { (0..<n).flatMap { _ in self } }
}
