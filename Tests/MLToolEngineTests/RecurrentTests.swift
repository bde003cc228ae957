import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing

/// One small recurrent layer per setting the kernels branch on: its nodes for every output it has.
enum RecurrentCase: String, CaseIterable, CustomTestStringConvertible {
    case lstmForward, lstmPeepholesStates, lstmBidirectionalLengths, lstmReverseClipInputForget
    case gruForward, gruBidirectionalLengths, gruLinearBeforeReset, gruReverseStates
    case rnnForward, rnnBidirectionalRelu
    /// Every function ONNX allows (with α, β), over a GRU and an RNN.
    case gruOptionalFunctions, rnnOptionalFunctions, lstmOptionalFunctions

    var testDescription: String { rawValue }

    var op: Op { rawValue.hasPrefix("lstm") ? .lstm : rawValue.hasPrefix("gru") ? .gru : .rnn }
    var gates: Int { op == .lstm ? 4 : op == .gru ? 3 : 1 }
    var directions: Int { [.lstmBidirectionalLengths, .gruBidirectionalLengths, .rnnBidirectionalRelu].contains(self) ? 2 : 1 }
    var outputs: [String] { op == .lstm ? ["y", "h", "c"] : ["y", "h"] }
    static let steps = 5, batch = 3, inputSize = 6, hidden = 7

    /// The model (one node per output) and its inputs: x (T, B, I) and, where the case has them, initial states.
    func build() -> (Model, [String: Tensor]) {
        let (t, b, i, h, d, g) = (Self.steps, Self.batch, Self.inputSize, Self.hidden, directions, gates)
        var builder = GraphBuilder(seed: UInt64(Self.allCases.firstIndex(of: self)! + 100), input: [t, b, i])
        let scale = 1 / Float(h).squareRoot()
        var ins = ["x", builder.constant([d, g * h, i], -scale, scale), builder.constant([d, g * h, h], -scale, scale),
                   builder.constant([d, 2 * g * h], -0.3, 0.3)]
        if op == .lstm { ins.append(builder.constant([d, 3 * h], -0.5, 0.5)) }
        var a = Attributes()
        var feeds: [String: Tensor] = [:]
        switch self {
        case .lstmPeepholesStates, .gruReverseStates:
            for s in op == .lstm ? ["h", "c"] : ["h"] {
                builder.inputs.append(GraphInput(name: "\(s)0", shape: [d, b, h]))
                feeds["\(s)0"] = builder.input([d, b, h])
                ins.append("\(s)0")
            }
            a.initialStates = op == .lstm ? ["h", "c"] : ["h"]
            if self == .gruReverseStates { a.direction = "reverse" }
        case .lstmBidirectionalLengths, .gruBidirectionalLengths:
            a.direction = "bidirectional"
            a.sequenceLengths = [5, 2, 0]
        case .lstmReverseClipInputForget:
            a.direction = "reverse"; a.clip = 0.4; a.inputForget = true
        case .gruLinearBeforeReset:
            a.linearBeforeReset = true
        case .rnnBidirectionalRelu:
            a.direction = "bidirectional"; a.activations = ["Relu", "Tanh"]; a.activationAlpha = [0, 0]; a.activationBeta = [0, 0]
            a.sequenceLengths = [3, 5, 1]
        case .gruOptionalFunctions:
            a.activations = ["HardSigmoid", "ScaledTanh"]; a.activationAlpha = [0.3, 0.9]; a.activationBeta = [0.45, 1.2]
        case .rnnOptionalFunctions:
            a.activations = ["Elu"]; a.activationAlpha = [0.7]; a.activationBeta = [0]
        case .lstmOptionalFunctions:
            a.activations = ["Softsign", "Softplus", "LeakyRelu"]; a.activationAlpha = [0, 0, 0.1]; a.activationBeta = [0, 0, 0]
        case .lstmForward, .gruForward, .rnnForward:
            break
        }
        var names: [String] = []
        for o in outputs {
            var attrs = a
            attrs.mode = o
            names.append(builder.node(op, ins, attrs, name: "layer.\(o)"))
        }
        feeds["x"] = builder.input([t, b, i])
        return (builder.model(outputs: names), feeds)
    }
}

@Suite struct RecurrentTests {
    /// The fast kernels (SGEMMs, vectorised gate functions) against the ONNX equations, at every CPU level.
    @Test(arguments: RecurrentCase.allCases)
    func fastMatchesReferenceAtEveryLevel(_ c: RecurrentCase) throws {
        let (model, feeds) = c.build()
        let outputs = model.metadata.graph!.outputs
        try forEachCPULevel { level in
            let (fast, ref) = try bothModes(model, feeds)
            for name in outputs {
                assertClose(try #require(fast[name]), try #require(ref[name]), rtol: fastTolerance, atol: fastTolerance,
                            "\(c) \(name) at CPU level \(level)")
            }
        }
    }

    /// Shapes of the outputs: y (T, B, H, D), the states (D, B, H).
    @Test func outputShapes() throws {
        let (model, feeds) = RecurrentCase.lstmBidirectionalLengths.build()
        let out = try Engine(model: model, threads: 1).run(feeds)
        #expect(out["layer.y:0"]?.shape == [5, 3, 7, 2])
        #expect(out["layer.h:0"]?.shape == [2, 3, 7])
        #expect(out["layer.c:0"]?.shape == [2, 3, 7])
    }

    /// sequence_lens: an item's steps past its length are zeros in y; its last state is that of its last step
    /// (forward: step len − 1; reverse: step 0); an item of length 0 keeps its initial (zero) state.
    @Test func sequenceLengthsEndItemsEarly() throws {
        let (model, feeds) = RecurrentCase.lstmBidirectionalLengths.build()
        for mode in [Engine.Mode.fast, .reference] {
            let out = try Engine(model: model, threads: 1, mode: mode).run(feeds)
            let y = try #require(out["layer.y:0"]), hLast = try #require(out["layer.h:0"])
            let (b, h) = (3, 7)
            func yAt(_ t: Int, _ item: Int, _ j: Int, _ d: Int) -> Float { y.data[((t * b + item) * h + j) * 2 + d] }
            // Item 1 has 2 steps, item 2 none.
            #expect((2..<5).allSatisfy { t in (0..<h).allSatisfy { yAt(t, 1, $0, 0) == 0 && yAt(t, 1, $0, 1) == 0 } })
            #expect((0..<5).allSatisfy { t in (0..<h).allSatisfy { yAt(t, 2, $0, 0) == 0 && yAt(t, 2, $0, 1) == 0 } })
            #expect((0..<h).contains { yAt(1, 1, $0, 0) != 0 })
            // Forward state: y at step 1; reverse state: y at step 0.
            #expect((0..<h).map { hLast.data[(0 * b + 1) * h + $0] } == (0..<h).map { yAt(1, 1, $0, 0) })
            #expect((0..<h).map { hLast.data[(1 * b + 1) * h + $0] } == (0..<h).map { yAt(0, 1, $0, 1) })
            #expect((0..<h).allSatisfy { hLast.data[(0 * b + 2) * h + $0] == 0 && hLast.data[(1 * b + 2) * h + $0] == 0 })
        }
    }

    /// A streaming model: Y_h of one call fed back as initial_h of the next gives the state of one call over both
    /// chunks (Silero VAD's `state`).
    @Test func stateCarriesAcrossCalls() throws {
        let (model, feeds) = RecurrentCase.gruReverseStates.build()
        var graph = model.metadata.graph!
        // A forward GRU with an initial state: the same weights.
        for i in graph.nodes.indices { graph.nodes[i].attributes.direction = nil }
        graph.inputs[0].shape = [-1, 3, 6]   // any number of steps
        var meta = model.metadata
        meta.graph = graph
        let forward = Model(metadata: meta, tensors: model.tensors)
        let engine = try Engine(model: forward, threads: 1)
        let x = try #require(feeds["x"]), h0 = try #require(feeds["h0"])
        let (t, b, i) = (5, 3, 6)
        let whole = try engine.run(["x": x, "h0": h0])
        let first = Tensor(shape: [2, b, i], data: Array(x.data[..<(2 * b * i)]))
        let rest = Tensor(shape: [t - 2, b, i], data: Array(x.data[(2 * b * i)...]))
        let a = try engine.run(["x": first, "h0": h0])
        let second = try engine.run(["x": rest, "h0": try #require(a["layer.h:0"])])
        assertClose(try #require(second["layer.h:0"]), try #require(whole["layer.h:0"]), atol: 1e-6, "state after two calls")
    }
}
