import Foundation
import MLToolCore
@testable import MLToolEngine
import MLToolTestSupport
import Testing

/// The fast paths a transformer encoder runs (issue 48, item 5) against the scalar reference: matMul of a
/// (…, M, K) activation by a constant (K, N) weight on the packed GEMM and, with int8 weights, on the int8 kernels;
/// erf (the exact GELU's) vectorised, at every CPU level.
@Suite struct EncoderKernelTests {
    static func matMulModel(_ a: [Int], k: Int, n: Int, seed: UInt64) -> (Model, Tensor) {
        var g = GraphBuilder(seed: seed, input: a)
        let w = g.constant([k, n], -0.2, 0.2, name: "w")
        g.node(.matMul, ["x", w], name: "proj")
        return (g.model(outputs: ["proj:0"]), g.input(a))
    }

    /// (a's shape, K, N): a sequence of tokens (batch, seq, hidden) by a projection, and enough work for the
    /// GEMM's thread split.
    static let cases: [([Int], Int, Int)] = [([1, 8, 32], 32, 48), ([2, 5, 64], 64, 16), ([2, 128, 96], 96, 160)]

    @Test(arguments: cases.indices)
    func constantWeightMatMulOnPackedGemm(_ i: Int) throws {
        let (a, k, n) = Self.cases[i]
        let (model, x) = Self.matMulModel(a, k: k, n: n, seed: UInt64(480 + i))
        #expect(try Engine(model: model, threads: 1).plannedKernels().map(\.kernel) == [.packedDense])
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, ["x": x], threads: threads)
            let f = try #require(fast["proj:0"]), r = try #require(ref["proj:0"])
            #expect(r.shape == Array(a.dropLast()) + [n])
            assertClose(f, r, rtol: fastTolerance, atol: fastTolerance, "\(a) · (\(k), \(n)) with \(threads) threads")
        }
    }

    /// An int8 weight (symmetric per column) runs on the int8 kernels, each row of a quantized on the fly: within
    /// the activations' rounding of the reference, which computes on the dequantized weight. Measured worst
    /// |fast − reference| on these rows (|a| < 1, |w| < 0.2, K = 96, each row rounded to 7 bits): 2.3e-2.
    @Test func int8WeightMatMulOnInt8Kernels() throws {
        let (float, x) = Self.matMulModel([2, 128, 96], k: 96, n: 160, seed: 490)
        var model = float
        model.tensors = try model.tensors.map { try int8Weights($0) }
        let engine = try Engine(model: model, threads: 2, int8Compute: .all)
        #expect(try engine.plannedKernels().map(\.kernel) == [.quantizedDense])
        let fast = try #require(try engine.run(["x": x])["proj:0"])
        let ref = try #require(try Engine(model: model, threads: 1, mode: .reference).run(["x": x])["proj:0"])
        #expect(fast.shape == [2, 128, 160])
        assertClose(fast, ref, atol: 3e-2, "int8 matMul against the reference on the dequantized weight")
    }

    /// erf's vectorised form against Foundation's erf: absolute error below 4e-7 (Abramowitz & Stegun 7.1.26's 1.5e-7
    /// plus float32 rounding; measured 3.1e-7 near x = −0.2) over [−6, 6], ±∞ and huge values, at every CPU level;
    /// NaN stays NaN.
    @Test func erfFastMatchesReference() throws {
        var values = (0...2400).map { Float($0 - 1200) / 200 }
        values += [0, -0, 1e-30, -1e-30, 30, -30, 1e30, -1e30, .infinity, -.infinity]
        let node = Node(name: "erf", op: .unary, inputs: ["x"], outputs: ["y"], attributes: Attributes(mode: UnaryFunction.erf.rawValue))
        var meta = ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "x", shape: [-1])], outputs: ["y"], nodes: [node]))
        meta.name = "erf"
        let model = Model(metadata: meta, tensors: [])
        let x = Tensor(shape: [values.count], data: values)
        #expect(try Engine(model: model, threads: 1).plannedKernels().map(\.kernel) == [.erf])
        let ref = try #require(try Engine(model: model, threads: 1, mode: .reference).run(["x": x])["y"])
        var bits: [Int32: [UInt32]] = [:]
        try forEachCPULevel { level in
            let fast = try #require(try Engine(model: model, threads: 2).run(["x": x])["y"])
            assertClose(fast, ref, atol: 4e-7, "erf at CPU level \(level)")
            bits[level] = fast.data.map(\.bitPattern)
        }
        // Every level the same bits (erf.c: the same operations, the last one an explicit fused multiply-add).
        for (level, b) in bits { #expect(b == bits[0], "erf at CPU level \(level) against the portable one's bits") }
        let nan = try #require(try Engine(model: model, threads: 1).run(["x": Tensor(shape: [1], data: [.nan])])["y"])
        #expect(nan.data[0].isNaN)
    }

    /// Chained transposes (an attention head split between NCHW and NHWC) become one transpose, or an identity when
    /// they undo each other; the fast path (optimized graph) equals the reference (original graph) exactly.
    @Test func chainedTransposesComposeIntoOne() throws {
        var g = GraphBuilder(seed: 495, input: [2, 5, 3, 4])
        let t1 = g.node(.transpose, ["x"], Attributes(perm: [0, 2, 3, 1]))
        let t2 = g.node(.transpose, [t1], Attributes(perm: [0, 3, 2, 1]))
        let t3 = g.node(.transpose, [t2], Attributes(perm: [0, 3, 1, 2]))
        let x = g.input([2, 5, 3, 4])
        let three = g.model(outputs: [t3])
        let composed = try #require(try GraphPasses.optimize(three).metadata.graph?.nodes)
        #expect(composed.map(\.op) == [.transpose] && composed.first?.attributes.perm == [0, 2, 1, 3])
        let back = g.node(.transpose, [t3], Attributes(perm: [0, 2, 1, 3]))
        let undone = g.model(outputs: [back])
        #expect(try GraphPasses.optimize(undone).metadata.graph?.nodes.map(\.op) == [.identity])
        for model in [three, undone] {
            let (fast, ref) = try bothModes(model, ["x": x], threads: 2)
            let output = try #require(model.metadata.graph?.outputs.first)
            #expect(fast[output] == ref[output] && fast[output] != nil)
        }
    }
}
