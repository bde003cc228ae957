import MLToolCore

/// Planning one set of input shapes: every value's shape, the plan-time values (docs/FORMAT.md: what follows from
/// `shape` steps and constants alone) and the steps whose settings depend on them, filled in.
struct Resolution {
    var shapes: [Int: [Int]]
    /// Plan-time values by value id.
    var values: [Int: [Float]] = [:]
    /// Steps (by index in the program) as they run for these shapes: a reshape's or expand's target read from its
    /// second input, ONNX slice bounds, automatic pads, a resize's size from its scales, an ifElse's branch.
    var steps: [Int: Step] = [:]
    /// The steps that run, in graph order: those the targets need, less the branches an ifElse whose condition is
    /// a plan-time value does not take.
    var order: [Int] = []

    func step(_ i: Int, _ p: Program) -> Step { steps[i] ?? p.steps[i] }
}

extension Program {
    /// The most elements a plan-time value may have (shape arithmetic is a handful of numbers).
    static let maxPlanTimeValue = 4096

    /// Ops whose output is a plan-time value when all their inputs are.
    static let planTimeOps: Set<Op> = [.gather, .concat, .reshape, .flatten, .squeeze, .unsqueeze, .identity, .slice,
                                       .add, .sub, .mul, .div, .pow, .binary, .unary, .where, .reduce, .expand]

    /// Resolves the given steps (graph order) for these input shapes; throws naming the first node that does not
    /// fit. With `targets`, an ifElse whose condition is a plan-time value resolves (and the result's `order` keeps)
    /// only the branch it takes.
    func resolve(inputs: [Int: [Int]], steps order: [Int], targets: [Int]? = nil) throws -> Resolution {
        // Every product of an input's dimensions must fit (a file can declare any size, and a shape with a zero
        // dimension has no elements whatever the others are).
        for (id, shape) in inputs where !Self.fits(shape) {
            throw EngineError.shapeMismatch(node: names[id], what: "input", expected: "dimensions ≥ 0 whose product fits", actual: shape)
        }
        var r = Resolution(shapes: inputs)
        for (id, s) in constantShapes { r.shapes[id] = s }
        if let targets, order.contains(where: { steps[$0].op == .ifElse }) {
            try resolveBranching(targets, &r)
            return r
        }
        for i in order { try resolveStep(i, &r) }
        r.order = order
        return r
    }

    /// Resolves step `i` (its inputs resolved) into `r`.
    private func resolveStep(_ i: Int, _ r: inout Resolution, choice: Int? = nil) throws {
        let ins = try steps[i].inputs.enumerated().map { k, id -> [Int] in
            if let c = choice, k != 0 && k != c { return [] }   // the branch not taken: never computed
            guard let sh = r.shapes[id] else { throw EngineError.unknownTensor(node: steps[i].name, tensor: names[id]) }
            return sh
        }
        var s = try resolved(steps[i], ins, &r)
        if let c = choice {
            var chosen = s ?? steps[i]
            chosen.chosen = c
            s = chosen
        }
        if let s { r.steps[i] = s }
        let step = s ?? steps[i]
        let out = try Self.outputShape(step, ins)
        guard Self.fits(out), (try? Checked.elementCount(out)) != nil else {
            throw EngineError.shapeMismatch(node: step.name, what: "output", expected: "a size that fits in memory", actual: out)
        }
        r.shapes[step.output] = out
        if let v = try planTimeValue(step, ins, out, &r) { r.values[step.output] = v }
    }

    /// Resolves what `targets` need, deciding each ifElse as soon as its condition is resolved: a plan-time
    /// condition takes one branch (the other is never resolved: it may not even fit these shapes), any other both.
    private func resolveBranching(_ targets: [Int], _ r: inout Resolution) throws {
        var live = Set<Int>(), undecided: [Int] = [], choices: [Int: Int] = [:], done = Set<Int>()
        func mark(_ values: [Int]) {
            var stack = values
            while let v = stack.popLast() {
                guard let p = producer[v], live.insert(p).inserted else { continue }
                if steps[p].op == .ifElse { undecided.append(p); stack.append(steps[p].inputs[0]) } else { stack += steps[p].inputs }
            }
        }
        mark(targets)
        var progress = true
        while progress {
            progress = false
            for i in live.sorted() where !done.contains(i) {
                let s = steps[i]
                if s.op == .ifElse && choices[i] == nil { continue }
                let needs = s.op == .ifElse && choices[i] != 0 ? [s.inputs[0], s.inputs[choices[i] ?? 1]] : s.inputs
                guard needs.allSatisfy({ r.shapes[$0] != nil }) else { continue }
                try resolveStep(i, &r, choice: s.op == .ifElse ? choices[i].flatMap { $0 == 0 ? nil : $0 } : nil)
                done.insert(i)
                progress = true
            }
            for (k, i) in undecided.enumerated().reversed() where r.shapes[steps[i].inputs[0]] != nil {
                let cond = steps[i].inputs[0]
                if let v = r.values[cond] ?? smallConstant(cond), let c = v.first, v.count == 1 {
                    choices[i] = c != 0 ? 1 : 2
                    mark([steps[i].inputs[choices[i] ?? 1]])
                } else {
                    choices[i] = 0   // known only at run time: both branches run
                    mark(Array(steps[i].inputs.dropFirst()))
                }
                undecided.remove(at: k)
                progress = true
            }
        }
        r.order = done.sorted()
    }

    /// The value of `step`'s output when planning knows it: a `shape` step's, or a plan-time op's on known values.
    private func planTimeValue(_ s: Step, _ ins: [[Int]], _ out: [Int], _ r: inout Resolution) throws -> [Float]? {
        if s.op == .shape { return (s.perm ?? Array(ins[0].indices)).map { Float(ins[0][$0]) } }
        let n = out.reduce(1, *)
        guard Self.planTimeOps.contains(s.op), n <= Self.maxPlanTimeValue else { return nil }
        var xs: [[Float]] = []
        for id in s.inputs {
            guard let v = r.values[id] ?? smallConstant(id) else { return nil }
            xs.append(v)
        }
        let buffers = xs.map { Buffer($0) }
        let y = Buffer(count: n)
        // The buffers must outlive the run, not only the last mention of them.
        withExtendedLifetime(buffers) { Reference.run(s, buffers.map { UnsafePointer($0.pointer) }, ins, y.pointer, out) }
        return y.array
    }

    /// A constant's values when it is small enough to be a plan-time value.
    private func smallConstant(_ id: Int) -> [Float]? {
        guard let b = constants[id], let shape = constantShapes[id], shape.reduce(1, *) <= Self.maxPlanTimeValue else { return nil }
        return b.array
    }

    /// `s` with the settings these shapes and plan-time values give it, or nil when it has none to fill in.
    private func resolved(_ s: Step, _ ins: [[Int]], _ r: inout Resolution) throws -> Step? {
        var s = s
        switch s.op {
        case .reshape where s.inputs.count == 2, .expand:
            s.shape = try planTimeInts(s, 1, r)
        case .slice where s.bounds != nil:
            var bounds = s.bounds ?? []
            if s.inputs.count == 2 {
                // The ends as a plan-time value (a position table sliced to the sequence length).
                let ends = try planTimeInts(s, 1, r)
                guard ends.count == bounds.count else {
                    throw EngineError.invalidAttribute(node: s.name, attribute: "input '\(names[s.inputs[1]])'",
                                                       expected: "\(bounds.count) ends (one per axis)", actual: "\(ends)")
                }
                for i in bounds.indices { bounds[i].end = ends[i] }
            }
            s.slices = try bounds.map { try $0.resolved(in: ins[0], s) }
        case .conv where s.autoPad != nil:
            s.pads = Self.autoPads(s, ins[0], kernel: [s.weightShape[0], s.weightShape[1]])
        case .maxPool where s.autoPad != nil, .avgPool where s.autoPad != nil:
            s.pads = Self.autoPads(s, ins[0], kernel: s.kernel)
        case .resize where s.resize?.size.isEmpty ?? false:
            guard var spec = s.resize, let scales = spec.scales, ins[0].count == 4 else { return nil }
            spec.size = try (0..<2).map { i in
                let size = (Double(ins[0][i + 1]) * scales[i]).rounded(.down)
                guard size >= 0, size <= Double(Self.maxExtent) else {
                    throw EngineError.shapeMismatch(node: s.name, what: "input", expected: "a size that scales \(scales) keep within \(Self.maxExtent)", actual: ins[0])
                }
                return Int(size)
            }
            s.resize = spec
        default: return nil
        }
        return s
    }

    /// The plan-time value of input `index` of `s` as integers (a target shape).
    private func planTimeInts(_ s: Step, _ index: Int, _ r: Resolution) throws -> [Int] {
        let id = s.inputs[index]
        guard let v = r.values[id] ?? smallConstant(id) else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "input '\(names[id])'",
                                               expected: "a value known when planning (computed from the input shapes and constants)",
                                               actual: "a value computed from the input data")
        }
        return try v.map { f in
            guard f.isFinite, f == f.rounded(), abs(f) <= Float(Self.maxPlanTimeDimension) else {
                throw EngineError.invalidAttribute(node: s.name, attribute: "input '\(names[id])'", expected: "integer dimensions", actual: "\(v)")
            }
            return Int(f)
        }
    }

    /// The largest dimension a plan-time value may give (float32 holds every integer up to 2²⁴ exactly).
    static let maxPlanTimeDimension = 1 << 24

    /// Pads (top, left, bottom, right) that ONNX's SAME_UPPER / SAME_LOWER give a window of `kernel` over `x` (N,H,W,C).
    static func autoPads(_ s: Step, _ x: [Int], kernel: [Int]) -> [Int] {
        guard x.count == 4 else { return s.pads }
        var begin = [0, 0], end = [0, 0]
        for i in 0..<2 {
            // Sizes fit (checked inputs); kernel, stride and dilation are at most maxExtent: no overflow.
            let n = x[i + 1], st = s.strides[i]
            let out = (n + st - 1) / st
            let total = max(0, (out - 1) * st + (kernel[i] - 1) * s.dilations[i] + 1 - n)
            let small = total / 2
            (begin[i], end[i]) = s.autoPad == "SAME_LOWER" ? (total - small, small) : (small, total - small)
        }
        return [begin[0], begin[1], end[0], end[1]]
    }

    /// The `autoPad` attribute of a conv or pool node, checked.
    static func autoPad(_ a: Attributes, _ node: Node) throws -> String? {
        guard let mode = a.autoPad else { return nil }
        guard ["SAME_UPPER", "SAME_LOWER"].contains(mode), a.pads == nil else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "autoPad", expected: "SAME_UPPER or SAME_LOWER, with no pads",
                                               actual: mode + (a.pads.map { ", pads \($0)" } ?? ""))
        }
        return mode
    }
}

/// One axis of a slice with ONNX's bounds (docs/FORMAT.md): resolved per input size into a `SliceAxis`.
struct SliceBound: Sendable, Equatable {
    var axis: Int, start: Int, end: Int, step: Int

    /// The bounds of a slice node with `ends`, checked.
    static func list(_ a: Attributes, _ node: Node) throws -> [SliceBound] {
        let axes = a.axes ?? [], starts = a.starts ?? [], ends = a.ends ?? [], steps = a.steps ?? []
        guard starts.count == axes.count, ends.count == axes.count, steps.count == axes.count, Set(axes).count == axes.count,
              steps.allSatisfy({ $0 != 0 && abs($0) <= Program.maxExtent }), a.counts == nil else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "axes/starts/ends/steps",
                                               expected: "one start, end and non-zero step per distinct axis, no counts",
                                               actual: "axes \(axes), starts \(starts), ends \(ends), steps \(steps)")
        }
        return axes.indices.map { SliceBound(axis: axes[$0], start: starts[$0], end: ends[$0], step: steps[$0]) }
    }

    /// The first index, step and count along an axis of `x` (ONNX Slice: negative bounds count from the end, then
    /// both are clamped to [0, n] for a positive step, [−1, n − 1] for a negative one).
    func resolved(in x: [Int], _ s: Step) throws -> SliceAxis {
        let ax = try Program.axis(axis, rank: x.count, s)
        let n = x[ax]
        func clamped(_ v: Int, _ lo: Int, _ hi: Int) -> Int {
            let w = v < 0 ? (v < Int.min + n ? lo : v + n) : v
            return min(max(w, lo), hi)
        }
        let first: Int, last: Int
        if step > 0 {
            (first, last) = (clamped(start, 0, n), clamped(end, 0, n))
        } else {
            (first, last) = (clamped(start, -1, n - 1), clamped(end, -1, n - 1))
        }
        let span = step > 0 ? last - first : first - last   // both within [−1, n]: no overflow
        let count = span <= 0 ? 0 : (span - 1) / abs(step) + 1
        return SliceAxis(axis: ax, start: count > 0 ? first : 0, step: step, count: count)
    }
}
