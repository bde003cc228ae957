import Foundation
import MLToolCore

/// How one chunk (an image, or the whole batch when the graph mixes images) runs: the value shapes, and where in
/// the activation arena every runtime value lives; values whose lifetimes do not overlap share memory.
struct Plan: Sendable {
    var steps: [Int]
    var shapes: [Int: [Int]]
    /// Offset in floats, in the arena's one buffer, of each runtime value (graph inputs and step outputs; constants
    /// have none, and neither has a value a fused pair never writes: the expand conv's output in `fused`, the
    /// projection's in `residual`). Offsets are multiples of 16 floats (64 bytes, the buffer's alignment).
    var offset: [Int: Int] = [:]
    /// Floats of the arena.
    var arenaFloats = 0
    /// For palettized steps (by position in `steps`) whose decoded panels fit in a gap of the arena beside the values
    /// live while they run: the offset of that room. The others share one decode buffer.
    var decodeOffset: [Int: Int] = [:]
    /// What was placed in the arena: the values' lifetimes (by value id), then the decode rooms kept (value
    /// −1 − position; `decodeOffset`).
    var lifetimes: [Lifetime] = []
    var scratch = 0
    /// Positions in `steps` where that step and the next run fused (see `Fused`).
    var fused: Set<Int> = []
    /// Aligned with `steps`: for a 1×1 conv or dense layer that runs as one GEMM with the add after it (`FusedResidual`), the index
    /// in the add's inputs of the value its epilogue adds; nil for every other step.
    var residual: [Int?] = []
    /// Aligned with `steps`: for a div that runs with the add and softmax after it as one (`ScaledSoftmax`), where the
    /// fused run finds its operands; nil for every other step.
    var scaledSoftmax: [ScaledSoftmax.Match?] = []
    /// The fast-path kernel of each step (`Fast.kernel(for:_:)`), aligned with `steps`.
    var kernels: [Fast.Kernel] = []
    /// Steps (by index in the program) whose settings these shapes fill in (`Program.resolve`).
    var resolved: [Int: Step] = [:]

    /// Marks the 1×1 convs and dense layers that run with the add after them (`residual`) and the div, add and softmax chains that run
    /// as one (`scaledSoftmax`), keeping alive the inputs a fused run still reads while it writes its output.
    private mutating func markResidualsAndSoftmaxes(_ p: Program, _ lastUse: inout [Int: Int]) {
        residual = Array(repeating: nil, count: steps.count)
        for pos in steps.indices.dropLast() where !fused.contains(pos) && !fused.contains(pos - 1)
            && (pos == 0 || residual[pos - 1] == nil) {
            let c = step(steps[pos], p), a = step(steps[pos + 1], p)
            guard lastUse[c.output] == pos + 1, p.constants[c.inputs[0]] == nil, let cx = shapes[c.inputs[0]],
                  let other = FusedResidual.otherInput(c, cx, a, a.inputs.map { shapes[$0] }) else { continue }
            residual[pos] = other
            // The conv's input is read while the add's output is written: its memory must not be reused for that.
            lastUse[c.inputs[0]] = max(lastUse[c.inputs[0]] ?? 0, pos + 1)
        }
        scaledSoftmax = Array(repeating: nil, count: steps.count)
        for pos in steps.indices where pos + 2 < steps.count && (pos...(pos + 2)).allSatisfy({ alone($0) }) {
            let three = steps[pos...(pos + 2)].map { step($0, p) }
            guard let m = ScaledSoftmax.match(three, p, shapes: shapes, lastUse: lastUse, at: pos) else { continue }
            scaledSoftmax[pos] = m
            // The scores and the mask are read while the softmax's output is written.
            for v in [three[0].inputs[0], three[1].inputs[m.addend]] { lastUse[v] = max(lastUse[v] ?? 0, pos + 2) }
        }
    }

    /// Whether the step at `pos` runs on its own: not in a fused pair, a conv with its add, or a fused softmax.
    private func alone(_ pos: Int) -> Bool {
        !fused.contains(pos) && !fused.contains(pos - 1) && residual[pos] == nil && (pos == 0 || residual[pos - 1] == nil)
            && (pos < 1 || scaledSoftmax[pos - 1] == nil) && (pos < 2 || scaledSoftmax[pos - 2] == nil)
    }

    /// Whether the int8 step at `pos` can take its codes from the step before it: both read dynamic codes of the
    /// same input with the same row length, both run alone (not in a fused pair), one right after the other, so the
    /// codes that step left at the start of scratch are this step's (`Kernel.quantizedDenseSharedCodes`).
    static func sharesCodes(_ pos: Int, _ steps: [Step], _ kernels: [Fast.Kernel], _ plan: Plan) -> Bool {
        guard pos > 0, kernels[pos] == .quantizedDense,
              [.quantizedDense, .quantizedDenseSharedCodes].contains(kernels[pos - 1]),
              let w = steps[pos].qweights, let v = steps[pos - 1].qweights, w.readsDynamicCodes, v.readsDynamicCodes,
              steps[pos].inputs[0] == steps[pos - 1].inputs[0], w.k == v.k,
              !plan.fused.contains(pos - 1), !plan.fused.contains(pos - 2), !plan.fused.contains(pos),
              plan.residual[pos] == nil, plan.residual[pos - 1] == nil else { return false }
        return true
    }

    /// Step `i` of the program as this plan runs it.
    func step(_ i: Int, _ p: Program) -> Step { resolved[i] ?? p.steps[i] }

    /// `threads`: the most threads one op may be split across (each fused pair needs a band buffer per thread).
    init(program p: Program, inputShapes: [Int: [Int]], inputValues: [Int: [Float]] = [:], steps: [Int], targets: [Int],
         threads: Int = 1) throws {
        let resolution = try p.resolve(inputs: inputShapes, values: inputValues, steps: steps, targets: targets)
        let steps = resolution.order
        self.steps = steps
        shapes = resolution.shapes
        resolved = resolution.steps
        var lastUse: [Int: Int] = [:]
        for (pos, i) in steps.enumerated() { for v in p.steps[i].inputs { lastUse[v] = pos } }
        for t in targets { lastUse[t] = Int.max }
        for pos in steps.indices.dropLast() where !fused.contains(pos - 1) {
            let e = step(steps[pos], p), d = step(steps[pos + 1], p)
            guard lastUse[e.output] == pos + 1, p.constants[e.inputs[0]] == nil,
                  let ex = shapes[e.inputs[0]], let dx = shapes[e.output],
                  Fused.fusable(e, ex, d, dx) else { continue }
            fused.insert(pos)
            scratch = max(scratch, Fused.bandFloats(e, d, dx) &* max(1, threads))
            // The 1×1 conv's input is read until the depthwise conv's last band: its memory must not be reused for
            // the depthwise conv's output.
            lastUse[e.inputs[0]] = max(lastUse[e.inputs[0]] ?? 0, pos + 1)
        }
        markResidualsAndSoftmaxes(p, &lastUse)
        // Values the fused pairs never write: no memory (the 4.8 MB of EfficientNet-Lite0's 112 × 112 × 96 expansion).
        var unwritten = Set(fused.map { p.steps[steps[$0]].output })
        for (pos, r) in residual.enumerated() where r != nil { unwritten.insert(p.steps[steps[pos]].output) }
        for (pos, m) in scaledSoftmax.enumerated() where m != nil {
            unwritten.formUnion([p.steps[steps[pos]].output, p.steps[steps[pos + 1]].output])
        }
        unwritten.subtract(p.inputIds)   // never a graph input (Program refuses a node output named like one)
        // Lifetimes in step positions: a value is live from the step that writes it (a graph input: from before the
        // first, −1) through its last reader (a target: to the end; a value nothing reads: its own step). A step's
        // output is live while the step reads its inputs, so it never shares their memory.
        var lives: [Lifetime] = []
        for v in Set(p.inputIds) where !unwritten.contains(v) {
            lives.append(Lifetime(value: v, first: -1, last: lastUse[v] ?? -1, floats: shapes[v]!.reduce(1, *)))
        }
        for (pos, i) in steps.enumerated() {
            let s = step(i, p)
            let xs = s.inputs.map { shapes[$0] ?? [] }   // [] for an ifElse's branch not taken
            kernels.append(Fast.kernel(for: s, xs))
            scratch = max(scratch, Fast.scratchCount(s, xs, shapes[s.output]!, threads: threads))
            if !unwritten.contains(s.output) {
                lives.append(Lifetime(value: s.output, first: pos, last: max(pos, lastUse[s.output] ?? pos),
                                      floats: shapes[s.output]!.reduce(1, *)))
            }
        }
        let planned = steps.map { step($0, p) }
        for pos in steps.indices where Self.sharesCodes(pos, planned, kernels, self) { kernels[pos] = .quantizedDenseSharedCodes }
        (offset, arenaFloats) = Self.place(lives)
        // A palettized layer decodes its panels into memory of its own while it runs (with its pair, when fused):
        // late layers' weights are large and their activations small, so that memory usually fits in the arena
        // beside what is live then, where the arena is resident anyway. The rooms go into the gaps the values
        // leave, largest first, each at the lowest offset clear of what is live with it and only where it ends
        // inside the arena: the values keep the places they have without rooms (the float model's, so the two run
        // the same memory layout), and the arena its size.
        var placed = lives.map { l in (first: l.first, last: l.last, start: offset[l.value] ?? 0,
                                       end: (offset[l.value] ?? 0) &+ l.slot) }
        var rooms: [Lifetime] = []
        for (pos, i) in steps.enumerated() {
            guard let palette = p.steps[i].palette else { continue }
            let pair = fused.contains(pos) || residual[pos] != nil
            rooms.append(Lifetime(value: -1 &- pos, first: pos, last: pair ? pos &+ 1 : pos, floats: palette.packedCount))
        }
        for room in rooms.sorted(by: { ($0.floats, $1.first) > ($1.floats, $0.first) }) {
            let at = Self.lowestClear(room, room.slot, placed)
            guard at &+ room.slot <= arenaFloats else { continue }
            decodeOffset[-1 &- room.value] = at
            placed.append((room.first, room.last, at, at &+ room.slot))
            lives.append(room)
        }
        lifetimes = lives
    }

    struct Lifetime {
        var value: Int, first: Int, last: Int, floats: Int
        /// The floats it takes in the arena: `floats` rounded up to 16 (a 64-byte line).
        var slot: Int { (floats &+ 15) / 16 &* 16 }
    }

    /// The lowest offset where `n` floats for `l` are clear of every placed value live at a step it is.
    private static func lowestClear(_ l: Lifetime, _ n: Int,
                                    _ placed: [(first: Int, last: Int, start: Int, end: Int)]) -> Int {
        var at = 0
        for q in placed.filter({ $0.first <= l.last && l.first <= $0.last }).sorted(by: { $0.start < $1.start }) {
            if q.start >= at &+ n { break }
            at = max(at, q.end)
        }
        return at
    }

    /// Offsets for values with these lifetimes such that two values live at the same step never overlap: each value
    /// in turn at the lowest offset clear of the values already placed that overlap it in time, in three orders (the
    /// largest first, as TensorFlow Lite's greedy-by-size planner; the values of the step with the most memory live
    /// first, largest first, as its greedy-by-breadth; the earliest first), keeping the smallest arena. Greedy by
    /// size alone leaves EfficientNet-Lite0 at batch 1 with 3.8 MiB where 3.1 are live at once (the stem's output
    /// and the depthwise conv's after it take the bottom, and the next values have to go above both). The arena is
    /// then close to the most memory live at any step, where a slot per value kept until reused by a value that
    /// fits holds more (8.1 MiB in 13 slots). Sizes round up to 16 floats.
    static func place(_ lives: [Lifetime]) -> (offset: [Int: Int], floats: Int) {
        let bySize = lives.sorted { ($0.slot, $1.first, $1.value) > ($1.slot, $0.first, $0.value) }
        let byFirst = lives.sorted { ($0.first, $1.slot, $0.value) < ($1.first, $0.slot, $1.value) }
        // Steps by the memory live at each, widest first; each step's values not yet taken, largest first.
        var byBreadth: [Lifetime] = []
        // (What is live changes only where a value starts, and every value is live at its first step.)
        let live = { (t: Int) in bySize.filter { $0.first <= t && t <= $0.last } }
        let widest = Set(lives.map(\.first)).map { t in (t, live(t).map(\.slot).reduce(0, &+)) }
            .sorted { ($0.1, $1.0) > ($1.1, $0.0) }
        var taken = Set<Int>()
        for (t, _) in widest { for l in live(t) where taken.insert(l.value).inserted { byBreadth.append(l) } }
        var best: (offset: [Int: Int], floats: Int)?
        for order in [bySize, byBreadth, byFirst] {
            let r = firstFit(order)
            if best.map({ r.floats < $0.floats }) ?? true { best = r }
        }
        return best ?? ([:], 0)
    }

    /// Each value of `order` in turn at the lowest offset clear of the values placed before it that are live at a
    /// step it is.
    private static func firstFit(_ order: [Lifetime]) -> (offset: [Int: Int], floats: Int) {
        var offset: [Int: Int] = [:]
        var total = 0
        var placed: [(first: Int, last: Int, start: Int, end: Int)] = []
        for l in order {
            let n = l.slot
            let at = lowestClear(l, n, placed)
            offset[l.value] = at
            placed.append((l.first, l.last, at, at &+ n))
            total = max(total, at &+ n)
        }
        return (offset, total)
    }
}

/// `MLTOOL_PROFILE=1`: seconds per op (and kernel) over every run, printed on stderr when the process exits, to see
/// where a network's time goes. Off by default; the hot loop only tests a constant.
enum StepProfile {
    static let enabled = ["1", "2"].contains(ProcessInfo.processInfo.environment["MLTOOL_PROFILE"])
    /// `MLTOOL_PROFILE=2`: one row per op and shapes (a conv's weights, the inputs and the output).
    static let detailed = ProcessInfo.processInfo.environment["MLTOOL_PROFILE"] == "2"
    nonisolated(unsafe) static var seconds: [String: (Double, Int)] = [:]
    static let lock = NSLock()
    static let registered: Bool = {
        atexit {
            let rows = StepProfile.seconds.sorted { $0.value.0 > $1.value.0 }
            let total = rows.reduce(0) { $0 + $1.value.0 }
            FileHandle.standardError.write(Data(String(format: "profile: %.3f s in %d kinds of step\n", total, rows.count).utf8))
            for (k, v) in rows {
                FileHandle.standardError.write(Data(String(format: "  %-40@ %8.3f s %5.1f%%  %6d calls\n", k, v.0, v.0 / max(total, 1e-12) * 100, v.1).utf8))
            }
        }
        return true
    }()

    static func add(_ key: String, _ s: Double) {
        lock.lock(); defer { lock.unlock() }
        _ = registered
        let v = seconds[key] ?? (0, 0)
        seconds[key] = (v.0 + s, v.1 + 1)
    }
}

/// The memory one worker runs a plan in: the values' buffer allocated once, and each step's pointers resolved in advance so the
/// hot loop neither allocates nor looks anything up.
final class Arena: @unchecked Sendable {
    /// Every runtime value at its plan offset.
    let values: Buffer
    /// Every kernel writes the part of the scratch it reads first (im2col rows, a fused pair's band, Winograd's
    /// planes, quantized rows), so it is not zero-filled: only the pages some step uses become resident (a stem's
    /// im2col room is sized for a whole image, 1.3 MB at 224 × 224, and it uses one output row of it per thread).
    let scratch: Buffer
    /// The plan's steps as this arena runs them: a palettized layer's `packed` is its room in `values`
    /// (`Plan.decodeOffset`), or else `decoded`, which every such layer without one shares (each decodes into it as
    /// it runs: `PaletteWeights`; a GEMM with few rows touches only a block per part of it, the rest of the
    /// allocation is never resident).
    let steps: [Step]
    let decoded: Buffer?
    let inputs: [[UnsafePointer<Float>]]
    let inputShapes: [[[Int]]]
    let outputs: [UnsafeMutablePointer<Float>]
    let outputShapes: [[Int]]

    init(plan: Plan, program p: Program) {
        let values = Buffer(count: plan.arenaFloats)
        self.values = values
        scratch = Buffer(uninitialized: plan.scratch)
        let decoded = plan.steps.indices.filter { plan.decodeOffset[$0] == nil }
            .compactMap { p.steps[plan.steps[$0]].palette?.packedCount }.max().map { Buffer(uninitialized: $0) }
        self.decoded = decoded
        steps = plan.steps.enumerated().map { pos, i in
            var s = plan.step(i, p)
            if let palette = s.palette {
                s.packed = plan.decodeOffset[pos].map { Buffer(view: values, offset: $0, count: palette.packedCount) }
                    ?? decoded
            }
            return s
        }
        // An unwritten value (no offset) is never read either: its pointer is the scratch's, never dereferenced.
        let scratchPointer = scratch.pointer
        func pointer(_ v: Int) -> UnsafeMutablePointer<Float> {
            p.constants[v]?.pointer ?? plan.offset[v].map { values.pointer + $0 } ?? scratchPointer
        }
        inputs = plan.steps.map { p.steps[$0].inputs.map { UnsafePointer(pointer($0)) } }
        inputShapes = plan.steps.map { p.steps[$0].inputs.map { plan.shapes[$0] ?? [] } }
        outputs = plan.steps.map { pointer(p.steps[$0].output) }
        outputShapes = plan.steps.map { plan.shapes[p.steps[$0].output]! }
    }

    /// The profile row of the step at `pos` (and the next, when fused): built before the step is timed.
    private func profileKey(at pos: Int, _ plan: Plan, _ steps: [Step]) -> String {
        let step = steps[pos]
        var key = "\(step.op)" + (step.palette.map { " palette\($0.bits)" } ?? "")
        if plan.fused.contains(pos) {
            key += "+\(steps[pos + 1].op) (fused)"
            if StepProfile.detailed {
                key += " \(step.weightShape) + \(steps[pos + 1].weightShape) in \(inputShapes[pos]) out \(outputShapes[pos + 1])"
            }
        } else if plan.scaledSoftmax[pos] != nil {
            key += "+add+softmax (fused)"
            if StepProfile.detailed { key += " in \(inputShapes[pos]) out \(outputShapes[pos + 2])" }
        } else if plan.residual[pos] != nil {
            key += "+add (fused)"
            if StepProfile.detailed { key += " \(step.weightShape) in \(inputShapes[pos]) out \(outputShapes[pos + 1])" }
        } else {
            key += " [\(plan.kernels[pos])]"
            if StepProfile.detailed {
                key += (step.op == .conv ? " \(step.weightShape)" : "") + " in \(inputShapes[pos]) out \(outputShapes[pos])"
                    + (step.groups > 1 ? " g\(step.groups)" : "") + Self.int8Note(step)
            }
        }
        return key
    }

    /// How an int8 step stores its input and output, for the detailed profile: "codes→codes", "floats→floats"…
    private static func int8Note(_ step: Step) -> String {
        if let q = step.qweights {
            return " int8 \(q.readsStoredCodes ? "codes" : "floats")→\(q.writesCodes ? "codes" : "floats")"
        }
        if let d = step.qdepthwise {
            return " int8 \(d.storedInput != nil ? "codes" : "floats")→\(d.writesCodes ? "codes" : "floats")"
        }
        return ""
    }

    private func profiled(_ plan: Plan, _ p: Program, threads: Int, _ steps: [Step]) {
        var pos = 0
        while pos < plan.steps.count {
            let key = profileKey(at: pos, plan, steps)
            let t0 = DispatchTime.now().uptimeNanoseconds
            let next = step(at: pos, plan, threads: threads, steps)
            StepProfile.add(key, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)
            pos = next
        }
    }

    /// The storage of value `v`.
    func pointer(_ v: Int, _ plan: Plan, _ p: Program) -> UnsafeMutablePointer<Float> {
        p.constants[v]?.pointer ?? values.pointer + plan.offset[v]!
    }

    /// Runs every step of the plan on what the graph inputs' places hold.
    /// `threads` > 1 splits single large ops across threads (used when one worker runs the whole batch).
    /// `decoded`: this arena's steps with every palettized layer already decoded (`Arena.decodedSteps`), for a call
    /// that decodes them once for all its chunks.
    func run(_ plan: Plan, _ p: Program, threads: Int, decoded: [Step]? = nil) {
        let steps = decoded ?? self.steps
        if StepProfile.enabled { return profiled(plan, p, threads: threads, steps) }
        var pos = 0
        while pos < plan.steps.count { pos = step(at: pos, plan, threads: threads, steps) }
    }

    /// The arena's steps with each palettized layer's weights decoded once, whole, into `memory` (one region per
    /// layer, split across `threads` as `PaletteWeights.unpack` splits a layer) and run as float weights from there:
    /// the same bits as decoding them as the layer runs (the kernels decode into the GEMM's panels either way). nil
    /// when no step keeps a palette. Steps other than palettized layers are the same in every arena of a plan, so
    /// the result serves them all for as long as `memory` lives.
    func decodedSteps(threads: Int) -> (steps: [Step], memory: Buffer)? {
        let layers = steps.indices.compactMap { pos in steps[pos].palette.map { (pos, $0) } }
        guard !layers.isEmpty else { return nil }
        // Each region starts on a 64-byte boundary, as the arena's own rooms do.
        var offsets: [Int] = [], total = 0
        for (_, palette) in layers { offsets.append(total); total &+= (palette.packedCount &+ 15) / 16 &* 16 }
        let memory = Buffer(uninitialized: total)
        var decoded = steps
        for ((pos, palette), offset) in zip(layers, offsets) {
            let region = Buffer(view: memory, offset: offset, count: palette.packedCount)
            palette.unpack(into: region.pointer, threads: threads)
            decoded[pos].packed = region
            decoded[pos].palette = nil
        }
        return (decoded, memory)
    }

    /// Runs the step at `pos`, with the next one when the two run fused; returns the position after them.
    @inline(__always)
    private func step(at pos: Int, _ plan: Plan, threads: Int, _ steps: [Step]) -> Int {
        if plan.fused.contains(pos) {
            Fused.run(steps[pos], steps[pos + 1], inputs[pos][0], inputShapes[pos][0], inputShapes[pos + 1][0],
                      outputs[pos + 1], outputShapes[pos + 1], scratch: scratch.pointer, threads: threads)
            return pos + 2
        }
        if let f = plan.scaledSoftmax[pos] {
            ScaledSoftmax.run(f, inputs[pos][0], inputShapes[pos][0], mask: inputs[pos + 1][f.addend],
                              inputShapes[pos + 1][f.addend], outputs[pos + 2], threads: threads)
            return pos + 3
        }
        if let other = plan.residual[pos] {
            FusedResidual.run(steps[pos], inputs[pos][0], inputShapes[pos][0], residual: inputs[pos + 1][other],
                              outputs[pos + 1], outputShapes[pos + 1], act: steps[pos + 1].act, scratch: scratch.pointer,
                              threads: threads)
            return pos + 2
        }
        Fast.run(plan.kernels[pos], steps[pos], inputs[pos], inputShapes[pos], outputs[pos], outputShapes[pos],
                 scratch: scratch.pointer, threads: threads)
        return pos + 1
    }
}
