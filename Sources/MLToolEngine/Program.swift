import CMLToolKernels
import MLToolCore

/// One node, compiled: value ids for its inputs and output, attributes resolved to plain values, weights packed.
/// Conv, dense and batchNorm keep their constant weights in `weight`/`bias` and read only x from `inputs`.
struct Step: Sendable {
    var name: String
    var op: Op
    var inputs: [Int]
    var output: Int
    var kernel = [1, 1], strides = [1, 1], dilations = [1, 1]
    var pads = [0, 0, 0, 0]           // top, left, bottom, right (pad op: 2·rank values)
    var groups = 1
    var act = Act.none
    var axis: Int?
    var axes: [Int]?
    var perm: [Int]?
    var shape: [Int] = []
    var alpha: Float = 0
    var ceilMode = false
    var countIncludePad = false
    var padMode = "constant"
    var value: Float = 0
    /// The function of a `unary` step.
    var unary: UnaryFunction?
    /// unary: the function's second parameter (selu's γ).
    var beta: Float = 0
    /// The function of a `binary` step.
    var binary: BinaryFunction?
    /// The function of a `reduce` step.
    var reduce: ReduceFunction?
    /// argMax: the last of equal extremes instead of the first.
    var selectLast = false
    /// resize: the ONNX Resize settings (see `ResizeSpec`).
    var resize: ResizeSpec?
    /// slice: per sliced axis (IR axes), the first index, the step and the count.
    var slices: [SliceAxis] = []
    /// topK: k, largest first, and whether the output is the indices.
    var k = 0
    var largest = true
    var indicesOut = false
    var weight: Buffer?
    var weightShape: [Int] = []
    var bias: Buffer?
    /// Conv (groups == 1) and dense weights as (K, N) in 16-column panels for `mlk_gemm_packed`.
    var packed: Buffer?
    /// A stride-1 3×3 conv's weights Winograd-transformed (`mlk_winograd_pack`) instead, when `Fast.usesWinograd`.
    var winograd: Buffer?
    /// The same weights kept as int8 for `mlk_qgemm`, when they are stored that way and int8 compute is on (then
    /// `packed` is nil).
    var qweights: QuantizedWeights?
    /// A QDQ file's depthwise conv on its integers (`QuantizedDepthwise`), when `readInputCodes` finds its codes.
    var qdepthwise: QuantizedDepthwise?
    /// Palettized weights kept as their indices and decoded into `packed` form just before the step runs (each
    /// arena's copy of the step points `packed` at its decode buffer; here `packed` is nil).
    var palette: PaletteWeights?
    /// lstm, gru, rnn: the layer's weights and settings.
    var recurrent: RecurrentSpec?
    /// convTranspose: rows and columns added at the end of the output (ONNX output_padding).
    var outputPadding = [0, 0]
    /// layerNorm: ε added to the variance.
    var epsilon: Float = 0
    /// layerNorm: the statistic given instead of the normalised values ("mean", "invStdDev"), or nil.
    var statistic: String?
    /// conv, maxPool, avgPool: "SAME_UPPER" or "SAME_LOWER" when the pads follow from the input size (resolved into
    /// `pads` per plan: `Program.resolve`).
    var autoPad: String?
    /// slice with ONNX-style bounds: resolved into `slices` per plan.
    var bounds: [SliceBound]?
    /// ifElse: the input (1 or 2) a plan-time condition takes; nil when the condition is known only at run time.
    var chosen: Int?
    /// quantize, dequantize: scales, zero points and code range.
    var linearQuant: LinearQuant?
}

/// A graph compiled for execution: values (graph inputs, constants, node outputs) by id, and the steps in order.
struct Program: Sendable {
    var names: [String] = []
    var ids: [String: Int] = [:]
    /// Constant values (model tensors read by nodes), dequantized once.
    var constants: [Int: Buffer] = [:]
    var constantShapes: [Int: [Int]] = [:]
    var inputs: [GraphInput] = []
    var inputIds: [Int] = []
    var outputs: [String] = []
    var steps: [Step] = []
    /// The step producing each value, if any.
    var producer: [Int: Int] = [:]
    let int8Minimum: Int8Minimum?
    let purpose: Purpose
    /// Conv and dense nodes that read a QDQ pair's codes (`codeReaders`): int8 whatever their size.
    var codeReaders: Set<String> = []
    /// Of those, the ones reading a dynamic quantization (`readDynamicCodes`): int8 only where their sums are exact,
    /// else float on the dequantized weights (the same arithmetic).
    var dynamicReaders: Set<String> = []

    /// Which layers run on int8 kernels: at least `weights` weights (k · n) and `k` input channels; palettized ones
    /// too when `palettes`.
    struct Int8Minimum: Equatable { var weights: Int, k: Int, palettes = false }

    /// `int8Minimum`: conv (groups == 1) and dense layers with at least that many weights and input channels, stored as symmetric
    /// per-channel int8, run on int8 kernels (see `QuantizedWeights`); otherwise (and when nil) every weight is
    /// dequantized to float.
    /// What a program is built for: `fast` loads and packs the weights; `reference` loads them unpacked for the
    /// scalar kernels; `validate` only checks the graph (shapes, attributes, tensors), reading no conv or dense
    /// weight values.
    enum Purpose { case fast, reference, validate }

    init(graph: Graph, tensors: [String: StoredTensor], int8Minimum: Int8Minimum? = nil, purpose: Purpose = .fast) throws {
        self.int8Minimum = int8Minimum
        self.purpose = purpose
        inputs = graph.inputs
        outputs = graph.outputs
        for i in graph.inputs { inputIds.append(define(i.name)) }
        (codeReaders, dynamicReaders) = Self.codeReaders(graph)
        for node in graph.nodes { steps.append(try compile(node, tensors)) }
        for (i, s) in steps.enumerated() { producer[s.output] = i }
        readInputCodes()
        storeCodes()
        // Every weight is now copied or packed: the model file's pages go back to the kernel
        // (`TensorBytes.releasePages`), also those that reading the small tensors (biases) mapped around them.
        for t in tensors.values { t.bytes.releasePages() }
        for o in graph.outputs where ids[o] == nil { throw EngineError.unknownOutput(name: o) }
    }

    private mutating func define(_ name: String) -> Int {
        if let id = ids[name] { return id }
        ids[name] = names.count
        names.append(name)
        return names.count - 1
    }

    /// The id of `name` as read by `node`: an earlier value, or a model tensor (loaded as a constant).
    private mutating func use(_ name: String, _ node: Node, _ tensors: [String: StoredTensor]) throws -> Int {
        if let id = ids[name] { return id }
        guard let t = tensors[name] else { throw EngineError.unknownTensor(node: node.name, tensor: name) }
        let id = define(name)
        constants[id] = Buffer(try load(t, node))
        constantShapes[id] = t.shape
        return id
    }

    /// `t`'s values as floats; the file pages they were read from go back to the kernel (`TensorBytes.releasePages`).
    private func load(_ t: StoredTensor, _ node: Node) throws -> [Float] {
        do {
            let v = try t.floats()
            t.bytes.releasePages()
            return v
        } catch {
            throw EngineError.badWeights(node: node.name, tensor: t.name, reason: "\(error)")
        }
    }

    private mutating func compile(_ node: Node, _ tensors: [String: StoredTensor]) throws -> Step {
        let a = node.attributes
        func need<T>(_ v: T?, _ attr: String) throws -> T {
            guard let v else { throw EngineError.missingAttribute(node: node.name, op: node.op.rawValue, attribute: attr) }
            return v
        }
        func pair(_ v: [Int]?, _ attr: String, default d: [Int]?, minimum: Int) throws -> [Int] {
            let v = v ?? d
            guard let v else { throw EngineError.missingAttribute(node: node.name, op: node.op.rawValue, attribute: attr) }
            guard v.count == 2, v.allSatisfy({ $0 >= minimum && $0 <= Self.maxExtent }) else {
                throw EngineError.invalidAttribute(node: node.name, attribute: attr, expected: "2 values in \(minimum)…\(Self.maxExtent)", actual: "\(v)")
            }
            return v
        }
        func pads(_ v: [Int], count: Int?, minimum: Int) throws -> [Int] {
            guard count.map({ v.count == $0 }) ?? true, v.allSatisfy({ $0 >= minimum && $0 <= Self.maxExtent }) else {
                throw EngineError.invalidAttribute(node: node.name, attribute: "pads", expected: "\(count.map(String.init) ?? "2·rank") values in \(minimum)…\(Self.maxExtent)", actual: "\(v)")
            }
            return v
        }
        func inputCount(_ range: ClosedRange<Int>) throws {
            guard range.contains(node.inputs.count) else {
                throw EngineError.invalidAttribute(node: node.name, attribute: "inputs", expected: "\(range.lowerBound)…\(range.upperBound) inputs", actual: "\(node.inputs.count)")
            }
        }
        /// The weight tensor `index` of the node, checked to be a model tensor of rank `rank`.
        func weightTensor(_ index: Int, rank: Int) throws -> StoredTensor {
            let name = node.inputs[index]
            guard let t = tensors[name], ids[name] == nil || constants[ids[name]!] != nil else {
                throw EngineError.badWeights(node: node.name, tensor: name, reason: "must be a model tensor")
            }
            guard t.shape.count == rank, t.shape.allSatisfy({ $0 > 0 }) else {
                throw EngineError.badWeights(node: node.name, tensor: name, reason: "shape \(t.shape), expected rank \(rank)")
            }
            return t
        }
        func weight(_ index: Int, rank: Int) throws -> (Buffer, [Int]) {
            let t = try weightTensor(index, rank: rank)
            return (Buffer(try load(t, node)), t.shape)
        }
        /// A conv or dense weight (k, n): int8-packed when `quantized` takes it, else loaded (and packed for a GEMM
        /// when `gemm`); nothing is read when only validating.
        func gemmWeight(_ t: StoredTensor, k: Int, n: Int, gemm: Bool) throws {
            if purpose == .validate { return }
            if gemm, let q = quantized(t, k: k, n: n, readsCodes: codeReaders.contains(node.name)),
               q.takesEightBitCodes || !dynamicReaders.contains(node.name) {
                s.qweights = q
                t.bytes.releasePages()
                return
            }
            // Fast mode reads only the packed form: float32 weights are packed straight from their stored
            // (memory-mapped) bytes, with no copy in between.
            // A one-channel 1 → 1 conv is depthwise by shape and runs the depthwise kernel on float weights.
            let depthwiseShaped = t.shape.count == 4 && t.shape[2] == 1 && t.shape[3] == 1
            // Palettes stay as their indices (decoded per run: `PaletteWeights`) where the CPU decodes them quickly,
            // except Winograd's transformed weights. Elsewhere they are decoded once, straight into the GEMM's
            // panels (the same floats as their dequantization): a dequantized copy packed and freed left the heap
            // with holes, 6-bit EfficientNet-Lite0 forced to AVX2 peaking at 125% of float's memory.
            if gemm && purpose == .fast && !depthwiseShaped && !Fast.usesWinograd(s), t.dtype.traits.isPalette,
               let p = PaletteWeights(t, k: k, n: n) {
                if PaletteWeights.keepsIndices(bits: t.dtype.traits.bits) {
                    s.palette = p   // with a copy of the indices
                } else {
                    let packed = Buffer(uninitialized: p.packedCount)
                    p.unpack(panels: 0, p.panels, into: packed.pointer)
                    s.packed = packed
                }
                t.bytes.releasePages()
                return
            }
            if gemm && purpose == .fast && !depthwiseShaped, let stored = Self.storedFloats(t, count: k &* n) {
                packForFast(stored, k: k, n: n)
                t.bytes.releasePages()   // packed: the file's pages are not read again
                return
            }
            let w = Buffer(try load(t, node))
            if gemm && purpose == .fast {
                packForFast(w.pointer, k: k, n: n)
                // Fast mode reads only the packed form: the dequantized floats (palettes, float16) are dropped once
                // packed, as float32 weights are never copied. A one-channel conv (depthwise by shape) keeps them.
                if !depthwiseShaped { return }
            }
            s.weight = w
        }
        /// The GEMM's packed weights, or a stride-1 3×3 conv's Winograd-transformed ones.
        func packForFast(_ w: UnsafePointer<Float>, k: Int, n: Int) {
            if Fast.usesWinograd(s) {
                let c = s.weightShape[2]
                let tmp = Buffer(uninitialized: c &* n)
                let u = Buffer(uninitialized: Int(mlk_winograd_packed_count(Int64(c), Int64(n))))
                mlk_winograd_pack(w, Int64(c), Int64(n), tmp.pointer, u.pointer)
                s.winograd = u
            } else {
                s.packed = Self.pack(w, k: k, n: n)
            }
        }
        guard node.outputs.count == 1 else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "outputs", expected: "1 output", actual: "\(node.outputs.count)")
        }
        guard !node.inputs.isEmpty else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "inputs", expected: "at least 1", actual: "0")
        }
        var s = Step(name: node.name, op: node.op, inputs: [], output: 0)
        guard let act = Act(a.activation) else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "activation", expected: "an activation op", actual: a.activation!.op.rawValue)
        }
        s.act = act
        switch node.op {
        case .conv:
            try inputCount(2...3)
            let wt = try weightTensor(1, rank: 4)
            s.weightShape = wt.shape
            s.strides = try pair(a.strides, "strides", default: [1, 1], minimum: 1)
            s.dilations = try pair(a.dilations, "dilations", default: [1, 1], minimum: 1)
            s.pads = try pads(a.pads ?? [0, 0, 0, 0], count: 4, minimum: 0)
            s.autoPad = try Self.autoPad(a, node)
            s.groups = a.groups ?? 1
            let oc = s.weightShape[3]
            guard s.groups >= 1, oc % s.groups == 0 else {
                throw EngineError.invalidAttribute(node: node.name, attribute: "groups", expected: "≥ 1 dividing \(oc) output channels", actual: "\(s.groups)")
            }
            s.kernel = [s.weightShape[0], s.weightShape[1]]
            if let k = a.kernel, k != s.kernel {
                throw EngineError.invalidAttribute(node: node.name, attribute: "kernel", expected: "\(s.kernel) (from the weights)", actual: "\(k)")
            }
            if node.inputs.count == 3 { s.bias = try bias(node, 2, count: oc, tensors) }
            try gemmWeight(wt, k: s.weightShape[0] * s.weightShape[1] * s.weightShape[2], n: oc, gemm: s.groups == 1)
            if s.groups > 1, purpose == .fast, int8Minimum != nil, codeReaders.contains(node.name) {
                s.qdepthwise = QuantizedDepthwise(wt)
            }
        case .convTranspose:
            try inputCount(2...3)
            let wt = try weightTensor(1, rank: 4)   // (C, KH, KW, OC/groups)
            s.weightShape = wt.shape
            s.strides = try pair(a.strides, "strides", default: [1, 1], minimum: 1)
            s.dilations = try pair(a.dilations, "dilations", default: [1, 1], minimum: 1)
            s.pads = try pads(a.pads ?? [0, 0, 0, 0], count: 4, minimum: 0)
            s.outputPadding = try pair(a.outputPadding, "outputPadding", default: [0, 0], minimum: 0)
            s.groups = a.groups ?? 1
            let c = wt.shape[0]
            guard s.groups >= 1, c % s.groups == 0 else {
                throw EngineError.invalidAttribute(node: node.name, attribute: "groups", expected: "≥ 1 dividing \(c) input channels", actual: "\(s.groups)")
            }
            s.kernel = [wt.shape[1], wt.shape[2]]
            if let k = a.kernel, k != s.kernel {
                throw EngineError.invalidAttribute(node: node.name, attribute: "kernel", expected: "\(s.kernel) (from the weights)", actual: "\(k)")
            }
            // Every product of the weight's dimensions fits: the tensor holds them all.
            if node.inputs.count == 3 { s.bias = try bias(node, 2, count: wt.shape[3] &* s.groups, tensors) }
            if purpose != .validate {
                let w = Buffer(try load(wt, node))
                // groups == 1 runs as one GEMM x (H·W, C) · w (C, KH·KW·OC) into columns (`Fast.convTranspose`).
                if purpose == .fast && s.groups == 1 {
                    s.packed = Self.pack(w.pointer, k: c, n: wt.shape[1] &* wt.shape[2] &* wt.shape[3])
                } else {
                    s.weight = w
                }
            }
        case .layerNorm:
            try inputCount(1...3)
            s.axis = a.axis ?? -1
            s.epsilon = a.epsilon ?? 1e-5
            guard s.epsilon >= 0, s.epsilon.isFinite else {
                throw EngineError.invalidAttribute(node: node.name, attribute: "epsilon", expected: "a finite value ≥ 0", actual: "\(s.epsilon)")
            }
            if node.inputs.count >= 2 {
                let (w, shape) = try weight(1, rank: 1)
                s.weight = w
                s.weightShape = shape
            }
            if node.inputs.count == 3 { s.bias = try bias(node, 2, count: s.weightShape[0], tensors) }
            switch a.mode {
            case nil, "normalized"?: break
            case "mean"?, "invStdDev"?: s.statistic = a.mode
            default:
                throw EngineError.invalidAttribute(node: node.name, attribute: "mode", expected: "normalized, mean or invStdDev", actual: a.mode ?? "")
            }
        case .dense:
            try inputCount(2...3)
            let wt = try weightTensor(1, rank: 2)
            s.weightShape = wt.shape
            if node.inputs.count == 3 { s.bias = try bias(node, 2, count: s.weightShape[1], tensors) }
            try gemmWeight(wt, k: s.weightShape[0], n: s.weightShape[1], gemm: true)
        case .batchNorm:
            try inputCount(5...5)
            var p: [[Float]] = []
            for i in 1...4 { p.append(try weight(i, rank: 1).0.array) }
            let c = p[0].count
            guard p.allSatisfy({ $0.count == c }) else {
                throw EngineError.badWeights(node: node.name, tensor: node.inputs[1], reason: "scale, bias, mean and variance differ in length")
            }
            let eps = a.epsilon ?? 1e-5
            let scale = (0..<c).map { p[0][$0] / (p[3][$0] + eps).squareRoot() }
            s.weight = Buffer(scale)
            s.weightShape = [c]
            s.bias = Buffer((0..<c).map { p[1][$0] - p[2][$0] * scale[$0] })
        case .matMul:
            try inputCount(2...3)
            // A constant (K, N) b (a transformer's projections) runs as a dense layer's weight: packed once for the
            // GEMM, on the int8 kernels where they take it, every row of a (…, M, K) at once.
            if purpose == .fast, ids[node.inputs[1]] == nil, let wt = tensors[node.inputs[1]], wt.shape.count == 2,
               wt.shape.allSatisfy({ $0 > 0 }), !wt.dtype.traits.isPalette {
                s.weightShape = wt.shape
                try gemmWeight(wt, k: wt.shape[0], n: wt.shape[1], gemm: true)
            }
            // A bias (N) rides in the GEMM's epilogue (GraphPasses.fuseMatMulBias); b must then be a constant.
            if node.inputs.count == 3 {
                guard let b = tensors[node.inputs[1]], ids[node.inputs[1]] == nil, b.shape.count == 2 else {
                    throw EngineError.badWeights(node: node.name, tensor: node.inputs[1], reason: "a matMul with a bias needs a constant (K, N) b")
                }
                s.bias = try bias(node, 2, count: b.shape[1], tensors)
            }
        case .batchMatMul: try inputCount(2...2)
        case .relu, .sigmoid, .tanh, .hardSwish, .swish, .identity, .clip, .leakyRelu, .hardSigmoid:
            try inputCount(1...1)
            s.act = Act(op: node.op, min: a.min, max: a.max, alpha: a.alpha, beta: a.beta)!
        case .softmax: try inputCount(1...1); s.axis = a.axis ?? -1
        case .add, .sub, .mul, .div, .pow: try inputCount(2...2)
        case .resize:
            try inputCount(1...1)
            s.resize = try ResizeSpec(node)
        case .slice where a.ends != nil:
            try inputCount([1, 3].contains(node.inputs.count) ? node.inputs.count...node.inputs.count : 1...1)
            s.bounds = try SliceBound.list(a, node)
        case .slice:
            try inputCount(1...1)
            let axes = try need(a.axes, "axes"), starts = try need(a.starts, "starts")
            let steps = try need(a.steps, "steps"), counts = try need(a.counts, "counts")
            guard starts.count == axes.count, steps.count == axes.count, counts.count == axes.count,
                  Set(axes).count == axes.count, steps.allSatisfy({ $0 != 0 && abs($0) <= Self.maxExtent }),
                  counts.allSatisfy({ $0 >= 0 }), starts.allSatisfy({ $0 >= 0 }) else {
                throw EngineError.invalidAttribute(node: node.name, attribute: "axes/starts/steps/counts",
                                                   expected: "one start ≥ 0, non-zero step and count ≥ 0 per distinct axis",
                                                   actual: "axes \(axes), starts \(starts), steps \(steps), counts \(counts)")
            }
            s.slices = axes.indices.map { SliceAxis(axis: axes[$0], start: starts[$0], step: steps[$0], count: counts[$0]) }
        case .topK:
            try inputCount(1...1)
            s.axis = a.axis ?? -1
            s.k = try need(a.k, "k")
            s.largest = a.largest ?? true
            guard s.k >= 0 else {
                throw EngineError.invalidAttribute(node: node.name, attribute: "k", expected: "≥ 0", actual: "\(s.k)")
            }
            switch a.mode ?? "values" {
            case "values": s.indicesOut = false
            case "indices": s.indicesOut = true
            default:
                throw EngineError.invalidAttribute(node: node.name, attribute: "mode", expected: "values or indices", actual: a.mode ?? "")
            }
        case .maxPool, .avgPool:
            try inputCount(1...1)
            s.kernel = try pair(a.kernel, "kernel", default: nil, minimum: 1)
            s.strides = try pair(a.strides, "strides", default: [1, 1], minimum: 1)
            s.dilations = try pair(a.dilations, "dilations", default: [1, 1], minimum: 1)
            s.pads = try pads(a.pads ?? [0, 0, 0, 0], count: 4, minimum: 0)
            s.autoPad = try Self.autoPad(a, node)
            s.ceilMode = a.ceilMode ?? false
            s.countIncludePad = a.countIncludePad ?? false
        case .globalAvgPool, .globalMaxPool: try inputCount(1...1)
        case .concat: s.axis = try need(a.axis, "axis")
        case .reshape:
            try inputCount(1...2)
            if node.inputs.count == 1 { s.shape = try need(a.shape, "shape") }
        case .shape: try inputCount(1...1); s.perm = a.perm
        case .expand: try inputCount(2...2)
        case .flatten: try inputCount(1...1); s.axis = a.axis ?? 1
        case .transpose: try inputCount(1...1); s.perm = a.perm
        case .squeeze: try inputCount(1...1); s.axes = a.axes
        case .unsqueeze: try inputCount(1...1); s.axes = try need(a.axes, "axes")
        case .pad:
            try inputCount(1...1)
            s.pads = try pads(try need(a.pads, "pads"), count: nil, minimum: -Self.maxExtent)
            s.padMode = a.mode ?? "constant"
            s.value = a.value ?? 0
            guard ["constant", "reflect", "edge"].contains(s.padMode) else {
                throw EngineError.invalidAttribute(node: node.name, attribute: "mode", expected: "constant, reflect or edge", actual: s.padMode)
            }
        case .unary:
            try inputCount(1...1)
            s.unary = try Self.function(UnaryFunction.self, a.mode, node)
            s.alpha = a.alpha ?? 0
            s.beta = a.beta ?? 0
        case .binary:
            try inputCount(2...2)
            s.binary = try Self.function(BinaryFunction.self, a.mode, node)
        case .where: try inputCount(3...3)
        case .ifElse: try inputCount(2...3)
        case .quantize, .dequantize: try inputCount(1...1); s.linearQuant = try LinearQuant(node)
        case .reduce:
            try inputCount(1...1)
            s.reduce = try Self.function(ReduceFunction.self, a.mode, node)
            s.axes = a.axes
        case .argMax:
            try inputCount(1...1)
            s.axis = a.axis ?? 0
            s.largest = a.largest ?? true
            s.selectLast = a.selectLastIndex ?? false
        case .logSoftmax, .hardmax: try inputCount(1...1); s.axis = a.axis ?? -1
        case .gather: try inputCount(2...2); s.axis = a.axis ?? 0
        case .lstm, .gru, .rnn:
            s.recurrent = try RecurrentSpec(node) { try weight($0, rank: $1) }
        }
        var dataInputs = [.conv, .dense, .batchNorm, .convTranspose, .layerNorm].contains(node.op) ? Array(node.inputs.prefix(1)) : node.inputs
        if node.op == .matMul { dataInputs = Array(node.inputs.prefix(s.weightShape.isEmpty ? 2 : 1)) }   // b packed above; the bias in `bias`
        // A recurrent layer reads x and its initial states; its weights are in `recurrent`.
        if let r = s.recurrent { dataInputs = [node.inputs[0]] + node.inputs.suffix(r.states.count) }
        s.inputs = try dataInputs.map { try use($0, node, tensors) }
        // Each value has one producer (docs/FORMAT.md rule 12, checked here too for models that never were a file):
        // an output that is also a graph input, a model tensor or another node's output would share its storage
        // (the plan sizes and frees storage per value, and a fused pair's inner value has none).
        guard ids[node.outputs[0]] == nil, tensors[node.outputs[0]] == nil else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "output '\(node.outputs[0])'",
                                               expected: "a name no graph input, model tensor or other node has",
                                               actual: "a name already in use")
        }
        s.output = define(node.outputs[0])
        return s
    }

    /// The function named by a node's `mode` in one of the function tables (`UnaryFunction`, `BinaryFunction`, …).
    static func function<F: RawRepresentable & CaseIterable>(_ type: F.Type, _ mode: String?, _ node: Node) throws -> F
        where F.RawValue == String {
        guard let f = F(rawValue: mode ?? "") else {
            throw EngineError.invalidAttribute(node: node.name, attribute: "mode", expected: F.allCases.map(\.rawValue).joined(separator: ", "),
                                               actual: mode ?? "none")
        }
        return f
    }

    /// `t` packed for the int8 kernels, when int8 compute is on, `t` is big enough and stored in a form they take.
    /// int8 weights as they are stored, and palettes with int8 tables as their exact int8 values (4- and 6-bit ones
    /// kept as indices where the CPU decodes them quickly); other palettes (`.all` only) rounded per column to int8
    /// (`QuantizedWeights(floats:)`).
    private func quantized(_ t: StoredTensor, k: Int, n: Int, readsCodes: Bool = false) -> QuantizedWeights? {
        guard purpose == .fast, let minimum = int8Minimum else { return nil }
        if k &* n < minimum.weights || k < minimum.k {
            // A QDQ file's small layer too (`codeReaders`), where its sums of 8-bit codes stay exact.
            guard readsCodes, t.dtype == .int8, let q = QuantizedWeights(t, k: k, n: n), q.takesEightBitCodes else { return nil }
            return q
        }
        if t.dtype == .int8 { return QuantizedWeights(t, k: k, n: n) }
        if t.dtype.traits.isPalette, let exact = QuantizedWeights(int8Table: t, k: k, n: n, keepIndices: true) { return exact }
        guard minimum.palettes, t.dtype.traits.isPalette, let floats = try? t.floats() else { return nil }
        return floats.withUnsafeBufferPointer { QuantizedWeights(floats: $0, k: k, n: n) }
    }

    /// w (k, n) packed into 16-column panels for `mlk_gemm_packed` (which writes every element, padding included).
    private static func pack(_ w: UnsafePointer<Float>, k: Int, n: Int) -> Buffer {
        let packed = Buffer(uninitialized: Int(mlk_packed_count(Int64(k), Int64(n))))
        mlk_pack(w, Int64(k), Int64(n), packed.pointer)
        return packed
    }

    /// `t`'s `count` float32 values read in place from its stored bytes; nil when it is stored in another form, its
    /// bytes are short or misaligned (then it is loaded, which reports what is wrong).
    private static func storedFloats(_ t: StoredTensor, count expected: Int) -> UnsafePointer<Float>? {
        guard t.dtype == .f32, let count = try? Checked.elementCount(t.shape), count == expected,
              case let (bytes, overflow) = count.multipliedReportingOverflow(by: 4), !overflow, t.bytes.count >= bytes,
              let base = t.bytes.buffer.baseAddress, Int(bitPattern: base) % MemoryLayout<Float>.alignment == 0
        else { return nil }
        return UnsafePointer(base.assumingMemoryBound(to: Float.self))
    }

    private func bias(_ node: Node, _ i: Int, count: Int, _ tensors: [String: StoredTensor]) throws -> Buffer {
        guard let t = tensors[node.inputs[i]] else {
            throw EngineError.badWeights(node: node.name, tensor: node.inputs[i], reason: "must be a model tensor")
        }
        let v = try load(t, node)
        guard v.count == count else {
            throw EngineError.badWeights(node: node.name, tensor: t.name, reason: "\(v.count) values, expected \(count)")
        }
        return Buffer(v)
    }

    /// Cap on kernel sizes, strides, dilations and pads: far above any real network, low enough that no size
    /// computed from them can overflow.
    static let maxExtent = 1 << 20

    /// Whether running this program gives the tensor `name`: an input, a constant or a step's output. A tensor the
    /// compiled steps no longer produce (a layer's float output, absorbed by its requantizing reader) is not.
    func computes(_ name: String) -> Bool {
        guard let id = ids[name] else { return false }
        return producer[id] != nil || constants[id] != nil || inputIds.contains(id)
    }

    /// The steps needed to compute `targets`, in graph order.
    func needed(_ targets: [Int]) -> [Int] {
        var want = Set<Int>(), stack = targets
        while let v = stack.popLast() {
            guard let p = producer[v], want.insert(p).inserted else { continue }
            stack.append(contentsOf: steps[p].inputs)
        }
        return want.sorted()
    }
}
