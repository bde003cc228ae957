import CMLToolCPU
import Foundation
import MLToolCore
import MLToolEngine
import Testing

/// Builds small random models for the engine tests: seeded weights, NHWC input, one call per layer.
struct GraphBuilder {
    var rng: SplitMix64
    var nodes: [Node] = []
    var tensors: [StoredTensor] = []
    var inputs: [GraphInput]
    var counter = 0

    init(seed: UInt64, input: [Int], name: String = "x") {
        rng = SplitMix64(seed: seed)
        inputs = [GraphInput(name: name, shape: input)]
    }

    mutating func fresh(_ base: String) -> String { counter += 1; return "\(base)\(counter)" }

    /// Uniform values in [lo, hi).
    mutating func values(_ n: Int, _ lo: Float = -1, _ hi: Float = 1) -> [Float] {
        (0..<n).map { _ in lo + (hi - lo) * rng.nextUnit() }
    }

    mutating func constant(_ shape: [Int], _ lo: Float = -1, _ hi: Float = 1, name: String? = nil) -> String {
        let n = name ?? fresh("t")
        tensors.append(StoredTensor(name: n, tensor: Tensor(shape: shape, data: values(shape.reduce(1, *), lo, hi))))
        return n
    }

    @discardableResult
    mutating func node(_ op: Op, _ inputs: [String], _ attrs: Attributes = Attributes(), name: String? = nil) -> String {
        let n = name ?? fresh(op.rawValue)
        nodes.append(Node(name: n, op: op, inputs: inputs, outputs: [n + ":0"], attributes: attrs))
        return n + ":0"
    }

    /// A conv with random weights (scaled so activations stay near 1) and bias.
    mutating func conv(_ x: String, cin: Int, cout: Int, k: (Int, Int), stride: Int = 1, dilation: Int = 1,
                       pads: [Int]? = nil, groups: Int = 1, bias: Bool = true, act: Activation? = nil) -> String {
        let scale = 1 / Float(k.0 * k.1 * cin / groups).squareRoot() * 1.7
        let w = constant([k.0, k.1, cin / groups, cout], -scale, scale)
        var ins = [x, w]
        if bias { ins.append(constant([cout], -0.2, 0.2)) }
        return node(.conv, ins, Attributes(strides: [stride, stride], dilations: [dilation, dilation],
                                           pads: pads ?? [0, 0, 0, 0], groups: groups, activation: act))
    }

    /// "Same" padding for stride s, kernel k on size n (TensorFlow rule: the extra pixel goes at the end).
    static func samePads(_ n: Int, k: Int, s: Int) -> [Int] {
        let out = (n + s - 1) / s
        let total = max((out - 1) * s + k - n, 0)
        return [total / 2, total - total / 2]
    }

    mutating func batchNorm(_ x: String, _ c: Int) -> String {
        let ins = [x, constant([c], 0.5, 1.5), constant([c], -0.3, 0.3), constant([c], -0.3, 0.3), constant([c], 0.5, 2)]
        return node(.batchNorm, ins, Attributes(epsilon: 1e-3))
    }

    mutating func dense(_ x: String, _ n: Int, _ m: Int, act: Activation? = nil) -> String {
        let s = 1 / Float(n).squareRoot()
        return node(.dense, [x, constant([n, m], -s, s), constant([m], -0.1, 0.1)], Attributes(activation: act))
    }

    func model(outputs: [String]) -> Model {
        var meta = ModelMetadata(task: .network, graph: Graph(inputs: inputs, outputs: outputs, nodes: nodes))
        meta.name = "test"
        return Model(metadata: meta, tensors: tensors)
    }

    /// A random input for `shape`.
    mutating func input(_ shape: [Int]) -> Tensor { Tensor(shape: shape, data: values(shape.reduce(1, *))) }
}

/// Fast-path tolerance (as rtol and atol of `assertClose`): float sums in a different order (GEMM blocking, FMA)
/// differ by a few ulps per term.
let fastTolerance = 1e-4

/// Runs `model` in both modes and returns (fast, reference) outputs for `outputs`.
func bothModes(_ model: Model, _ inputs: [String: Tensor], outputs: [String]? = nil, threads: Int = 1) throws
    -> ([String: Tensor], [String: Tensor]) {
    let fast = try Engine(model: model, threads: threads, mode: .fast)
    let ref = try Engine(model: model, threads: 1, mode: .reference)
    return (try fast.run(inputs, outputs: outputs), try ref.run(inputs, outputs: outputs))
}

/// Runs `body` at every CPU level this machine has (CMLToolCPU: portable C, AVX2, AVX-VNNI, AVX-512, AVX-512 VNNI), this
/// thread's own level set to each in turn (the engine's workers take it for this thread's work; the rest of the
/// process keeps its level), then restored; returns the levels run.
/// It prints, by name, the levels it ran and those this machine lacks. A level named in MLTOOL_EXPECT_CPU_LEVELS
/// (names separated by commas or spaces; `make test` sets it from /proc/cpuinfo with Tests/cpu-levels.sh) that did not
/// run is a test failure, so a level cannot go untested without a word on a machine that has it.
@discardableResult
func forEachCPULevel(sourceLocation: SourceLocation = #_sourceLocation, _ body: (Int32) throws -> Void) rethrows -> [Int32] {
    let start = mlk_set_thread_cpu_level(-1)
    defer { _ = mlk_set_thread_cpu_level(start) }
    var levels: [Int32] = []
    for level in Int32(0)...mlk_cpu_detected() {
        _ = mlk_set_thread_cpu_level(level)
        guard mlk_cpu_level() == level, mlk_cpu_has(level) != 0 else { continue }
        levels.append(level)
        try body(level)
    }
    CPULevels.report(ran: levels, at: sourceLocation)
    return levels
}

/// The CPU levels by name, and what MLTOOL_EXPECT_CPU_LEVELS asks for.
enum CPULevels {
    static let names = (0..<Int32(MLK_CPU_LEVELS)).map { String(cString: mlk_cpu_level_name($0)) }

    /// The levels MLTOOL_EXPECT_CPU_LEVELS names (nil when unset or empty), or the first name that is not a level's.
    static func expected(_ value: String? = ProcessInfo.processInfo.environment["MLTOOL_EXPECT_CPU_LEVELS"]) -> Result<[Int32], Unknown>? {
        let words = (value ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        guard !words.isEmpty else { return nil }
        var levels: [Int32] = []
        for w in words {
            let level = mlk_cpu_level_named(w)
            guard level >= 0 else { return .failure(Unknown(name: w)) }
            levels.append(level)
        }
        return .success(levels)
    }

    struct Unknown: Error, Equatable { let name: String }

    /// Prints the levels run and not run; records an issue for each expected level that did not run.
    static func report(ran: [Int32], at location: SourceLocation) {
        let notRun = names.indices.map(Int32.init).filter { !ran.contains($0) }
        print("CPU levels (\(location.fileName):\(location.line)): ran \(ran.map { names[Int($0)] }.joined(separator: ", ")); "
              + "not on this machine: \(notRun.isEmpty ? "none" : notRun.map { names[Int($0)] }.joined(separator: ", "))")
        switch expected() {
        case nil: break
        case .failure(let unknown)?:
            Issue.record("MLTOOL_EXPECT_CPU_LEVELS names '\(unknown.name)', not a level (\(names.joined(separator: ", ")))",
                         sourceLocation: location)
        case .success(let wanted)?:
            for level in wanted where !ran.contains(level) {
                let best = names[Int(mlk_cpu_detected())]
                Issue.record("CPU level \(names[Int(level)]) is in MLTOOL_EXPECT_CPU_LEVELS but did not run: this machine's kernels report \(best) as the best level",
                             sourceLocation: location)
            }
        }
    }
}
