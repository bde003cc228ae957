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

    /// `keepsNames`: no fusion that takes a tensor out of the graph's computed values (`fuseGELUs`), for a run asking
    /// for intermediate tensors by name.
    init(graph: Graph, tensors: [String: StoredTensor], int8Minimum: Int8Minimum? = nil, purpose: Purpose = .fast,
         keepsNames: Bool = false) throws {
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
        if !keepsNames { fuseGELUs() }
        // Every weight is now copied or packed: the model file's pages go back to the kernel
        // (`TensorBytes.releasePages`), also those that reading the small tensors (biases) mapped around them.
        for t in tensors.values { t.bytes.releasePages() }
        for o in graph.outputs where ids[o] == nil { throw EngineError.unknownOutput(name: o) }
    }

    mutating func define(_ name: String) -> Int {
        if let id = ids[name] { return id }
        ids[name] = names.count
        names.append(name)
        return names.count - 1
    }

    /// The id of `name` as read by `node`: an earlier value, or a model tensor (loaded as a constant).
    mutating func use(_ name: String, _ node: Node, _ tensors: [String: StoredTensor]) throws -> Int {
        if let id = ids[name] { return id }
        guard let t = tensors[name] else { throw EngineError.unknownTensor(node: node.name, tensor: name) }
        let id = define(name)
        constants[id] = Buffer(try load(t, node))
        constantShapes[id] = t.shape
        return id
    }

    /// `t`'s values as floats; the file pages they were read from go back to the kernel (`TensorBytes.releasePages`).
    func load(_ t: StoredTensor, _ node: Node) throws -> [Float] {
        do {
            let v = try t.floats()
            t.bytes.releasePages()
            return v
        } catch {
            throw EngineError.badWeights(node: node.name, tensor: t.name, reason: "\(error)")
        }
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
