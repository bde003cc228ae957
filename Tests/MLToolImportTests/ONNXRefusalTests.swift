import Foundation
import MLToolCore
import MLToolEngine
import Testing
@testable import MLToolImport

/// Files the importer must refuse, each with its exact message and exit status 65 (data error).
@Suite struct ONNXRefusalTests {
    static func message(_ path: String) -> (String, MLToolCore.ExitStatus)? {
        do {
            _ = try ONNXImporter.importModel(path: path, options: ImportOptions())
            return nil
        } catch let e as ImportError {
            return (e.description, e.exitStatus)
        } catch {
            return ("\(type(of: error)): \(error)", .software)
        }
    }

    static func expectRefusal(_ path: String, _ expected: String) {
        let got = message(path)
        #expect(got?.0 == expected)
        #expect(got?.1 == .dataError)
    }

    @Test func externalDataDotDot() {
        let p = ONNXFixtures.path("external/dotdot.onnx")
        Self.expectRefusal(p, "\(p): initializer 'w' external_data location '../x': refused: '..' leaves the model's directory")
    }

    @Test func externalDataAbsolute() {
        let p = ONNXFixtures.path("external/absolute.onnx")
        Self.expectRefusal(p, "\(p): initializer 'w' external_data location '/etc/passwd': refused: absolute path (external data must be inside the model's directory)")
    }

    @Test func externalDataSymlinkLeavingTheDirectory() {
        let p = ONNXFixtures.path("external/symlink.onnx")
        Self.expectRefusal(p, "\(p): initializer 'w' external_data location 'link.bin': refused: 'link.bin' is a symbolic link (links are never followed out of the model's directory)")
    }

    @Test func externalDataHardLinkedIsRefused() throws {
        let dir = NSTemporaryDirectory() + "mltool-onnx-hardlink-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/model", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["ok.onnx", "weights.bin"] {
            try FileManager.default.copyItem(atPath: ONNXFixtures.path("external/" + name), toPath: dir + "/model/" + name)
        }
        // The same bytes under a second name outside the model's directory.
        try FileManager.default.linkItem(atPath: dir + "/model/weights.bin", toPath: dir + "/outside.bin")
        let p = dir + "/model/ok.onnx"
        Self.expectRefusal(p, "\(p): initializer 'w' external_data location 'weights.bin': refused: the file has 2 hard links (a file with more than one name may live outside the model's directory)")
    }

    @Test func externalDataPastTheEndOfItsFile() {
        let p = ONNXFixtures.path("external/past_end.onnx")
        Self.expectRefusal(p, "\(p): initializer 'w' external_data 'weights.bin': expected offset 32 + length 24 ≤ file size, found file size 40")
    }

    @Test func externalDataInsideTheDirectoryIsRead() throws {
        let m = try ONNXImporter.importModel(path: ONNXFixtures.path("external/ok.onnx"), options: ImportOptions())
        let w = try #require(m.tensors.first)
        #expect(w.shape == [1, 6])
        #expect(try w.floats() == [0, 1, 2, 3, 4, 5])
    }

    @Test func stringGraphInput() {
        let p = ONNXFixtures.path("string_input.onnx")
        Self.expectRefusal(p, "\(p): graph input 'ids': expected a number or bool element type (mltool computes in float32), found string")
    }

    /// Integer inputs and outputs are carried as float32 values: int64 ids added to themselves give their doubles.
    @Test func int64GraphInputRunsAsFloat32Values() throws {
        let model = try ONNXImporter.importModel(path: ONNXFixtures.path("int64_input.onnx"), options: ImportOptions())
        let ids = Tensor(shape: [2, 4], data: [0, 1, 2, 3, -4, 5, 1_048_576, 7] as [Float])
        let y = try #require(try Engine(model: model, threads: 1).run(["ids": ids], outputs: ["y"])["y"])
        #expect(y.data == ids.data.map { $0 * 2 })
    }

    @Test func quantizeLinearOnAnActivationIsComputed() throws {
        // Once refused (QuantizeLinear only folded on constants); now an IR quantize step (ONNXQuantizedTests checks
        // its values against onnxruntime).
        let m = try ONNXImporter.importModel(path: ONNXFixtures.path("quantize_activation.onnx"), options: ImportOptions())
        #expect(m.metadata.graph?.nodes.map(\.op).contains(.quantize) == true)
    }

    @Test func dequantizeLinearWithAScalePerWrongAxis() {
        let p = ONNXFixtures.path("dequantize_bad_scales.onnx")
        Self.expectRefusal(p, "\(p): node 'dq' (DequantizeLinear) scale: expected 3 values (axis 1 of [4, 3]), found [5]")
    }

    /// LSTM, GRU and RNN layers whose weights or attributes are wrong (Tests/Fixtures/onnx/make_recurrent.py).
    @Test(arguments: [
        ("computed_w", "node 'rnn' (LSTM): expected W as a constant (initializer), found computed tensor 'W'"),
        ("hidden_size", "node 'rnn' (LSTM) hidden_size: expected 4 (from R), found 5"),
        ("w_rows", "node 'rnn' (LSTM) W: expected shape (1, 16, input_size), found [1, 12, 3]"),
        ("bias_length", "node 'rnn' (LSTM) B: expected shape [1, 32], found [1, 30]"),
        ("activation", "node 'rnn' (GRU) activations: expected one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
            + "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus, found 'Swish'"),
        ("activation_count", "node 'rnn' (RNN) activations: expected 1 function (1 direction), found [\"Tanh\", \"Tanh\", \"Relu\"]"),
        ("direction", "node 'rnn' (RNN) direction: expected forward, reverse or bidirectional, found 'backward'"),
        ("layout", "node 'rnn' (GRU) layout: expected 0 or 1, found 2"),
    ])
    func invalidRecurrentLayer(file: String, message: String) {
        let p = ONNXFixtures.path("recurrent/bad_\(file).onnx")
        Self.expectRefusal(p, "\(p): " + message)
    }

    @Test func everyUnsupportedOpAtOnce() {
        let p = ONNXFixtures.path("unsupported.onnx")
        Self.expectRefusal(p, """
            \(p): 6 nodes of 3 unsupported types:
              Det ×4 ('det1', 'det2', 'det3', …)
              NonZero ×1 ('nonzero')
              com.example.Custom ×1 ('mine')
            """)
    }

    @Test func garbageFile() throws {
        let p = try Self.temporaryFile("garbage.onnx", Array("this is a text file, not a model\n".utf8))
        Self.expectRefusal(p, "\(p): not a valid model: not an ONNX protobuf: byte 0, ModelProto.metadata_props[0]: wire type 4 (group end) is not supported")
    }

    @Test func emptyFile() throws {
        let p = try Self.temporaryFile("empty.onnx", [])
        Self.expectRefusal(p, "\(p): not a valid model: the file is empty")
    }

    @Test func missingFileIsNoInput() {
        let got = Self.message("/nonexistent/model.onnx")
        #expect(got?.0 == "/nonexistent/model.onnx: cannot read: no such file")
        #expect(got?.1 == .noInput)
    }

    @Test func truncatedFile() throws {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: ONNXFixtures.path("residual_cnn.onnx"))))
        let p = try Self.temporaryFile("truncated.onnx", Array(bytes[..<(bytes.count - 100)]))
        Self.expectRefusal(p, "\(p): not a valid model: not an ONNX protobuf: byte 20, ModelProto.graph: a length of \(bytes.count - 28) bytes runs past the end of its message at byte \(bytes.count - 100) (\(bytes.count - 122) bytes are left)")
    }

    /// Every prefix of a real model must throw a clean ImportError (never crash, never import).
    @Test func everyPrefixOfAModelIsRefused() throws {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: ONNXFixtures.path("mlp_opset9.onnx"))))
        var failures: [Int] = []
        for n in stride(from: 0, to: bytes.count, by: 7) {
            let p = try Self.temporaryFile("prefix.onnx", Array(bytes[..<n]))
            if let (_, status) = Self.message(p), status == .dataError { continue }
            failures.append(n)
        }
        #expect(failures.isEmpty, "prefixes that imported or failed badly: \(failures)")
    }

    /// What a corrupted file may do: be refused by the importer with an ImportError naming the file, or import to a
    /// model that the engine either runs (to outputs of the right shapes) or refuses with an EngineError.
    enum CorruptionOutcome: String, CaseIterable {
        case refused = "refused at import", ran = "imported and ran", engineRefused = "imported, engine refused"
    }

    /// Seeded random byte corruptions of real models: each outcome must be one of `CorruptionOutcome` (never a trap,
    /// another error type, a message without the file, or an output of another shape), and both a clean refusal and
    /// a correct load must occur among the 150 rounds.
    @Test(arguments: ["residual_cnn.onnx", "flatten_nchw.onnx", "softmax_legacy.onnx", "qdq_weights.onnx", "pytorch/torch_residual_cnn.onnx"])
    func corruptedBytesAreRefusedOrLoadCorrectly(model: String) throws {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: ONNXFixtures.path(model))))
        let original = try ONNXImporter.importModel(path: ONNXFixtures.path(model), options: ImportOptions())
        let shapes = try Engine.outputShapes(model: original)
        var rng = SplitMix64(seed: 0x0BAD_F11E)
        var outcomes: [CorruptionOutcome: Int] = [:], bad: [String] = []
        for round in 0..<150 {
            var b = bytes
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let i = Int(rng.next() % UInt64(b.count))
                b[i] = round % 3 == 0 ? UInt8(truncatingIfNeeded: rng.next()) : b[i] ^ (1 << UInt8(rng.next() % 8))
            }
            let p = try Self.temporaryFile("corrupt-\(model.replacingOccurrences(of: "/", with: "_"))", b)
            let imported: Model
            do {
                imported = try ONNXImporter.importModel(path: p, options: ImportOptions())
            } catch let e as ImportError {
                if e.description.hasPrefix(p + ": ") { outcomes[.refused, default: 0] += 1 } else { bad.append("round \(round): '\(e)' does not name the file") }
                continue
            } catch {
                bad.append("round \(round): import threw \(type(of: error)): \(error)")
                continue
            }
            do {
                let engine = try Engine(model: imported, threads: 1)
                var feeds: [String: Tensor] = [:]
                for name in engine.inputNames { feeds[name] = Tensor(zeros: try #require(engine.inputShape(name, batch: 1))) }
                let out = try engine.run(feeds)
                let got = out.mapValues(\.shape), want = shapes.filter { out[$0.key] != nil }
                if got == want && got.count == shapes.count {
                    outcomes[.ran, default: 0] += 1
                } else {
                    bad.append("round \(round): imported with outputs \(got), the original has \(shapes)")
                }
            } catch is EngineError {
                outcomes[.engineRefused, default: 0] += 1
            } catch {
                bad.append("round \(round): the engine threw \(type(of: error)): \(error)")
            }
        }
        print("\(model) corruptions: " + CorruptionOutcome.allCases.map { "\($0.rawValue) \(outcomes[$0] ?? 0)" }.joined(separator: ", "))
        #expect(bad.isEmpty, "\(bad.count) bad outcomes:\n\(bad.prefix(10).joined(separator: "\n"))")
        #expect((outcomes[.refused] ?? 0) > 0, "no corruption of \(model) was refused")
        #expect((outcomes[.ran] ?? 0) > 0, "no corruption of \(model) loaded and ran")
    }

    static func temporaryFile(_ name: String, _ bytes: [UInt8]) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mltool-onnx-tests-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }
}
