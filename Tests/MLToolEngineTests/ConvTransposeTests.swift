import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing

/// convTranspose: the fast path (GEMM into columns + col2im) against the scalar scatter reference.
enum ConvTransposeCase: String, CaseIterable, CustomTestStringConvertible {
    case upsample2x2, stride2Pads, outputPadding, dilation2, groups2, depthwise, asymmetricPads, relu, noBias, stride3x2
    /// Big enough that the columns are computed in blocks of input rows (`Fast.convTransposeBlockRows`).
    case blocks

    var testDescription: String { rawValue }

    func build() -> (Model, Tensor) {
        var g = GraphBuilder(seed: UInt64(Self.allCases.firstIndex(of: self)! + 101), input: [-1, 5, 6, 8])
        var inShape = [2, 5, 6, 8]
        let cin = 8
        var (ocg, k, strides, dilations, pads, groups) = (6, (3, 3), [1, 1], [1, 1], [0, 0, 0, 0], 1)
        var extra: [Int]?, act: Activation?, bias = true
        switch self {
        case .upsample2x2: (ocg, k, strides) = (5, (2, 2), [2, 2])
        case .stride2Pads: (strides, pads) = ([2, 2], [1, 1, 1, 1])
        case .outputPadding: (strides, pads, extra) = ([2, 2], [1, 1, 1, 1], [1, 1])
        case .dilation2: (dilations, pads) = ([2, 2], [1, 0, 2, 1])
        case .groups2: (ocg, groups, strides) = (3, 2, [2, 1])
        case .depthwise: (ocg, groups, k, strides) = (1, 8, (4, 4), [2, 2])
        case .asymmetricPads: (k, pads) = ((3, 2), [0, 1, 2, 0])
        case .relu: (strides, act) = ([2, 2], .relu)
        case .noBias: (k, bias) = ((1, 3), false)
        case .stride3x2: (strides, extra, pads) = ([3, 2], [2, 1], [1, 0, 0, 1])
        case .blocks:
            inShape = [1, 40, 64, 8]; g.inputs[0].shape = [-1, 40, 64, 8]
            (ocg, k, strides, pads) = (64, (4, 4), [2, 2], [1, 1, 1, 1])
        }
        let scale = 1 / Float(k.0 * k.1 * cin / groups).squareRoot()
        var ins = ["x", g.constant([cin, k.0, k.1, ocg], -scale, scale)]
        if bias { ins.append(g.constant([ocg * groups], -0.2, 0.2)) }
        var attrs = Attributes(strides: strides, dilations: dilations, pads: pads, groups: groups, activation: act)
        attrs.outputPadding = extra
        let out = g.node(.convTranspose, ins, attrs)
        return (g.model(outputs: [out]), g.input(inShape))
    }
}

@Suite struct ConvTransposeTests {
    @Test(arguments: ConvTransposeCase.allCases)
    func fastMatchesReference(_ c: ConvTransposeCase) throws {
        let (model, input) = c.build()
        let name = model.metadata.graph!.outputs[0]
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, ["x": input], threads: threads)
            let f = try #require(fast[name]), r = try #require(ref[name])
            assertClose(f, r, rtol: fastTolerance, atol: fastTolerance, "\(c) with \(threads) threads")
        }
    }

    /// Output rows split across threads give the same bits as one thread.
    @Test(arguments: [ConvTransposeCase.blocks, .groups2])
    func splitAcrossThreadsIsBitIdentical(_ c: ConvTransposeCase) throws {
        let (model, input) = c.build()
        let name = model.metadata.graph!.outputs[0]
        let a = try #require(try Engine(model: model, threads: 1).run(["x": input])[name])
        let b = try #require(try Engine(model: model, threads: 2).run(["x": input])[name])
        #expect(a.data.map(\.bitPattern) == b.data.map(\.bitPattern), "\(c)")
    }

    /// The output sizes: (H − 1)·s + (K − 1)·d + 1 − pads + outputPadding.
    @Test func outputShapes() throws {
        let expected: [ConvTransposeCase: [Int]] = [
            .upsample2x2: [2, 10, 12, 5], .stride2Pads: [2, 9, 11, 6], .outputPadding: [2, 10, 12, 6], .dilation2: [2, 6, 9, 6],
            .groups2: [2, 11, 8, 6], .depthwise: [2, 12, 14, 8], .stride3x2: [2, 16, 13, 6], .blocks: [1, 80, 128, 64],
        ]
        for (c, shape) in expected {
            let (model, input) = c.build()
            let out = try #require(try Engine(model: model, threads: 1).run(["x": input])[model.metadata.graph!.outputs[0]])
            #expect(out.shape == shape, "\(c)")
        }
    }

    /// A 3×3 input 0…8 through a 3×3 kernel of ones at stride 2 (onnxruntime's output, checked by hand): each output
    /// pixel sums the inputs whose window covers it.
    @Test func stride2OnesKernelGivesTheScatterSums() throws {
        let w = StoredTensor(name: "w", tensor: Tensor(shape: [1, 3, 3, 1], data: [Float](repeating: 1, count: 9)))
        let node = Node(name: "ct", op: .convTranspose, inputs: ["x", "w"], outputs: ["y"], attributes: Attributes(strides: [2, 2]))
        var meta = ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "x", shape: [1, 3, 3, 1])], outputs: ["y"], nodes: [node]))
        meta.name = "ct"
        let model = Model(metadata: meta, tensors: [w])
        let x = Tensor(shape: [1, 3, 3, 1], data: (0..<9).map(Float.init))
        for mode in [Engine.Mode.fast, .reference] {
            let y = try #require(try Engine(model: model, threads: 1, mode: mode).run(["x": x])["y"])
            #expect(y.shape == [1, 7, 7, 1])
            #expect(Array(y.data[0..<7]) == [0, 0, 1, 1, 3, 2, 2], "\(mode)")
            #expect(Array(y.data[14..<21]) == [3, 3, 8, 5, 12, 7, 7], "\(mode)")
            #expect(Array(y.data[42..<49]) == [6, 6, 13, 7, 15, 8, 8], "\(mode)")
        }
    }

    @Test func refusesGroupsNotDividingTheChannels() throws {
        var g = GraphBuilder(seed: 1, input: [-1, 4, 4, 6])
        let w = g.constant([6, 3, 3, 2])
        g.node(.convTranspose, ["x", w], Attributes(groups: 4), name: "ct")
        #expect(throws: EngineError.self) { try Engine(model: g.model(outputs: ["ct:0"]), threads: 1) }
    }
}
