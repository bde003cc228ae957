import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Core ML's recurrent layers and ops (Tests/Fixtures/coreml/make_recurrent_fixtures.py: torch 2.15 + coremltools
/// 9.0): MIL `lstm` (one layer; two bidirectional layers), `rnn` and `gru`; the NeuralNetwork uniDirectionalLSTM
/// (reversed, with its final states; with peepholes, forgetBias, hard-sigmoid gates and coupled input and forget
/// gates), biDirectionalLSTM, gru (also with its initial state as a model input) and simpleRecurrent layers; a
/// bidirectional MIL lstm with h0 and c0 as model inputs and its final states as outputs — each matching torch (torch's modules, or Core ML's
/// equations in torch ops where torch has no such layer) on rows of the camera photo, fast and reference kernels.
@Suite struct CoreMLRecurrentTests {
    /// `states`: initial states given as model inputs (<case>.<input>.in.f32), by input name.
    struct Case: Decodable { let model: String; let shape: [Int]; let time_major: Bool?; let states: [String: [Int]]?; let outputs: [String: [Int]] }
    struct Refused: Decodable { let model: String; let op: String }
    struct RefusedLayer: Decodable { let model: String; let layer: String; let field: String }
    struct Flexible: Decodable { let model: String; let lengths: [Int]; let range: [Int]; let outputs: Int }
    struct Manifest: Decodable {
        let torch: String; let coremltools: String; let input: String; let cases: [String: Case]; let refused: Refused; let refused_layer: RefusedLayer
        let flexible: Flexible
    }

    static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: CoreMLFixtures.path("manifest_recurrent.json"))))
    }

    /// The case's input from the camera rows (B, T, 16): batch-major as is, time-major transposed, the
    /// NeuralNetwork's [T, 1, 16, 1, 1] the first sequence.
    static func input(_ c: Case, _ m: Manifest) throws -> Tensor {
        let rows = try CoreMLFixtures.floats(m.input, shape: [2, 10, 16])
        if c.shape.count == 5 { return Tensor(shape: c.shape, data: Array(rows.data[0..<160])) }
        guard c.time_major == true else { return rows }
        return Tensor(shape: [10, 2, 16], data: (0..<320).map { i in rows.data[((i / 16) % 2) * 160 + (i / 32) * 16 + i % 16] })
    }

    /// Within 1e-4 of each output's range (its largest |value|). Measured on the 2-core AVX2 machine (December
    /// 2026): at most 6.3e-7 of the range (mil_rnn, reference kernels) over every case, output and kernel mode.
    @Test(arguments: ["mil_lstm", "mil_lstm2_bi", "mil_rnn", "mil_gru", "mil_lstm_state", "nn_lstm", "nn_bilstm", "nn_gru", "nn_rnn",
                      "nn_lstm_peephole", "nn_gru_state"])
    func recurrentModelMatchesTorch(_ name: String) throws {
        let m = try Self.manifest()
        let c = try #require(m.cases[name])
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(c.model))
        let graph = try #require(model.metadata.graph)
        #expect(graph.inputs.first?.shape == c.shape, "\(name): \(graph.inputs)")
        #expect(Set(graph.outputs) == Set(c.outputs.keys), "\(name): \(graph.outputs)")
        var feed = [graph.inputs[0].name: try Self.input(c, m)]
        for (state, shape) in c.states ?? [:] { feed[state] = try CoreMLFixtures.floats("\(name).\(state).in.f32", shape: shape) }
        #expect(Set(graph.inputs.map(\.name)) == Set(feed.keys), "\(name): \(graph.inputs)")
        for mode in [Engine.Mode.fast, .reference] {
            let engine = try Engine(model: model, threads: 1, mode: mode)
            let got = try engine.run(feed, outputs: graph.outputs)
            for (output, shape) in c.outputs {
                let expected = try CoreMLFixtures.floats("\(name).\(output).f32", shape: shape)
                let y = try #require(got[output])
                #expect(y.shape == shape, "\(name) \(output): \(y.shape)")
                let range = Double(expected.data.map(abs).max() ?? 1)
                print("CoreMLRecurrentTests: \(name) \(output) \(mode): max error \(Closeness.ratio(y.data, expected.data, atol: range)) of the output range")
                assertClose(y.data, expected.data, atol: 1e-4 * range, "\(name) \(output) \(mode)")
            }
        }
    }

    /// A bidirectional LSTM whose sequence length is a RangeDim 2…32: one import keeps the length free and matches
    /// torch at lengths 10 (the default) and 4 (measured: at most 1.6e-7 of the range), fast and reference kernels.
    @Test func flexibleLengthRunsFromOneImport() throws {
        let m = try Self.manifest(), c = m.flexible
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(c.model))
        let graph = try #require(model.metadata.graph)
        #expect(graph.inputs.first?.shape == [1, -1, 16] && graph.inputs.first?.dimensionRanges?[1] == c.range, "\(graph.inputs)")
        let rows = try CoreMLFixtures.floats(m.input, shape: [2, 10, 16])
        for mode in [Engine.Mode.fast, .reference] {
            let engine = try Engine(model: model, threads: 1, mode: mode)
            for n in c.lengths {
                let x = Tensor(shape: [1, n, 16], data: Array(rows.data[0..<(n * 16)]))
                let expected = try CoreMLFixtures.floats("mil_lstm_flexible.L\(n).y.f32", shape: [1, n, c.outputs])
                let y = try #require(try engine.run([graph.inputs[0].name: x], outputs: graph.outputs)[graph.outputs[0]])
                #expect(y.shape == expected.shape, "L=\(n): \(y.shape)")
                let range = Double(expected.data.map(abs).max() ?? 1)
                print("CoreMLRecurrentTests: flexible L=\(n) \(mode): max error \(Closeness.ratio(y.data, expected.data, atol: range)) of the output range")
                assertClose(y.data, expected.data, atol: 1e-4 * range, "flexible L=\(n) \(mode)")
            }
        }
    }

    /// torch's nn.GRU is written by coremltools as a while_loop of gathers and linears (its GRU differs from MIL's
    /// `gru`): the import is refused naming the loop.
    @Test func torchGRUIsRefusedNamingItsLoop() throws {
        let r = try Self.manifest().refused
        do {
            _ = try CoreMLImporter.importModel(path: CoreMLFixtures.path(r.model))
            Issue.record("\(r.model) imported")
        } catch let ImportError.unsupported(_, ops) {
            #expect(ops.map(\.op) == [r.op], "\(ops)")
        }
    }

    /// An LSTM whose initial states are model inputs: its cell clip (which the IR does not do) might bind, so the
    /// import is refused naming the layer and the field.
    @Test func unprovableCellClipIsRefusedNamingTheField() throws {
        let r = try Self.manifest().refused_layer
        do {
            _ = try CoreMLImporter.importModel(path: CoreMLFixtures.path(r.model))
            Issue.record("\(r.model) imported")
        } catch let ImportError.refused(_, place, reason) {
            #expect(place == "layer '\(r.layer)' (uniDirectionalLSTM)" && reason.hasPrefix(r.field + " 50000"), "\(place): \(reason)")
        }
    }

    /// Damaged recurrent models never trap: every 61st prefix of the NeuralNetwork biDirectionalLSTM is a data
    /// error, and single flipped bytes (every 29th byte of it, every 37th of the two-layer MIL lstm program) either
    /// import or throw an ImportError (sizes, gate counts and states checked before anything is read).
    @Test func damagedRecurrentModelsNeverTrap() throws {
        let dir = NSTemporaryDirectory() + "mltool-coreml-rnn-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: CoreMLFixtures.path("nn_bilstm.mlmodel")))
        let path = dir + "/cut.mlmodel"
        for n in stride(from: 1, to: bytes.count, by: 61) {
            try bytes.prefix(n).write(to: URL(fileURLWithPath: path))
            #expect(throws: ImportError.self, "a \(n)-byte prefix") { try CoreMLImporter.importModel(path: path) }
        }
        func flips(_ original: Data, every step: Int, at file: String, importing model: String) throws {
            for i in stride(from: 0, to: original.count, by: step) {
                var b = original
                b[i] ^= 0x5A
                try b.write(to: URL(fileURLWithPath: file))
                do { _ = try CoreMLImporter.importModel(path: model) } catch is ImportError {} catch { Issue.record("byte \(i) flipped: \(error)") }
            }
        }
        try flips(bytes, every: 29, at: path, importing: path)
        let package = dir + "/bi.mlpackage", spec = package + "/Data/com.apple.CoreML/model.mlmodel"
        try FileManager.default.copyItem(atPath: CoreMLFixtures.path("mil_lstm2_bi.mlpackage"), toPath: package)
        try flips(try Data(contentsOf: URL(fileURLWithPath: spec)), every: 37, at: spec, importing: package)
    }

    /// Core ML's gate orders onto ONNX's: MIL lstm i, f, o, z → i, o, f, z; gru r, o, z → z, r, h.
    @Test func gatesAreReordered() {
        #expect(CoreMLRecurrence.reordered([0, 0, 1, 1, 2, 2, 3, 3], [0, 2, 1, 3], size: 2) == [0, 0, 2, 2, 1, 1, 3, 3])
        #expect(CoreMLRecurrence.reordered([10, 20, 30], [2, 0, 1], size: 1) == [30, 10, 20])
    }

    /// Clipping the cell state (which the IR does not do) is accepted only where it cannot bind: sigmoid gates and
    /// a bounded candidate grow |c| by at most 1 a step, so max |c_0| + T ≤ the threshold proves it.
    @Test func cellClipIsAcceptedOnlyWhereItCannotBind() {
        var rec = CoreMLRecurrence(cell: .lstm, input: 4, hidden: 3)
        rec.functions = [(.sigmoid, 0, 0), (.tanh, 0, 0), (.tanh, 0, 0)]
        #expect(rec.cellClipIsInert(50, steps: 10, start: 0))
        #expect(rec.cellClipIsInert(50, steps: 40, start: 10))
        #expect(!rec.cellClipIsInert(50, steps: 41, start: 10))
        #expect(!rec.cellClipIsInert(50, steps: -1, start: 0), "a flexible length proves nothing")
        #expect(!rec.cellClipIsInert(50, steps: 10, start: nil), "a computed initial state proves nothing")
        rec.functions[1] = (.relu, 0, 0)
        #expect(!rec.cellClipIsInert(50_000, steps: 10, start: 0), "an unbounded candidate")
        rec.functions[1] = (.tanh, 0, 0)
        rec.functions[0] = (.affine, 1, 0)
        #expect(!rec.cellClipIsInert(50_000, steps: 10, start: 0), "unbounded gates")
    }
}
