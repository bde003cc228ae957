import Foundation
import MLToolCore
import MLToolEngine
import Testing

/// The `unary` op (Core ML's thresholded ReLU, ELU, softplus, softsign and unary functions): both engine paths
/// equal the plain definition, which is checked against hand-computed values.
@Suite struct UnaryOpTests {
    @Test func definitionsAtKnownPoints() {
        let e = Float(M_E)
        #expect(UnaryFunction.thresholdedRelu.apply(0.5, alpha: 1) == 0)
        #expect(UnaryFunction.thresholdedRelu.apply(1.5, alpha: 1) == 1.5)
        #expect(UnaryFunction.thresholdedRelu.apply(-2, alpha: -3) == -2)
        #expect(abs(UnaryFunction.elu.apply(-1, alpha: 2) - 2 * (1 / e - 1)) < 1e-6)
        #expect(UnaryFunction.elu.apply(3, alpha: 2) == 3)
        #expect(abs(UnaryFunction.softplus.apply(0, alpha: 0) - Float(M_LN2)) < 1e-6)
        #expect(UnaryFunction.softplus.apply(50, alpha: 0) == 50)
        #expect(UnaryFunction.softsign.apply(-3, alpha: 0) == -0.75)
        #expect(UnaryFunction.sqrt.apply(6.25, alpha: 0) == 2.5)
        #expect(UnaryFunction.rsqrt.apply(3, alpha: 1) == 0.5)
        #expect(UnaryFunction.reciprocal.apply(3, alpha: 1) == 0.25)
        #expect(UnaryFunction.pow.apply(2, alpha: 3) == 8)
        #expect(UnaryFunction.threshold.apply(-1, alpha: 0.5) == 0.5)
        #expect(UnaryFunction.abs.apply(-4, alpha: 0) == 4)
        #expect(abs(UnaryFunction.log.apply(e, alpha: 0) - 1) < 1e-6)
        #expect(abs(UnaryFunction.exp.apply(1, alpha: 0) - e) < 1e-6)
    }

    @Test(arguments: UnaryFunction.allCases)
    func enginePathsMatchTheDefinition(_ f: UnaryFunction) throws {
        var b = GraphBuilder(seed: 7, input: [-1, 3, 4, 5])
        let alpha: Float = f == .pow ? 2 : (f == .rsqrt || f == .reciprocal ? 1.5 : 0.3)
        let y = b.node(.unary, ["x"], Attributes(alpha: alpha, mode: f.rawValue))
        let model = b.model(outputs: [y])
        // Positive inputs for the functions defined only there.
        let positive: Set<UnaryFunction> = [.log, .sqrt, .rsqrt, .pow]
        var x = b.input([2, 3, 4, 5])
        if positive.contains(f) { x.data = x.data.map { abs($0) + 0.1 } }
        if f == .acosh { x.data = x.data.map { abs($0) + 1.1 } }
        for mode in [Engine.Mode.fast, .reference] {
            let got = try #require(try Engine(model: model, threads: 1, mode: mode).run(["x": x], outputs: [y])[y])
            #expect(got.shape == x.shape)
            // erf's and GELU's fast paths are vectorised (mlk_erf, mlk_gelu: within 4e-7 of the definition on
            // [−1, 1], EncoderKernelTests and TransformerPassTests); every other function's is the definition itself.
            let tolerance: Float = (f == .erf || f == .gelu) && mode == .fast ? 4e-7 : 0
            for (g, v) in zip(got.data, x.data) {
                let want = f.apply(v, alpha: alpha)
                #expect(abs(g - want) <= tolerance && g.isFinite, "\(f) \(mode): f(\(v)) = \(g), expected \(want)")
            }
        }
    }

    @Test func unknownFunctionIsRefusedAtCompile() throws {
        var b = GraphBuilder(seed: 1, input: [-1, 2])
        let y = b.node(.unary, ["x"], Attributes(mode: "cube"))
        #expect(throws: EngineError.self) { _ = try Engine(model: b.model(outputs: [y]), threads: 1) }
    }
}
