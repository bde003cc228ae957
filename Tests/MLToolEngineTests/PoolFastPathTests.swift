import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolEngine

/// Which kernel a pooling step runs, read from the engine's plan, and what it computes. A `where` clause once bound
/// to `.avgPool` alone (`case .maxPool, .avgPool where dilated`), so every MaxPool silently ran the scalar reference;
/// outputs matched, so only the plan shows the path.
@Suite struct PoolFastPathTests {
    /// A ResNet-style stem: 7×7/2 conv, ReLU, then the 3×3/2 max pool with padding 1 on 64 channels.
    static func stem() -> (Model, Tensor) {
        var g = GraphBuilder(seed: 18, input: [-1, 32, 30, 3])
        let c = g.conv("x", cin: 3, cout: 64, k: (7, 7), stride: 2, pads: [3, 3, 3, 3], act: .relu)
        let p = g.node(.maxPool, [c], Attributes(kernel: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]))
        return (g.model(outputs: [p]), g.input([2, 32, 30, 3]))
    }

    static func poolKernel(_ model: Model) throws -> Fast.Kernel {
        let steps = try Engine(model: model, threads: 2).plannedKernels(batch: 2)
        let pools = steps.filter { $0.op == .maxPool || $0.op == .avgPool }
        try #require(pools.count == 1)
        return pools[0].kernel
    }

    @Test func resNetStemMaxPoolTakesTheFastKernelAndMatchesTheReference() throws {
        let (model, input) = Self.stem()
        #expect(try Self.poolKernel(model) == .pool)
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, ["x": input], threads: threads)
            let name = model.metadata.graph!.outputs[0]
            let f = try #require(fast[name]), r = try #require(ref[name])
            #expect(f.shape == [2, 8, 8, 64])
            #expect(r.data.allSatisfy { $0.isFinite })
            assertClose(f, r, rtol: fastTolerance, atol: fastTolerance, "\(threads) threads")
        }
    }

    /// On the pool alone, fast and reference take the same maxima in the same window order: the same bits.
    @Test func maxPoolAloneIsBitIdenticalToTheReference() throws {
        var g = GraphBuilder(seed: 64, input: [-1, 16, 15, 64])
        let p = g.node(.maxPool, ["x"], Attributes(kernel: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]))
        let model = g.model(outputs: [p]), input = g.input([2, 16, 15, 64])
        #expect(try Self.poolKernel(model) == .pool)
        let (fast, ref) = try bothModes(model, ["x": input], threads: 2)
        let f = try #require(fast[p]), r = try #require(ref[p])
        #expect(f.shape == [2, 8, 8, 64])
        let first = f.data.indices.first { f.data[$0].bitPattern != r.data[$0].bitPattern }
        #expect(first == nil, "first difference at \(first ?? -1)")
    }

    /// Every undilated pool case of the op table takes the fast kernel; dilated windows take the reference one.
    @Test(arguments: [OpCase.maxPool, .maxPoolCeil, .avgPoolPadExclude, .avgPoolPadInclude, .avgPoolCeilInclude])
    func undilatedPoolsTakeTheFastKernel(_ c: OpCase) throws {
        #expect(try Self.poolKernel(c.build().0) == .pool, "\(c)")
    }

    @Test(arguments: [Op.maxPool, .avgPool])
    func dilatedPoolsTakeTheReferenceKernel(_ op: Op) throws {
        var g = GraphBuilder(seed: 3, input: [-1, 9, 8, 5])
        let y = g.node(op, ["x"], Attributes(kernel: [3, 2], dilations: [2, 2]))
        #expect(try Self.poolKernel(g.model(outputs: [y])) == .dilatedPool)
    }
}
