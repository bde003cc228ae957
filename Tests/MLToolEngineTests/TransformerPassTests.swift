import Foundation
import MLToolCore
@testable import MLToolEngine
import MLToolTestSupport
import Testing

/// The rewrites and kernels that take the overheads out of a BERT-style encoder (issue 48, acceptance line 4): the
/// exact GELU as ONNX exports spell it becomes one vectorised `gelu`; attention scores moved to NHWC for their
/// scale, mask and softmax stay in their own layout; softmax rows (one per query) vectorised along the row.
@Suite struct TransformerPassTests {
    static let sqrt2: Float = 1.4142135, half: Float = 0.5

    /// A projection as ONNX spells it, add(bias, matMul(x, W)), becomes one matMul whose third input is the bias:
    /// the packed GEMM adds it in its epilogue, the reference after its product (also on the fused graph), and
    /// both give the original graph's values; with the product also asked for, nothing fuses.
    @Test func projectionBiasMovesIntoTheGemm() throws {
        var g = GraphBuilder(seed: 484, input: [2, 9, 24])
        let w = g.constant([24, 40], -0.4, 0.4), b = g.constant([40], -0.5, 0.5)
        let product = g.node(.matMul, ["x", w])
        let y = g.node(.add, [b, product])
        let model = g.model(outputs: [y]), x = g.input([2, 9, 24])
        let fused = try GraphPasses.optimize(model)
        let nodes = try #require(fused.metadata.graph?.nodes)
        #expect(nodes.map(\.op) == [.matMul] && nodes[0].inputs == ["x", w, b] && nodes[0].outputs == [y])
        #expect(try Engine(model: model, threads: 1).plannedKernels().map(\.kernel) == [.packedDense])
        let ref = try #require(try Engine(model: model, threads: 1, mode: .reference).run(["x": x])[y])
        let fusedRef = try #require(try Engine(model: fused, threads: 1, mode: .reference).run(["x": x])[y])
        assertClose(fusedRef, ref, rtol: fastTolerance, atol: fastTolerance, "the reference on the fused matMul")
        for threads in [1, 2] {
            let fast = try #require(try Engine(model: model, threads: threads).run(["x": x])[y])
            assertClose(fast, ref, rtol: fastTolerance, atol: fastTolerance, "bias in the GEMM with \(threads) threads")
        }
        let kept = try #require(try GraphPasses.optimize(g.model(outputs: [y, product])).metadata.graph?.nodes)
        #expect(kept.map(\.op) == [.matMul, .add])
    }

    /// x·(1 + erf(x/√2))·½ as torch exports nn.GELU, after a projection (matMul + bias).
    static func geluModel(readErfElsewhere: Bool = false) -> (Model, Tensor) {
        var g = GraphBuilder(seed: 481, input: [1, 16, 24])
        let w = g.constant([24, 40], -0.4, 0.4), b = g.constant([40], -0.1, 0.1)
        let projected = g.node(.matMul, ["x", w])
        let h = g.node(.add, [b, projected])
        g.tensors += [StoredTensor(name: "sqrt2", tensor: Tensor(shape: [], data: [sqrt2])),
                      StoredTensor(name: "one", tensor: Tensor(shape: [], data: [1])),
                      StoredTensor(name: "half", tensor: Tensor(shape: [], data: [half]))]
        let d = g.node(.div, [h, "sqrt2"])
        let e = g.node(.unary, [d], Attributes(mode: UnaryFunction.erf.rawValue))
        let plusOne = g.node(.add, [e, "one"])
        let times = g.node(.mul, [h, plusOne])
        let y = g.node(.mul, [times, "half"])
        return (g.model(outputs: readErfElsewhere ? [y, e] : [y]), g.input([1, 16, 24]))
    }

    @Test func erfGeluBecomesOneGelu() throws {
        let (model, x) = Self.geluModel()
        let nodes = try #require(try GraphPasses.optimize(model).metadata.graph?.nodes)
        #expect(nodes.map(\.op) == [.matMul, .unary] && nodes.last?.attributes.mode == "gelu")
        #expect(nodes.first?.inputs.count == 3)   // the projection's bias moved into its GEMM (fuseMatMulBias)
        #expect(nodes.last?.outputs == model.metadata.graph?.outputs)
        // The GELU runs in the projection's epilogue (`Program.fuseGELUs`).
        #expect(try Engine(model: model, threads: 1).plannedKernels().map(\.kernel) == [.packedDense])
        let y = try #require(model.metadata.graph?.outputs.first)
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, ["x": x], threads: threads)
            assertClose(try #require(fast[y]), try #require(ref[y]), rtol: fastTolerance, atol: fastTolerance,
                        "fused GELU with \(threads) threads")
        }
    }

    /// A GEMM followed by an exact GELU runs it in its epilogue (`MLK_ACT_GELU`), giving the bits of the GEMM and
    /// then `mlk_gelu` (the two steps kept apart when the product is also asked for) at every CPU level and with 1
    /// and 2 threads, through the tiles that store a row's columns differently: a last panel of ≤ 8 columns (40),
    /// whole 8 × 48 tiles with a partial last panel (100), a lone row, 1,024 columns.
    @Test func geluRunsInTheGemmEpilogueWithTheBitsOfTheTwoSteps() throws {
        var cases = 0
        for (rows, k, n) in [(16, 24, 40), (37, 24, 100), (1, 64, 33), (128, 32, 1024)] {
            var g = GraphBuilder(seed: 482, input: [1, rows, k])
            let w = g.constant([k, n], -0.6, 0.6), b = g.constant([n], -0.5, 0.5)
            let product = g.node(.matMul, ["x", w, b])
            let y = g.node(.unary, [product], Attributes(mode: UnaryFunction.gelu.rawValue))
            let fused = g.model(outputs: [y]), apart = g.model(outputs: [y, product])
            var x = g.input([1, rows, k])
            x.data[1] = 40; x.data[2] = -40   // far tails of erf
            var withNaN = x
            withNaN.data[rows > 1 ? k + 3 : 3] = .nan   // a row of NaN among finite ones
            #expect(try Engine(model: fused, threads: 1).plannedKernels().map(\.kernel) == [.packedDense])
            #expect(try Engine(model: apart, threads: 1).plannedKernels().map(\.kernel) == [.packedDense, .gelu])
            let ref = try #require(try Engine(model: fused, threads: 1, mode: .reference).run(["x": x])[y])
            // The product the GELU absorbed can still be asked for by name (the graph compiled without the fusion).
            let asked = try #require(try Engine(model: fused, threads: 2).run(["x": x], outputs: [product])[product])
            let kept = try #require(try Engine(model: apart, threads: 2).run(["x": x])[product])
            #expect(asked.data.map(\.bitPattern) == kept.data.map(\.bitPattern), "\(rows)×\(k)×\(n): the product by name")
            _ = try forEachCPULevel { level in
                for threads in [1, 2] {
                    for input in [x, withNaN] {
                        let one = try #require(try Engine(model: fused, threads: threads).run(["x": input])[y])
                        let two = try #require(try Engine(model: apart, threads: threads).run(["x": input])[y])
                        #expect(one.data.map(\.bitPattern) == two.data.map(\.bitPattern),
                                "level \(level), \(threads) threads, \(rows)×\(k)×\(n): fused GELU differs from the two steps")
                        if input.data.contains(where: \.isNaN) {
                            #expect(one.data.filter(\.isNaN).count == n, "NaN in one row: that row's \(n) outputs NaN")
                        } else {
                            assertClose(one, ref, rtol: fastTolerance, atol: fastTolerance, "against the reference: \(rows)×\(k)×\(n)")
                        }
                    }
                    cases += 1
                }
            }
        }
        #expect(cases >= 8)
    }

    @Test func anErfReadElsewhereStays() throws {
        let (model, _) = Self.geluModel(readErfElsewhere: true)
        let nodes = try #require(try GraphPasses.fuseGelu(model).metadata.graph?.nodes)
        #expect(!nodes.contains { $0.attributes.mode == "gelu" } && nodes.count == 7)
    }

    /// `mlk_gelu` against the reference (½x(1 + erf(x/√2)) with Foundation's erf) at every CPU level, over [−8, 8] and
    /// extremes: within 1e-6 absolute and relative (erf's 1.5e-7 scaled by ½|x| plus float rounding).
    /// NaN stays NaN; +∞ gives +∞, and −∞ NaN as the reference's −∞·0 does.
    @Test func geluFastMatchesReference() throws {
        var values = (0...3200).map { Float($0 - 1600) / 200 }
        values += [0, -0, 1e-30, -1e-30, 30, -30, 1e30, -1e30]
        let node = Node(name: "gelu", op: .unary, inputs: ["x"], outputs: ["y"], attributes: Attributes(mode: UnaryFunction.gelu.rawValue))
        var meta = ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "x", shape: [-1])], outputs: ["y"], nodes: [node]))
        meta.name = "gelu"
        let model = Model(metadata: meta, tensors: [])
        let x = Tensor(shape: [values.count], data: values)
        #expect(try Engine(model: model, threads: 1).plannedKernels().map(\.kernel) == [.gelu])
        let ref = try #require(try Engine(model: model, threads: 1, mode: .reference).run(["x": x])["y"])
        var bits: [Int32: [UInt32]] = [:]
        try forEachCPULevel { level in
            let fast = try #require(try Engine(model: model, threads: 2).run(["x": x])["y"])
            assertClose(fast, ref, rtol: 1e-6, atol: 1e-6, "gelu at CPU level \(level)")
            bits[level] = fast.data.map(\.bitPattern)
        }
        // Every level the same bits (erf.c: the same operations, the last one an explicit fused multiply-add).
        for (level, b) in bits { #expect(b == bits[0], "gelu at CPU level \(level) against the portable one's bits") }
        let special = try #require(try Engine(model: model, threads: 1).run(["x": Tensor(shape: [3], data: [.nan, -.infinity, .infinity])])["y"])
        #expect(special.data[0].isNaN && special.data[1].isNaN && special.data[2] == .infinity)
    }

    /// BERT's attention as an NHWC importer leaves it: scores (N, heads, T, T) from a batchMatMul, moved to
    /// (N, T, T, heads), divided by √d, plus a mask (N, 1, T, 1 in NHWC, itself from a transpose), softmax over the
    /// keys (axis 2), moved back. After the pass: no transpose of the scores, the softmax on the last axis, the mask
    /// read through a transpose that composes with its own into none; the same values as the reference on the
    /// original graph.
    /// With `computedMask`, the mask is BERT's (1 − m)·(−10000) of a 0/1 input, computed in NHWC: it stays, read
    /// through the transpose the pass adds.
    static func attentionModel(heads: Int, seq: Int, depth: Int, computedMask: Bool) -> (Model, [String: Tensor]) {
        var g = GraphBuilder(seed: 482, input: [1, heads, seq, depth], name: "q")
        g.inputs.append(GraphInput(name: "k", shape: [1, heads, depth, seq]))
        g.inputs.append(GraphInput(name: "mask", shape: [1, 1, 1, seq]))
        g.tensors.append(StoredTensor(name: "scale", tensor: Tensor(shape: [], data: [Float(depth).squareRoot()])))
        let scores = g.node(.batchMatMul, ["q", "k"])
        let nhwc = g.node(.transpose, [scores], Attributes(perm: [0, 2, 3, 1]))
        var mask = g.node(.transpose, ["mask"], Attributes(perm: [0, 2, 3, 1]))
        if computedMask {
            g.tensors += [StoredTensor(name: "one", tensor: Tensor(shape: [], data: [1])),
                          StoredTensor(name: "big", tensor: Tensor(shape: [], data: [-10000]))]
            let kept = g.node(.sub, ["one", mask])
            mask = g.node(.mul, [kept, "big"])
        }
        let scaled = g.node(.div, [nhwc, "scale"])
        let masked = g.node(.add, [scaled, mask])
        let probs = g.node(.softmax, [masked], Attributes(axis: 2))
        let back = g.node(.transpose, [probs], Attributes(perm: [0, 3, 1, 2]))
        var maskValues = [Float](repeating: computedMask ? 1 : 0, count: seq)
        for i in seq * 3 / 4..<seq { maskValues[i] = computedMask ? 0 : -10000 }   // padding keys
        let feeds = ["q": g.input([1, heads, seq, depth]), "k": g.input([1, heads, depth, seq]),
                     "mask": Tensor(shape: [1, 1, 1, seq], data: maskValues)]
        return (g.model(outputs: [back]), feeds)
    }

    @Test(arguments: [(4, 128, 64, false), (2, 9, 8, true)])
    func attentionScoresStayInTheirLayout(_ shape: (Int, Int, Int, Bool)) throws {
        let (model, feeds) = Self.attentionModel(heads: shape.0, seq: shape.1, depth: shape.2, computedMask: shape.3)
        let nodes = try #require(try GraphPasses.optimize(model).metadata.graph?.nodes)
        if shape.3 {
            #expect(nodes.map(\.op) == [.batchMatMul, .transpose, .sub, .mul, .div, .transpose, .add, .softmax])
            #expect(nodes[5].attributes.perm == [0, 3, 1, 2] && nodes[6].inputs.contains(nodes[5].outputs[0]))
        } else {
            #expect(nodes.map(\.op) == [.batchMatMul, .div, .add, .softmax])
            #expect(nodes.count == 4 && nodes[2].inputs.contains("mask"))
        }
        #expect(nodes.last?.attributes.axis == 3 && nodes.last?.outputs == model.metadata.graph?.outputs)
        let y = try #require(model.metadata.graph?.outputs.first)
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, feeds, threads: threads)
            assertClose(try #require(fast[y]), try #require(ref[y]), rtol: fastTolerance, atol: fastTolerance,
                        "attention \(shape) with \(threads) threads")
        }
    }

    /// softmax(x / 8 + mask) along the keys runs as one step (`ScaledSoftmax`) for masks broadcast from (N, 1, 1, T),
    /// (T) and full ones, on 1 and 2 threads: the bits of the three steps run one by one (the same graph with the sum
    /// also asked for, which keeps them apart), and the reference's values.
    @Test func scaledMaskedSoftmaxRunsAsOneStep() throws {
        for maskShape in [[2, 1, 1, 128], [128], [2, 4, 64, 128]] {
            var g = GraphBuilder(seed: 498, input: [2, 4, 64, 128])
            g.inputs.append(GraphInput(name: "mask", shape: maskShape))
            g.tensors.append(StoredTensor(name: "scale", tensor: Tensor(shape: [], data: [8])))
            let sum = g.node(.add, [g.node(.div, ["x", "scale"]), "mask"])
            let y = g.node(.softmax, [sum])
            var mask = g.input(maskShape)
            for i in stride(from: 0, to: mask.data.count, by: 7) { mask.data[i] = -10000 }
            let feeds = ["x": g.input([2, 4, 64, 128]), "mask": mask]
            let fused = g.model(outputs: [y]), apart = g.model(outputs: [y, sum])
            for threads in [1, 2] {
                let planned = try Engine(model: fused, threads: threads).plannedKernels()
                #expect(planned.map(\.op) == [.div, .add, .softmax] && planned.allSatisfy(\.fused), "\(maskShape)")
                #expect(try Engine(model: apart, threads: threads).plannedKernels().allSatisfy { !$0.fused })
                let one = try #require(try Engine(model: fused, threads: threads).run(feeds)[y])
                let three = try #require(try Engine(model: apart, threads: threads).run(feeds)[y])
                #expect(one.data.map(\.bitPattern) == three.data.map(\.bitPattern), "\(maskShape), \(threads) threads")
                let ref = try #require(try Engine(model: fused, threads: 1, mode: .reference).run(feeds)[y])
                assertClose(one, ref, rtol: fastTolerance, atol: fastTolerance, "\(maskShape), \(threads) threads")
            }
        }
    }

    /// A softmax along the last axis (attention: one row of 128 keys per query) gives the portable level's bits at
    /// every level, on 1 and 2 threads (the kernel's own test: `EncoderKernelTests.softmaxGivesOneDefinitionsBits`).
    @Test func longSoftmaxRowsGiveThePortableBits() throws {
        var g = GraphBuilder(seed: 483, input: [1, 3, 37, 128])
        let y = g.node(.softmax, ["x"])
        let model = g.model(outputs: [y])
        var x = g.input([1, 3, 37, 128])
        x.data[5] = 80   // a peaked row
        var bits: [[UInt32]] = []
        try forEachCPULevel { _ in
            for threads in [1, 2] {
                let out = try #require(try Engine(model: model, threads: threads).run(["x": x])[y])
                bits.append(out.data.map(\.bitPattern))
            }
        }
        #expect(Set(bits).count == 1, "softmax rows of 128 differ between levels or thread counts")
        let (fast, ref) = try bothModes(model, ["x": x], threads: 2)
        assertClose(try #require(fast[y]), try #require(ref[y]), rtol: fastTolerance, atol: fastTolerance, "softmax rows of 128")
    }
}
