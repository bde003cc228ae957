import CMLToolKernels
import Foundation
import MLToolCore
@testable import MLToolEngine
import MLToolTestSupport
import Testing

/// The fast paths a transformer encoder runs (issue 48, item 5) against the scalar reference: matMul of a
/// (…, M, K) activation by a constant (K, N) weight on the packed GEMM and, with int8 weights, on the int8 kernels;
/// erf (the exact GELU's) vectorised, at every CPU level; softmax's one definition at every level.
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

    /// Attention's Q, K and V projections: three int8 matMuls reading dynamic codes of one input. The first quantizes
    /// it, the next two multiply the codes it left in scratch; each output has the bits it has when computed alone,
    /// on 1 and 2 threads (rows split across threads, or few rows and columns split).
    @Test func projectionsOfOneInputShareItsCodes() throws {
        for rows in [128, 24] {
            var g = GraphBuilder(seed: 497, input: [1, rows, 64])
            let xq = g.node(.quantize, ["x"], Attributes(min: 0, max: 255, mode: "dynamic"))
            var outputs: [String] = []
            for (i, n) in [64, 64, 96].enumerated() {
                let codes = (0..<(64 * n)).map { UInt8(bitPattern: Int8(($0 &* (37 + i)) % 127 - 63)) }
                g.tensors.append(StoredTensor(name: "w\(i)", dtype: .int8, shape: [64, n],
                                              quant: QuantParams(axis: 1, scales: (0..<n).map { 0.01 + Float($0) / 1000 }),
                                              bytes: TensorBytes(copying: codes)))
                outputs.append(g.node(.matMul, [xq, "w\(i)"]))
            }
            let model = g.model(outputs: outputs), x = g.input([1, rows, 64])
            for threads in [1, 2] {
                let engine = try Engine(model: model, threads: threads)
                #expect(try engine.plannedKernels().map(\.kernel) == [.quantizedDense, .quantizedDenseSharedCodes,
                                                                       .quantizedDenseSharedCodes])
                let together = try engine.run(["x": x])
                for name in outputs {
                    let alone = try #require(try engine.run(["x": x], outputs: [name])[name])
                    #expect(together[name]?.data.map(\.bitPattern) == alone.data.map(\.bitPattern), "\(name), \(rows) rows")
                }
            }
        }
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

    /// `mlk_softmax_rows` and `mlk_softmax` (the same rows laid out along a middle axis) give the portable level's bits
    /// at every level, however the rows are split, for rows of 1 to 1,000 values (the vector body, masked and scalar
    /// tails, the 8-row gather of short rows; along a middle axis 8 lanes at a time, or a lane copied into a row when
    /// fewer than 8 lie side by side) with NaN, ±∞, −0, a peaked value and a row of −∞; a row holding NaN or
    /// only −∞ is NaN throughout (as onnxruntime's), and finite rows are within 1e-7 of a softmax in double (8e-8 measured).
    @Test func softmaxGivesOneDefinitionsBits() throws {
        for len in [1, 5, 16, 17, 37, 128, 1000] { for rows in [24, 6] {   // along a middle axis: 8-lane blocks, or single lanes
            let n = rows * len
            var rng = SplitMix64(seed: UInt64(len))
            var x = (0..<n).map { _ in Float.random(in: -20...20, using: &rng) }
            x[0] = .nan; x[min(len + 1, n - 1)] = .infinity; x[(2 * len + 2) % n] = -.infinity
            for j in 0..<len { x[3 * len + j] = -.infinity }
            x[4 * len] = -0.0; x[5 * len] = 88
            let transposed = (0..<n).map { x[($0 % rows) * len + $0 / rows] }
            var bits: [Int32: [UInt32]] = [:]
            _ = forEachCPULevel { level in
                var y = [Float](repeating: 0, count: n), split = y, strided = y
                mlk_softmax_rows(x, &y, Int64(len), 0, Int64(rows))
                x.withUnsafeBufferPointer { xp in
                    split.withUnsafeMutableBufferPointer { sp in
                        guard let xb = xp.baseAddress, let sb = sp.baseAddress else { return }
                        mlk_softmax_rows(xb, sb, Int64(len), 0, Int64(rows / 3 - 1))
                        mlk_softmax_rows(xb, sb, Int64(len), Int64(rows / 3 - 1), Int64(rows))
                    }
                }
                mlk_softmax(transposed, &strided, Int64(len), Int64(rows), 0, Int64(rows))
                let fromStrided = (0..<n).map { strided[($0 % len) * rows + $0 / len] }
                #expect(split.map(\.bitPattern) == y.map(\.bitPattern), "rows of \(len) split at row \(rows / 3 - 1), level \(level)")
                #expect(fromStrided.map(\.bitPattern) == y.map(\.bitPattern), "rows of \(len) along a middle axis, level \(level)")
                bits[level] = y.map(\.bitPattern)
            }
            for (level, b) in bits { #expect(b == bits[0], "rows of \(len) at CPU level \(level) against the portable bits") }
            let y = try #require(bits[0]).map(Float.init(bitPattern:))
            for r in 0..<rows {
                let row = Array(x[r * len..<(r + 1) * len]), out = Array(y[r * len..<(r + 1) * len])
                if row.contains(where: \.isNaN) || row.allSatisfy({ $0 == -.infinity }) {
                    #expect(out.allSatisfy { $0.isNaN }, "row \(r) of \(len)"); continue
                }
                if row.contains(.infinity) { continue }
                let m = Double(row.max() ?? 0), e = row.map { Foundation.exp(Double($0) - m) }, s = e.reduce(0, +)
                let worst = zip(out, e).map { abs(Double($0) - $1 / s) }.max() ?? 0
                #expect(worst < 1e-7, "row \(r) of \(len): \(worst) from the softmax in double")
            }
        } }
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

    /// A `shape` of the inner transpose (an export's head-merge sizes, read from the merged heads) does not keep it:
    /// it reads the inner transpose's input through the inner perm, and both outputs keep their values.
    @Test func aShapeReaderDoesNotKeepAnInnerTranspose() throws {
        var g = GraphBuilder(seed: 496, input: [2, 5, 3, 4])
        let t1 = g.node(.transpose, ["x"], Attributes(perm: [0, 1, 3, 2]))
        let t2 = g.node(.transpose, [t1], Attributes(perm: [0, 3, 1, 2]))
        let sizes = g.node(.shape, [t1], Attributes(perm: [0, 3, 1, 2]))
        let whole = g.node(.shape, [t1])
        let model = g.model(outputs: [t2, sizes, whole])
        let nodes = try #require(try GraphPasses.optimize(model).metadata.graph?.nodes)
        #expect(nodes.filter { $0.op == .transpose }.map(\.attributes.perm) == [[0, 2, 1, 3]])
        #expect(nodes.filter { $0.op == .shape }.allSatisfy { $0.inputs == ["x"] })
        let (fast, ref) = try bothModes(model, ["x": g.input([2, 5, 3, 4])], threads: 1)
        for output in [t2, sizes, whole] { #expect(fast[output] == ref[output] && fast[output] != nil, "\(output)") }
        #expect(fast[sizes]?.data == [2, 3, 5, 4] && fast[whole]?.data == [2, 5, 4, 3])
    }
}
