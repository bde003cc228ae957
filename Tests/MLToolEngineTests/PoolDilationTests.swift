import MLToolCore
import Testing
import MLToolEngine

/// Dilated max / average pooling (ONNX `dilations`): without padding, output (oy, ox) of a window with dilation d
/// is output (a, b) of the undilated pool on the phase grid x[py + a·d, px + b·d] (oy = py + a·d). That identity
/// checks the dilated kernel against the undilated one; padded and ceil-mode windows are checked fast vs reference.
@Suite struct PoolDilationTests {
    static func run(_ op: Op, _ x: Tensor, _ attrs: Attributes, mode: Engine.Mode = .reference) throws -> Tensor {
        var g = GraphBuilder(seed: 1, input: [-1] + Array(x.shape.dropFirst()))
        let out = g.node(op, ["x"], attrs)
        let result = try Engine(model: g.model(outputs: [out]), threads: 1, mode: mode).run(["x": x], outputs: [out])
        return try #require(result[out])
    }

    @Test(arguments: [Op.maxPool, .avgPool])
    func dilatedWindowIsThePoolOfItsPhaseGrid(op: Op) throws {
        var g = GraphBuilder(seed: 5, input: [-1, 11, 10, 3])
        let x = g.input([2, 11, 10, 3])
        let (k, d) = ([3, 2], [2, 3])
        let y = try Self.run(op, x, Attributes(kernel: k, dilations: d))
        #expect(y.shape == [2, 11 - 2 * 2, 10 - 1 * 3, 3])
        for py in 0..<d[0] {
            for px in 0..<d[1] {
                // The phase grid x[py + a·dh, px + b·dw].
                let hs = stride(from: py, to: 11, by: d[0]).map { $0 }, ws = stride(from: px, to: 10, by: d[1]).map { $0 }
                guard hs.count >= k[0], ws.count >= k[1] else { continue }
                var phase = [Float]()
                for b in 0..<2 { for h in hs { for w in ws { for c in 0..<3 { phase.append(x.data[((b * 11 + h) * 10 + w) * 3 + c]) } } } }
                let p = try Self.run(op, Tensor(shape: [2, hs.count, ws.count, 3], data: phase), Attributes(kernel: k))
                for b in 0..<2 {
                    for a in 0..<p.shape[1] {
                        for e in 0..<p.shape[2] {
                            for c in 0..<3 {
                                let oy = py + a * d[0], ox = px + e * d[1]
                                let want = p.data[((b * p.shape[1] + a) * p.shape[2] + e) * 3 + c]
                                let got = y.data[((b * y.shape[1] + oy) * y.shape[2] + ox) * 3 + c]
                                #expect(abs(got - want) <= 1e-6, "\(op) phase (\(py), \(px)) at (\(oy), \(ox), \(c)): \(got) vs \(want)")
                            }
                        }
                    }
                }
            }
        }
    }

    @Test(arguments: [
        (Op.maxPool, Attributes(kernel: [3, 3], strides: [2, 1], dilations: [2, 2], pads: [2, 1, 1, 2], ceilMode: true)),
        (Op.avgPool, Attributes(kernel: [2, 3], strides: [1, 2], dilations: [3, 2], pads: [1, 2, 1, 1], countIncludePad: true)),
        (Op.avgPool, Attributes(kernel: [3, 2], strides: [2, 2], dilations: [2, 3], pads: [2, 0, 1, 2], ceilMode: true, countIncludePad: false)),
    ])
    func paddedDilatedPoolFastMatchesReference(op: Op, attrs: Attributes) throws {
        var g = GraphBuilder(seed: 9, input: [-1, 9, 8, 5])
        let x = g.input([2, 9, 8, 5])
        let r = try Self.run(op, x, attrs), f = try Self.run(op, x, attrs, mode: .fast)
        #expect(r.shape == f.shape && r.data == f.data)
        #expect(r.data.allSatisfy { $0.isFinite })
    }
}
