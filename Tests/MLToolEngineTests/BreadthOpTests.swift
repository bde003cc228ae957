import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing

/// The ops added for ONNX breadth (`binary`, `where`, `reduce`, `argMax`, `logSoftmax`, `hardmax`, `gather` and the
/// newer unary functions): definitions at known points, and the fast path giving the reference kernel's bits. ONNX's
/// own expected outputs for the same ops are checked by ONNXConformanceTests.
@Suite struct BreadthOpTests {
    @Test func definitionsAtKnownPoints() {
        #expect(BinaryFunction.mod.apply(-7, 3) == 2)
        #expect(BinaryFunction.mod.apply(7, -3) == -2)
        #expect(BinaryFunction.fmod.apply(-7, 3) == -1)
        #expect(BinaryFunction.mod.apply(6, 3) == 0)
        #expect(BinaryFunction.mod.apply(1, 0).isNaN)
        #expect(BinaryFunction.max.apply(.nan, 1).isNaN && BinaryFunction.min.apply(1, .nan).isNaN)
        #expect(BinaryFunction.prelu.apply(-2, 0.25) == -0.5 && BinaryFunction.prelu.apply(3, 0.25) == 3)
        #expect(BinaryFunction.xor.apply(2, 0) == 1 && BinaryFunction.xor.apply(2, -1) == 0)
        #expect(BinaryFunction.lessOrEqual.apply(1, 1) == 1 && BinaryFunction.greater.apply(1, 1) == 0)
        #expect(UnaryFunction.round.apply(2.5, alpha: 0) == 2 && UnaryFunction.round.apply(-1.5, alpha: 0) == -2)
        #expect(UnaryFunction.sign.apply(-0.1, alpha: 0) == -1 && UnaryFunction.sign.apply(0, alpha: 0) == 0)
        #expect(UnaryFunction.sign.apply(.nan, alpha: 0).isNaN)
        #expect(UnaryFunction.trunc.apply(-2.7, alpha: 0) == -2)
        #expect(UnaryFunction.not.apply(0, alpha: 0) == 1 && UnaryFunction.nonZero.apply(-3, alpha: 0) == 1)
        #expect(abs(UnaryFunction.erf.apply(1, alpha: 0) - 0.8427008) < 1e-6)
        #expect(abs(UnaryFunction.gelu.apply(1, alpha: 0) - 0.8413447) < 1e-6)
        #expect(abs(UnaryFunction.geluTanh.apply(1, alpha: 0) - 0.8411920) < 1e-6)
        #expect(abs(UnaryFunction.mish.apply(1, alpha: 0) - 0.8650984) < 1e-6)
        #expect(abs(UnaryFunction.selu.apply(-1, alpha: 1.6732632, beta: 1.050701) + 1.1113307) < 1e-6)
        #expect(abs(UnaryFunction.celu.apply(-1, alpha: 2) - 2 * (exp(-0.5) - 1)) < 1e-6)
        #expect(ReduceFunction.logSumExp.reduced([1000, 1000]) == 1000 + Float(M_LN2))
        #expect(ReduceFunction.max.reduced([]) == -.infinity && ReduceFunction.prod.reduced([]) == 1)
        #expect(ReduceFunction.l2.reduced([3, 4]) == 5 && ReduceFunction.l1.reduced([-3, 4]) == 7)
    }

    /// Runs `model` on `feeds` in both engine modes and expects the same bits; returns the output.
    func bothModesAgree(_ model: Model, _ feeds: [String: Tensor], _ y: String, threads: Int = 2) throws -> Tensor {
        let fast = try #require(try Engine(model: model, threads: threads, mode: .fast).run(feeds, outputs: [y])[y])
        let ref = try #require(try Engine(model: model, threads: 1, mode: .reference).run(feeds, outputs: [y])[y])
        #expect(fast.shape == ref.shape)
        #expect(fast.data.map(\.bitPattern) == ref.data.map(\.bitPattern), "fast and reference bits differ")
        return ref
    }

    @Test(arguments: BinaryFunction.allCases)
    func binaryBroadcastsAsItsDefinition(_ f: BinaryFunction) throws {
        var b = GraphBuilder(seed: 11, input: [-1, 3, 4, 5])
        let w = b.constant([3, 1, 5], -1, 1)
        let y = b.node(.binary, ["x", w], Attributes(mode: f.rawValue))
        let model = b.model(outputs: [y])
        var x = b.input([2, 3, 4, 5])
        // Some exact ties and zeros, so that comparisons and logic see both answers.
        for i in stride(from: 0, to: x.count, by: 7) { x.data[i] = 0 }
        let got = try bothModesAgree(model, ["x": x], y)
        let wv = try #require(try model.tensors.first { $0.name == w }?.floats())
        // x (2, 3, 4, 5) against w (3, 1, 5): element i reads w[channel, 0, last index].
        let want = (0..<x.count).map { i in f.apply(x.data[i], wv[(i / 20) % 3 * 5 + i % 5]) }
        #expect(got.shape == [2, 3, 4, 5])
        #expect(got.data.map(\.bitPattern) == want.map(\.bitPattern), "\(f)")
    }

    @Test func whereBroadcastsAllThree() throws {
        var b = GraphBuilder(seed: 3, input: [-1, 4, 1])
        b.inputs.append(GraphInput(name: "a", shape: [-1, 1, 6]))
        let other = b.constant([6], 5, 6)
        let y = b.node(.where, ["x", "a", other])
        let model = b.model(outputs: [y])
        var c = b.input([2, 4, 1])
        c.data = c.data.map { $0 > 0 ? 1 : 0 }
        let a = b.input([2, 1, 6])
        let got = try bothModesAgree(model, ["x": c, "a": a], y)
        let ov = try #require(try model.tensors.first { $0.name == other }?.floats())
        #expect(got.shape == [2, 4, 6])
        for i in 0..<got.count {
            let (n, r, k) = (i / 24, (i / 6) % 4, i % 6)
            #expect(got.data[i] == (c.data[n * 4 + r] != 0 ? a.data[n * 6 + k] : ov[k]))
        }
    }

    @Test(arguments: ReduceFunction.allCases)
    func reduceGivesTheDefinitionOnEveryAxisSet(_ f: ReduceFunction) throws {
        for axes in [[1], [3], [1, 2], [0, 2], [-1, 1], nil] as [[Int]?] {
            var b = GraphBuilder(seed: 5, input: [-1, 3, 4, 5])
            let y = b.node(.reduce, ["x"], Attributes(axes: axes, mode: f.rawValue))
            var x = b.input([2, 3, 4, 5])
            if f == .logSum { x.data = x.data.map { abs($0) + 0.1 } }
            let got = try bothModesAgree(b.model(outputs: [y]), ["x": x], y)
            let reduced = Set((axes ?? [0, 1, 2, 3]).map { ($0 + 4) % 4 })
            #expect(got.shape == (0..<4).map { reduced.contains($0) ? 1 : [2, 3, 4, 5][$0] })
            // The definition on the groups, in input order.
            var groups = [[Float]](repeating: [], count: got.count)
            for i in 0..<x.count {
                let idx = [i / 60, (i / 20) % 3, (i / 5) % 4, i % 5]
                var o = 0
                for d in 0..<4 { o = o * got.shape[d] + (reduced.contains(d) ? 0 : idx[d]) }
                groups[o].append(x.data[i])
            }
            assertClose(got.data, groups.map { f.reduced($0) }, rtol: 1e-6, atol: 1e-6, "\(f) over \(axes ?? [])")
        }
    }

    @Test func argMaxTakesTheFirstOrLastExtremeAndNaN() throws {
        for (largest, last) in [(true, false), (true, true), (false, false), (false, true)] {
            var b = GraphBuilder(seed: 1, input: [-1, 5])
            var attrs = Attributes(axis: 1, largest: largest)
            attrs.selectLastIndex = last
            let y = b.node(.argMax, ["x"], attrs)
            let x = Tensor(shape: [3, 5], data: [1, 3, 3, 0, 0, /**/ 2, .nan, 1, .nan, 9, /**/ -1, -1, -1, -1, -1])
            let got = try bothModesAgree(b.model(outputs: [y]), ["x": x], y)
            #expect(got.shape == [3, 1])
            let want: [Float] = largest ? (last ? [2, 3, 4] : [1, 1, 0]) : (last ? [4, 3, 4] : [3, 1, 0])
            #expect(got.data == want, "largest \(largest), last \(last)")
        }
    }

    @Test func logSoftmaxAndHardmaxAlongAnAxis() throws {
        var b = GraphBuilder(seed: 9, input: [-1, 4, 3])
        let l = b.node(.logSoftmax, ["x"], Attributes(axis: 1))
        let h = b.node(.hardmax, ["x"], Attributes(axis: 1))
        let model = b.model(outputs: [l, h])
        var x = b.input([2, 4, 3])
        x.data[3] = x.data[0]   // a tie in lane (0, ·, 0): the first maximum wins if it is the maximum
        let ls = try bothModesAgree(model, ["x": x], l), hs = try bothModesAgree(model, ["x": x], h)
        for n in 0..<2 {
            for k in 0..<3 {
                let lane = (0..<4).map { Double(x.data[(n * 4 + $0) * 3 + k]) }
                let m = lane.max() ?? 0
                let lse = log(lane.map { exp($0 - m) }.reduce(0, +)) + m
                assertClose((0..<4).map { ls.data[(n * 4 + $0) * 3 + k] }, lane.map { $0 - lse }, atol: 1e-6)
                let first = lane.firstIndex(of: m) ?? -1
                #expect((0..<4).map { hs.data[(n * 4 + $0) * 3 + k] } == (0..<4).map { $0 == first ? 1 : 0 })
            }
        }
    }

    @Test func gatherTakesRowsAndMarksBadIndicesWithNaN() throws {
        var b = GraphBuilder(seed: 2, input: [-1, 3])
        let table = b.constant([4, 2])
        let y = b.node(.gather, [table, "x"], Attributes(axis: 0))
        let model = b.model(outputs: [y])
        let tv = try #require(try model.tensors.first?.floats())
        let idx = Tensor(shape: [2, 3], data: [0, 3, -1, 2, 4, 1.5])
        let got = try bothModesAgree(model, ["x": idx], y)
        #expect(got.shape == [2, 3, 2])
        let rows: [Int?] = [0, 3, 3, 2, nil, nil]
        for (j, r) in rows.enumerated() {
            let pair = Array(got.data[(j * 2)..<(j * 2 + 2)])
            if let r { #expect(pair == [tv[r * 2], tv[r * 2 + 1]]) } else { #expect(pair.filter(\.isNaN).count == 2) }
        }
    }

    @Test func unknownFunctionsAreRefusedAtCompile() throws {
        for op in [Op.binary, .reduce] {
            var b = GraphBuilder(seed: 1, input: [-1, 2])
            let ins = op == .binary ? ["x", "x"] : ["x"]
            let y = b.node(op, ins, Attributes(mode: "cube"))
            #expect(throws: EngineError.self) { _ = try Engine(model: b.model(outputs: [y]), threads: 1) }
        }
    }
}
