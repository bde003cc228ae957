import CMLToolCPU
import CMLToolKernels
import COpenBLAS
import Foundation
import MLToolCore

/// Runs a model's graph on the CPU.
///
/// `init` validates the graph (unknown tensors, missing attributes, shape errors all name the node), applies
/// `GraphPasses` in fast mode, and packs the weights once (palettized ones stay as indices where the CPU decodes
/// them quickly: `PaletteWeights`). `run` is batched: when every image of a batch goes through the graph
/// independently (the usual case), images are spread over `threads` workers, each with its own reused activation
/// arena (one thread takes them `chunkImages` at a time); a single image (or a graph that mixes images) instead
/// splits each large conv across the threads. Each output element is computed the same way however work is split,
/// so the same inputs always give identical outputs for a given thread count.
///
/// Kernels: 1×1 convs are one GEMM on the NHWC input, k×k convs im2col + GEMM, dense layers a GEMM, all with
/// weights packed at init and bias + activation in the GEMM's epilogue; depthwise convs have their own kernel. All
/// come in AVX-512, AVX2+FMA and portable C versions chosen at run time from the CPU (see CMLToolKernels). OpenBLAS
/// serves matMul and grouped convs, single-threaded.
public final class Engine: @unchecked Sendable {
    /// `fast`: optimized graph and kernels. `reference`: the original graph through the plain scalar kernels.
    public enum Mode: Sendable { case fast, reference }

    /// How conv and dense layers whose weights are stored as symmetric per-channel int8 run (fast mode), and
    /// palettized ones whose tables are int8 (`QuantizedWeights(int8Table:)`: exactly such int8 weights).
    public enum Int8Compute: Sendable {
        /// On weights dequantized to float at load, like every other model.
        case off
        /// On int8 kernels (each input row quantized to 7 bits on the fly) when the layer is big enough to gain:
        /// at least `QuantizedWeights.autoMinimum` weights, and without VNNI at least
        /// `QuantizedWeights.autoMinimumKWithoutVNNI` input channels. Below that (the first layers of a CNN: few
        /// channels, many pixels) quantizing the input costs more than the int8 products save.
        case auto
        /// On int8 kernels for every eligible layer, palettized ones included (their weights rounded per column
        /// to int8 at load, `QuantizedWeights(floats:)`): about int8's speed and memory for a 4- or 6-bit palette,
        /// at the cost of the activations' rounding on top of the palette's (measured on a model trained by
        /// `mltool train` on datasets/fashion-mnist-small, scored on the 968 test images outside calibration,
        /// 4 bits: -0.52 accuracy points instead of -0.21; 6 bits: top-1 agreement 0.968 instead of
        /// 0.986). `.auto` keeps palettes in float, as Core ML computes them.
        case all
    }

    private let model: Model
    private let program: Program
    private let mode: Mode
    private let threads: Int
    private let lock = NSLock()
    private var original: Program?
    private var plans: [String: PlanEntry] = [:]

    private final class PlanEntry: @unchecked Sendable {
        let plan: Plan
        var arenas: [Arena] = []
        init(plan: Plan) { self.plan = plan }
    }

    /// Validates and compiles `model`'s graph. `threads` 0 uses every core. `int8Compute` (fast mode only): see
    /// `Int8Compute`; nil takes `Engine.int8ComputeDefault`.
    public init(model: Model, threads: Int = 0, mode: Mode = .fast, int8Compute: Int8Compute? = nil) throws {
        guard let graph = model.metadata.graph else { throw EngineError.noGraph }
        self.mode = mode
        self.threads = threads > 0 ? threads : max(1, ProcessInfo.processInfo.activeProcessorCount)
        // The original graph, validated so that errors name its nodes (the reference kernels run it); the fast mode
        // then compiles and packs the optimized graph.
        let checked = try Program(graph: graph, tensors: model.tensorsByName, purpose: mode == .fast ? .validate : .reference)
        // Free dimensions past the batch (an image's height and width, a sequence length) are known only when the
        // graph runs: such graphs have their shapes checked per run, on the real inputs, instead of at a guessed size.
        if checked.inputs.allSatisfy({ !$0.shape.dropFirst().contains(-1) }) {
            _ = try checked.shapes(inputs: Self.shapes(of: checked, batch: 1), steps: Array(checked.steps.indices),
                                   targets: checked.outputs.compactMap { checked.ids[$0] })
        } else {
            for (id, i) in zip(checked.inputIds, checked.inputs) where !Program.fits(i.shape.map { $0 == -1 ? 1 : $0 }) {
                throw EngineError.shapeMismatch(node: checked.names[id], what: "input", expected: "dimensions ≥ 0 whose product fits",
                                                actual: i.shape)
            }
        }
        if mode == .fast {
            let optimized = try GraphPasses.optimize(model)
            program = try Program(graph: optimized.metadata.graph ?? graph, tensors: optimized.tensorsByName,
                                  int8Minimum: Self.int8Minimum(int8Compute ?? Self.int8ComputeDefault))
            self.model = model
            // Weights dequantized to be packed (palettes the CPU does not decode per run, float16) are freed
            // between the packed copies, which glibc then places in the heap: their holes stayed resident (6-bit
            // palettes at AVX2: 22 MB of heap for 18.5 MB of packed weights).
            mlk_trim_heap()
        } else {
            program = checked
            self.model = model
            original = checked
        }
    }

    /// How int8 models run unless told otherwise: the environment variable `MLTOOL_INT8_COMPUTE` (`off`, `auto` or
    /// `all`) when set, else `.auto` when the kernels run at AVX2 or above (vpmaddubsw, AVX-VNNI or AVX-512 VNNI) and
    /// `.off` on the portable level, whose int8 kernel is no faster than its float one.
    public static var int8ComputeDefault: Int8Compute {
        switch ProcessInfo.processInfo.environment["MLTOOL_INT8_COMPUTE"] {
        case "off", "0": return .off
        case "auto", "1": return .auto
        case "all": return .all
        default: return mlk_cpu_has(Int32(MLK_CPU_AVX2)) != 0 ? .auto : .off
        }
    }

    /// The CPU level the kernels run at (see CMLToolCPU): "portable", "avx2", "avx2-vnni", "avx512" or "avx512-vnni" —
    /// the best this CPU has, or the lower one `MLTOOL_CPU_LEVEL` asks for.
    public static var cpuLevel: String { String(cString: mlk_cpu_level_name(mlk_cpu_level())) }

    /// The fewest weights and input channels a layer needs to run on int8 kernels at the current CPU level; nil:
    /// none does.
    static func int8Minimum(_ c: Int8Compute) -> Program.Int8Minimum? {
        switch c {
        case .off: return nil
        case .auto:
            let vnni = mlk_cpu_has(Int32(MLK_CPU_AVX2_VNNI)) != 0 || mlk_cpu_has(Int32(MLK_CPU_AVX512_VNNI)) != 0
            return Program.Int8Minimum(weights: QuantizedWeights.autoMinimum,
                                       k: vnni ? 1 : QuantizedWeights.autoMinimumKWithoutVNNI)
        case .all: return Program.Int8Minimum(weights: 1, k: 1, palettes: true)
        }
    }

    /// The graph outputs' shapes for a batch of `batch`, by shape inference on the validated graph: nothing runs and
    /// no weights are packed.
    public static func outputShapes(model: Model, batch: Int = 1) throws -> [String: [Int]] {
        guard let graph = model.metadata.graph else { throw EngineError.noGraph }
        let p = try Program(graph: graph, tensors: model.tensorsByName, purpose: .validate)
        let shapes = try p.shapes(inputs: Self.shapes(of: p, batch: batch), steps: Array(p.steps.indices),
                                  targets: p.outputs.compactMap { p.ids[$0] })
        var out: [String: [Int]] = [:]
        for name in p.outputs { if let id = p.ids[name], let s = shapes[id] { out[name] = s } }
        return out
    }

    /// What the fast plan for a batch of `batch` runs, step by step in order: each step's node name, op and kernel,
    /// and whether it runs fused with a neighbour (`Fused`). For tests that check which path an op takes.
    func plannedKernels(batch: Int = 1) throws -> [(node: String, op: Op, kernel: Fast.Kernel, fused: Bool)] {
        let targets = program.outputs.compactMap { program.ids[$0] }
        let plan = try Plan(program: program, inputShapes: Self.shapes(of: program, batch: batch),
                            steps: program.needed(targets), targets: targets, threads: threads)
        return plan.steps.indices.map { pos in
            let s = plan.step(plan.steps[pos], program)
            return (s.name, s.op, plan.kernels[pos], plan.fused.contains(pos) || plan.fused.contains(pos - 1)
                    || plan.residual[pos] != nil || (pos > 0 && plan.residual[pos - 1] != nil)
                    || (max(0, pos - 2)...pos).contains { plan.scaledSoftmax[$0] != nil })
        }
    }

    /// Names of the graph inputs, in order.
    /// Conv and dense layers whose palettized weights stay as indices, decoded as they run (`PaletteWeights`).
    var paletteLayers: Int { program.steps.filter { $0.palette != nil }.count }

    public var inputNames: [String] { program.inputs.map(\.name) }

    /// Names of the graph outputs, in order.
    public var outputNames: [String] { program.outputs }

    /// Input shape with the batch (first dim, -1 in GraphInput) set to `batch`.
    public func inputShape(_ name: String, batch: Int) -> [Int]? {
        guard let i = program.inputs.first(where: { $0.name == name }) else { return nil }
        return i.shape.enumerated().map { $0.element == -1 ? ($0.offset == 0 ? batch : 1) : $0.element }
    }

    private static func shapes(of p: Program, batch: Int) -> [Int: [Int]] {
        var s: [Int: [Int]] = [:]
        for (id, i) in zip(p.inputIds, p.inputs) {
            s[id] = i.shape.enumerated().map { $0.element == -1 ? ($0.offset == 0 ? batch : 1) : $0.element }
        }
        return s
    }

    /// Runs the graph; `outputs` may name any tensor in the graph (e.g. the pooled features): only the nodes it
    /// needs run. nil means the graph outputs.
    public func run(_ inputs: [String: Tensor], outputs: [String]? = nil) throws -> [String: Tensor] {
        let wanted = outputs ?? program.outputs
        let p = try programFor(wanted)
        for name in inputs.keys where !p.inputs.contains(where: { $0.name == name }) {
            throw EngineError.unknownInput(name: name)
        }
        var inShapes: [Int: [Int]] = [:]
        for (id, gi) in zip(p.inputIds, p.inputs) {
            guard let t = inputs[gi.name] else { throw EngineError.missingInput(name: gi.name) }
            guard t.shape.count == gi.shape.count,
                  zip(t.shape, gi.shape).allSatisfy({ $1 == -1 ? $0 >= 0 : $0 == $1 }) else {
                throw EngineError.inputShape(name: gi.name, expected: gi.shape, actual: t.shape)
            }
            if let reason = gi.sizeError(t.shape) { throw EngineError.inputValue(name: gi.name, expected: "a size the source allows", actual: reason) }
            inShapes[id] = t.shape
            if let type = gi.elementType { try Self.checkValues(t, of: gi, type) }
        }
        let targets = wanted.map { p.ids[$0]! }
        let steps = p.needed(targets)
        let values = mode == .reference
            ? try runReference(p, inputs, inShapes, steps, targets)
            : try runFast(p, inputs, inShapes, steps, targets)
        var result: [String: Tensor] = [:]
        for (name, t) in zip(wanted, targets) { result[name] = values[t] }
        return result
    }

    /// Refuses a value of `t` that is not an integer of `type` (input `gi`'s element type): a float given for token
    /// ids or a sample rate would compute something else without a word.
    static func checkValues(_ t: Tensor, of gi: GraphInput, _ type: String) throws {
        guard let range = GraphInput.integerRanges[type] else { return }
        for (i, v) in t.data.enumerated() where v != v.rounded() || !range.contains(Double(v)) {
            throw EngineError.inputValue(name: gi.name, expected: "\(type) values (\(type == "bool" ? "0 or 1" : "integers that \(type) holds")), as the model types the input",
                                         actual: "\(v) at element \(i)")
        }
    }

    /// The compiled graph that has every name in `wanted`; the original one when a pass fused a name away.
    private func programFor(_ wanted: [String]) throws -> Program {
        if wanted.allSatisfy(program.computes) { return program }
        lock.lock(); defer { lock.unlock() }
        if original == nil, let graph = model.metadata.graph {
            original = try Program(graph: graph, tensors: model.tensorsByName, keepsNames: true)
        }
        guard let o = original else { throw EngineError.noGraph }
        for w in wanted where o.ids[w] == nil { throw EngineError.unknownOutput(name: w) }
        for w in wanted where !o.computes(w) { throw EngineError.notComputed(name: w) }
        return o
    }

    private func runReference(_ p: Program, _ inputs: [String: Tensor], _ inShapes: [Int: [Int]], _ steps: [Int],
                              _ targets: [Int]) throws -> [Int: Tensor] {
        let resolution = try p.resolve(inputs: inShapes, values: p.planTimeValues(inputs), steps: steps, targets: targets)
        let shapes = resolution.shapes
        var values = p.constants
        for (id, gi) in zip(p.inputIds, p.inputs) { values[id] = Buffer(inputs[gi.name]!.data) }
        let untaken = Buffer(count: 0)   // an ifElse's branch not taken: never read
        for i in resolution.order {
            let s = resolution.step(i, p)
            let y = Buffer(count: shapes[s.output]!.reduce(1, *))
            Reference.run(s, s.inputs.map { UnsafePointer((values[$0] ?? untaken).pointer) }, s.inputs.map { shapes[$0] ?? [] },
                          y.pointer, shapes[s.output]!)
            values[s.output] = y
        }
        var out: [Int: Tensor] = [:]
        for t in targets { out[t] = Tensor(shape: shapes[t]!, data: values[t]!.array) }
        return out
    }

    /// Whether every image goes through `steps` on its own, so a batch can be split into single images.
    private func separable(_ p: Program, _ inShapes: [Int: [Int]], _ steps: [Int], _ targets: [Int]) -> Bool {
        guard p.inputs.allSatisfy({ $0.shape.first == -1 }) else { return false }
        // Inputs of different batch sizes (one broadcast along the first axis against the other) are not a batch of
        // images: runFast would split by whichever input's size the dictionary gives first.
        guard Set(inShapes.values.map { $0.first ?? 1 }).count == 1 else { return false }
        func withBatch(_ b: Int) -> [Int: [Int]] { inShapes.mapValues { [b] + $0.dropFirst() } }
        guard let one = try? p.shapes(inputs: withBatch(1), steps: steps, targets: targets),
              let two = try? p.shapes(inputs: withBatch(2), steps: steps, targets: targets) else { return false }
        // Values that hold the batch size (a `shape` reading axis 0, and plan-time values computed from it): a chunk
        // sees its own, which is right for a reshape's or expand's target and wrong anywhere else.
        var batchSized = Set<Int>()
        for i in steps {
            let s = p.steps[i]
            if s.op == .shape && (s.perm ?? [0]).contains(0) { batchSized.insert(s.output) }
            if let k = s.inputs.firstIndex(where: batchSized.contains) {
                if Program.planTimeOps.contains(s.op) && !([.reshape, .expand].contains(s.op) && k == 1) {
                    batchSized.insert(s.output)
                } else if !([.reshape, .expand].contains(s.op) && k == 1 && !batchSized.contains(s.inputs[0])) {
                    return false
                }
            }
            guard let a = one[s.output], let b = two[s.output], a.first == 1, b == [2] + a.dropFirst() else { return false }
            let rank = a.count
            switch s.op {
            case .transpose: if (s.perm ?? [rank - 1]).first != 0 { return false }
            case .softmax, .concat, .topK, .logSoftmax, .hardmax, .argMax, .layerNorm:
                if (try? Program.axis(s.axis ?? -1, rank: rank, s)) == 0 { return false }
            case .gather:
                // Picking along the batch axis of a computed tensor mixes images (a table's rows are not a batch).
                let dataRank = one[s.inputs[0]]?.count ?? rank
                if (try? Program.axis(s.axis ?? 0, rank: dataRank, s)) == 0, p.constants[s.inputs[0]] == nil { return false }
            case .reduce: if (try? Program.reducedAxes(s, rank: rank))?.contains(0) ?? true { return false }
            case .slice: if s.slices.contains(where: { $0.axis == 0 || $0.axis == -rank }) { return false }
            case .lstm, .gru, .rnn: return false   // the first axis is time (or the direction of a state)
            case .ifElse: return false   // one condition for the whole batch (it may be computed from every image)
            case .quantize, .dequantize:   // scales along the batch axis differ per image
                if let a = s.linearQuant?.axis, (try? Program.axis(a, rank: rank, s)) == 0 { return false }
                if s.linearQuant?.dynamic == true { return false }   // one pair from the whole batch
            default: break
            }
            if s.qweights?.readsDynamicCodes == true { return false }   // the same, absorbed by the layer
        }
        return true
    }

    private func runFast(_ p: Program, _ inputs: [String: Tensor], _ inShapes: [Int: [Int]], _ steps: [Int],
                         _ targets: [Int]) throws -> [Int: Tensor] {
        let batch = inShapes.values.first?.first ?? 1
        // OpenBLAS (matMul, grouped convs) stays single-threaded: its thread count is process-wide, and results
        // must not depend on what another engine or trainer set it to.
        openblas_set_num_threads(1)
        var results: (buffers: [Buffer], shapes: [[Int]])
        if batch > 1 && separable(p, inShapes, steps, targets) {
            // Images go through the plan `per` at a time (`chunkImages` on one thread), the rest one by one.
            let per = threads == 1 ? max(1, min(batch, Self.chunkImages)) : 1
            let whole = batch / per * per
            results = try runChunks(p, inputs, inShapes, steps, targets, per: per, images: 0..<whole, batch: batch, into: nil)
            if whole < batch {
                results = try runChunks(p, inputs, inShapes, steps, targets, per: 1, images: whole..<batch, batch: batch,
                                        into: results.buffers)
            }
        } else {
            results = try runChunks(p, inputs, inShapes, steps, targets, per: 0, images: 0..<1, batch: 1, into: nil)
        }
        var out: [Int: Tensor] = [:]
        for (t, (r, s)) in zip(targets, zip(results.buffers, results.shapes)) { out[t] = Tensor(shape: s, data: r.array) }
        return out
    }

    /// Runs images `images` of the batch through the plan for chunks of `per` images (`per` 0: the inputs as
    /// they are, not split), the chunks spread over the threads, into `results` (the whole batch's outputs per
    /// target: made when nil); returns them and their shapes.
    private func runChunks(_ p: Program, _ inputs: [String: Tensor], _ inShapes: [Int: [Int]], _ steps: [Int],
                           _ targets: [Int], per: Int, images: Range<Int>, batch: Int,
                           into results: [Buffer]?) throws -> (buffers: [Buffer], shapes: [[Int]]) {
        let split = per > 0
        let chunks = split ? images.count / per : 1
        let chunkShapes = split ? inShapes.mapValues { [per] + $0.dropFirst() } : inShapes
        let workers = min(threads, chunks)
        let values = p.planTimeValues(inputs)
        let key = "\(p.steps.count == program.steps.count ? "main" : "original")|\(chunkShapes.sorted { $0.key < $1.key })|\(targets)"
            + "|\(values.sorted { $0.key < $1.key })"
        let described = chunkShapes.sorted { $0.key < $1.key }.map { "'\(p.names[$0.key])' \($0.value)" }.joined(separator: ", ")
        let (entry, arenas) = try takeArenas(key, workers, p, describing: described) {
            try Plan(program: p, inputShapes: chunkShapes, inputValues: values, steps: steps, targets: targets, threads: threads)
        }
        defer { lock.lock(); entry.arenas += arenas; lock.unlock() }
        let plan = entry.plan
        let unit = max(per, 1)

        // Outputs for the whole batch; constants are copied as they are.
        let buffers = results ?? targets.map { t -> Buffer in
            let s = plan.shapes[t]!
            return Buffer(count: (split ? [batch] + s.dropFirst() : s).reduce(1, *))
        }
        let program = p
        let intra = workers > 1 ? 1 : threads
        let first = images.lowerBound
        // A worker running several chunks would decode every palettized layer again for each: they are decoded once
        // for the call instead (on all threads), into memory freed when it returns (a float copy's size, for the
        // call's duration). EfficientNet-Lite0, 4 bits, batch 32, 2 threads, Zen 3 (AVX2), eight alternating rounds:
        // 0.925× float before, 1.03× after (median ratios).
        let began = StepProfile.enabled ? DispatchTime.now().uptimeNanoseconds : 0
        let decoded = chunks > workers ? arenas[0].decodedSteps(threads: threads) : nil
        if StepProfile.enabled && decoded != nil {
            StepProfile.add("palettes decoded for the call", Double(DispatchTime.now().uptimeNanoseconds &- began) / 1e9)
        }
        let work: @Sendable (Int) -> Void = { w in
            let arena = arenas[w]
            var c = w
            while c < chunks {
                // Images [i, i + unit) of the batch.
                let i = first &+ c &* unit
                for (id, gi) in zip(program.inputIds, program.inputs) {
                    let n = plan.shapes[id]!.reduce(1, *) / unit
                    inputs[gi.name]!.data.withUnsafeBufferPointer {
                        if let base = $0.baseAddress, n > 0 {
                            arena.pointer(id, plan, program).update(from: base + i &* n, count: unit &* n)
                        }
                    }
                }
                arena.run(plan, program, threads: intra, decoded: decoded?.steps)
                for (t, r) in zip(targets, buffers) {
                    let n = plan.shapes[t]!.reduce(1, *) / unit
                    (r.pointer + i &* n).update(from: arena.pointer(t, plan, program), count: unit &* n)
                }
                c += workers
            }
        }
        // One worker runs on this thread: inside concurrentPerform, the ops' own parallel loops would run serially.
        // The others run at this thread's kernel level (a test's mlk_set_thread_cpu_level), as WorkerPool's helpers do.
        if workers == 1 { work(0) } else {
            let level = mlk_thread_cpu_level()
            DispatchQueue.concurrentPerform(iterations: workers) { w in
                let own = mlk_set_thread_cpu_level(level)
                defer { _ = mlk_set_thread_cpu_level(own) }
                work(w)
            }
        }
        return (buffers, targets.map { t in split ? [batch] + plan.shapes[t]!.dropFirst() : plan.shapes[t]! })
    }

    /// Images the one worker of a single-threaded engine runs through the plan at once when a batch splits into
    /// images: 4 reuse each layer's weights (and a palettized layer's decoding) across 4 images while the
    /// activations still fit the caches. Measured on EfficientNet-Lite0, batch 32 (Zen 4, 2 vCPUs): 1 thread, 1
    /// image → 4: float +5%, 4-bit palette +7% (8 and 16 gain less); 2 threads (a worker per thread, each image on
    /// its own): 4 per worker −5% for float, ±0 for palettes (the two workers' activations then compete for L3 and
    /// memory), so there each worker keeps to one image. `MLTOOL_CHUNK=n` sets it (for measuring).
    static let chunkImages = Int(ProcessInfo.processInfo.environment["MLTOOL_CHUNK"] ?? "") ?? 4

    /// Takes `count` arenas for the plan under `key` (building the plan and arenas when missing).
    private func takeArenas(_ key: String, _ count: Int, _ p: Program, describing inputs: String,
                            _ make: () throws -> Plan) throws -> (PlanEntry, [Arena]) {
        lock.lock(); defer { lock.unlock() }
        let entry: PlanEntry
        if let e = plans[key] {
            entry = e
        } else {
            let plan = try make()
            // Refused before anything is allocated (an allocation that fails would end the process): a file can
            // declare input sizes no machine holds.
            let floats = plan.arenaFloats.addingReportingOverflow(plan.scratch)
            let bytes = floats.overflow ? nil : floats.partialValue.multipliedReportingOverflow(by: 4)
            let available = Int(clamping: ProcessInfo.processInfo.physicalMemory)
            if bytes == nil || bytes!.overflow || bytes!.partialValue > available {
                throw EngineError.tooLarge(inputs: inputs, bytes: bytes.flatMap { $0.overflow ? nil : $0.partialValue }, available: available)
            }
            entry = PlanEntry(plan: plan)
            plans[key] = entry
        }
        var taken: [Arena] = []
        while taken.count < count {
            taken.append(entry.arenas.popLast() ?? Arena(plan: entry.plan, program: p))
        }
        return (entry, taken)
    }
}
