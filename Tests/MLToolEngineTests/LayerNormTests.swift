import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing

/// layerNorm: the fast path (`mlk_layer_norm_rows`: sums in 8 lanes, rows across threads) against the scalar reference.
enum LayerNormCase: String, CaseIterable, CustomTestStringConvertible {
    /// 6 channels: no full vector; 64 / 37: whole vectors, and a tail of 5.
    case lastAxis, wideRows, oddRows, axis1Rank4, axis0, noBias, noScale, rank2, mean, invStdDev

    var testDescription: String { rawValue }

    func build() -> (Model, Tensor) {
        var g = GraphBuilder(seed: UInt64(Self.allCases.firstIndex(of: self)! + 201), input: [-1, 5, 6, 6])
        var inShape = [2, 5, 6, 6], axis = -1, inputs = 3
        var mode: String?
        switch self {
        case .lastAxis: break
        case .wideRows: inShape = [3, 200, 64]; g.inputs[0].shape = [-1, 200, 64]
        case .oddRows: inShape = [2, 9, 37]; g.inputs[0].shape = [-1, 9, 37]
        case .axis1Rank4: axis = 1
        case .axis0: axis = 0; g.inputs[0].shape = inShape
        case .noBias: inputs = 2
        case .noScale: inputs = 1
        case .rank2: inShape = [4, 13]; g.inputs[0].shape = [-1, 13]
        case .mean: (axis, mode) = (2, "mean")
        case .invStdDev: (axis, mode) = (1, "invStdDev")
        }
        let rank = inShape.count
        let ax = axis < 0 ? axis + rank : axis
        let inner = inShape[ax...].reduce(1, *)
        var ins = ["x"]
        if inputs >= 2 { ins.append(g.constant([inner], 0.5, 1.5)) }
        if inputs == 3 { ins.append(g.constant([inner], -0.5, 0.5)) }
        let out = g.node(.layerNorm, ins, Attributes(axis: axis, epsilon: 1e-5, mode: mode))
        // Values around 3 with spread ±2: the mean matters.
        var x = g.input(inShape)
        x.data = x.data.map { 3 + 2 * $0 }
        return (g.model(outputs: [out]), x)
    }
}

@Suite struct LayerNormTests {
    @Test(arguments: LayerNormCase.allCases)
    func fastMatchesReference(_ c: LayerNormCase) throws {
        let (model, input) = c.build()
        let name = model.metadata.graph!.outputs[0]
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, ["x": input], threads: threads)
            let f = try #require(fast[name]), r = try #require(ref[name])
            assertClose(f, r, rtol: fastTolerance, atol: fastTolerance, "\(c) with \(threads) threads")
        }
    }

    @Test func splitAcrossThreadsIsBitIdentical() throws {
        let (model, input) = LayerNormCase.wideRows.build()
        let name = model.metadata.graph!.outputs[0]
        let a = try #require(try Engine(model: model, threads: 1).run(["x": input])[name])
        let b = try #require(try Engine(model: model, threads: 2).run(["x": input])[name])
        #expect(a.data.map(\.bitPattern) == b.data.map(\.bitPattern))
    }

    /// `mlk_layer_norm_rows` gives the portable level's bits at every CPU level (sums in the same 8 lanes, every
    /// product rounded before its add), rows of whole vectors and with a tail, with and without scale and bias.
    @Test func everyLevelGivesThePortableBits() throws {
        for c in [LayerNormCase.wideRows, .oddRows, .noScale, .lastAxis] {
            let (model, input) = c.build()
            let name = model.metadata.graph!.outputs[0]
            var bits: [[UInt32]] = []
            try forEachCPULevel { _ in
                bits.append(try #require(try Engine(model: model, threads: 2).run(["x": input])[name]).data.map(\.bitPattern))
            }
            #expect(Set(bits).count == 1, "\(c): the levels differ")
        }
    }

    /// Rows [1, 2, 3, 4] and [10, 10, 10, 10]: mean 2.5, variance 1.25, and a constant row normalises to 0 (ε keeps
    /// its 0 / 0 away).
    @Test func normalisesByHand() throws {
        let node = Node(name: "ln", op: .layerNorm, inputs: ["x"], outputs: ["y"], attributes: Attributes(axis: -1, epsilon: 1e-5))
        var meta = ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "x", shape: [2, 4])], outputs: ["y"], nodes: [node]))
        meta.name = "ln"
        let x = Tensor(shape: [2, 4], data: [1, 2, 3, 4, 10, 10, 10, 10])
        let d = Float(1.25 + 1e-5).squareRoot()
        for mode in [Engine.Mode.fast, .reference] {
            let y = try #require(try Engine(model: Model(metadata: meta, tensors: []), threads: 1, mode: mode).run(["x": x])["y"])
            assertClose(y.data, [-1.5 / d, -0.5 / d, 0.5 / d, 1.5 / d, 0, 0, 0, 0], atol: 1e-6, "\(mode)")
        }
    }

    @Test func refusesAScaleOfTheWrongSize() throws {
        var g = GraphBuilder(seed: 1, input: [-1, 4, 6])
        let scale = g.constant([5])
        g.node(.layerNorm, ["x", scale], Attributes(axis: -1), name: "ln")
        let model = g.model(outputs: ["ln:0"])
        #expect(throws: EngineError.self) {
            _ = try Engine(model: model, threads: 1).run(["x": Tensor(shape: [1, 4, 6], data: [Float](repeating: 0, count: 24))])
        }
    }
}
