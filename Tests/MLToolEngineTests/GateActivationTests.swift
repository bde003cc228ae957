import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing

/// Sigmoid and swish on the fast path use the kernels' own expf (Cephes' polynomial, the same fused multiply-adds in
/// every vector width and in the scalar tails): within 1e-6 relative of the double-precision definition over the
/// whole float range and at ±∞ (within 1e-35 absolute where exp underflows), NaN stays NaN, and a lane and a tail element give the same bits.
@Suite(.serialized) struct GateActivationTests {
    static func values() -> [Float] {
        var v: [Float] = stride(from: -100.0, through: 100.0, by: 0.0137).map { Float($0) }
        v += [0, -0.0, 1e-30, -1e-30, 87.3, -87.3, 88.3, -88.3, 88.8, -88.8, 1e6, -1e6, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .infinity, -.infinity]
        return v
    }

    @Test(arguments: [Op.sigmoid, .swish])
    func everyLevelIsCloseToTheDefinition(_ op: Op) throws {
        let v = Self.values()
        var b = GraphBuilder(seed: 1, input: [-1, v.count])
        let y = b.node(op, ["x"])
        let model = b.model(outputs: [y])
        let input = Tensor(shape: [1, v.count], data: v)
        let levels = try forEachCPULevel { level in
            let got = try #require(try Engine(model: model, threads: 1).run(["x": input])[y]).data
            for (x, g) in zip(v, got) {
                if x.isInfinite {
                    // σ(±∞) = 1 or 0; x·σ(x) is +∞ at +∞ and, as x·σ(x) in PyTorch, NaN at −∞ (−∞ · 0).
                    let ok = op == .sigmoid ? g == (x > 0 ? 1 : 0) : (x > 0 ? g == .infinity : g.isNaN)
                    #expect(ok, "\(op) at level \(level): x \(x) → \(g)")
                    continue
                }
                let s = 1 / (1 + exp(-Double(x)))
                let want = op == .sigmoid ? s : Double(x) * s
                let err = abs(Double(g) - want)
                #expect(err <= 1e-6 * abs(want) + 1e-35, "\(op) at level \(level): x \(x) → \(g), want \(want)")
            }
            // Position does not matter: the same value in a vector lane and in a scalar tail gives the same bits.
            let odd = Tensor(shape: [1, 11], data: [Float](repeating: 0.731, count: 11))
            var bb = GraphBuilder(seed: 1, input: [-1, 11])
            let yy = bb.node(op, ["x"])
            let out = try #require(try Engine(model: bb.model(outputs: [yy]), threads: 1).run(["x": odd])[yy]).data
            #expect(Set(out.map(\.bitPattern)).count == 1, "\(op) at level \(level): \(out)")
        }
        #expect(!levels.isEmpty)
        let nanInput = Tensor(shape: [1, v.count], data: [Float](repeating: .nan, count: v.count))
        let nanOutput = try Engine(model: model, threads: 1).run(["x": nanInput])[y]?.data ?? []
        #expect(nanOutput.count == v.count && nanOutput.allSatisfy { $0.isNaN })
    }
}
