import Foundation
import MLToolCore
import MLToolEngine
import MLToolFormat
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// TFLite files and LiteRT's outputs made by `Tests/Fixtures/tflite/fetch_mediapipe.py` (the mediapipe 0.10.21
/// wheel's models on scikit-image photos, into .build/tflite or $MLTOOL_TFLITE) and `make_tflite.py` (tiny
/// hand-built files, into <that>/tiny). Without them (no ai_edge_litert), the tests say so through `Oracles.missing`.
enum TFLiteFixtures {
    struct TensorFile: Decodable { var name: String; var shape: [Int]; var file: String }
    struct Run: Decodable { var model: String; var photo: String; var input: TensorFile; var outputs: [TensorFile] }
    struct Manifest: Decodable { var runs: [Run] }

    static let directory: String = ProcessInfo.processInfo.environment["MLTOOL_TFLITE"]
        ?? SharedDatasets.repository.appendingPathComponent(".build/tflite").path
    static let tiny = (directory as NSString).appendingPathComponent("tiny")

    static func path(_ name: String, in dir: String = directory) -> String { (dir as NSString).appendingPathComponent(name) }

    /// The manifest of `dir`, or nil after `Oracles.missing` says why.
    static func manifest(_ dir: String, script: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Manifest? {
        let p = path("manifest.json", in: dir)
        guard FileManager.default.fileExists(atPath: p) else {
            Oracles.missing("ai_edge_litert: no \(p) (python3 Tests/Fixtures/tflite/\(script); needs pip ai-edge-litert)",
                            sourceLocation: sourceLocation)
            return nil
        }
        return try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: p)))
    }

    /// A little-endian float32 C-order .npy file (numpy's format 1.0, as `np.save` writes it).
    static func npy(_ path: String) throws -> Tensor {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let bytes = [UInt8](data)
        let headerLength = Int(bytes[8]) | Int(bytes[9]) << 8
        let header = String(decoding: bytes[10..<(10 + headerLength)], as: UTF8.self)
        #expect(header.contains("'descr': '<f4'") && header.contains("'fortran_order': False"), "\(path): \(header)")
        let shapeText = header.components(separatedBy: "'shape': (")[1].components(separatedBy: ")")[0]
        let shape = shapeText.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        let start = 10 + headerLength
        let values = (0..<((bytes.count - start) / 4)).map { i -> Float in
            let k = start + 4 * i
            return Float(bitPattern: UInt32(bytes[k]) | UInt32(bytes[k + 1]) << 8 | UInt32(bytes[k + 2]) << 16 | UInt32(bytes[k + 3]) << 24)
        }
        return Tensor(shape: shape, data: values)
    }

    static func range(_ t: Tensor) -> Double { Double((t.data.max() ?? 0) - (t.data.min() ?? 0)) }

    /// Runs every run of `model` in `manifest` through one import and compares each output with LiteRT's within
    /// `tolerance(output)` of its range (of its magnitude, at least 1, when the range is 0: a one-element score);
    /// returns the worst difference relative to that per output.
    @discardableResult
    static func compare(_ model: String, manifest: Manifest, in dir: String, tolerance: (String) -> Double,
                        sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Double] {
        let runs = manifest.runs.filter { $0.model == model }
        #expect(!runs.isEmpty, "\(model): no runs in the manifest", sourceLocation: sourceLocation)
        let imported = try TFLiteImporter.importModel(path: path(model + ".tflite", in: dir.hasSuffix("tiny") ? dir : path("models", in: dir)),
                                                      options: ImportOptions())
        let engine = try Engine(model: imported, threads: 2)
        var worst: [String: Double] = [:]
        for run in runs {
            let x = try npy(path(run.input.file, in: dir))
            let got = try engine.run([run.input.name: x], outputs: run.outputs.map(\.name))
            for o in run.outputs {
                let expected = try npy(path(o.file, in: dir))
                let actual = try #require(got[o.name], sourceLocation: sourceLocation)
                #expect(actual.shape == expected.shape, "\(model) \(o.name)", sourceLocation: sourceLocation)
                // A one-element output (a score or a logit) has no range: its magnitude, at least 1, instead.
                let r = range(expected) > 0 ? range(expected) : max(Double(expected.data.map(abs).max() ?? 0), 1)
                let ratio = Closeness.ratio(actual.data, expected.data, atol: r)
                if ratio > worst[o.name] ?? 0 { worst[o.name] = ratio }
                assertClose(actual, expected, atol: tolerance(o.name) * r, "\(model) \(run.photo) \(o.name)", sourceLocation: sourceLocation)
            }
        }
        print("TFLite \(model): worst / range " + worst.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.2e", $0.value))" }.joined(separator: ", "))
        return worst
    }
}

@Suite struct TFLiteImportTests {
    // MARK: - The mediapipe models against LiteRT

    /// Every float mediapipe model that imports, on astronaut, chelsea and coffee, within just above the worst
    /// difference measured (relative to each output's range; LiteRT 2.3.0 with its default XNNPACK delegate, AMD EPYC,
    /// AVX2). pose_landmark_full's segmentation logits (Identity_2, 256×256 after a chain of RELU6 blocks and a
    /// bilinear upsampling) are ill-conditioned: LiteRT's own builtin kernels differ from its XNNPACK run by 6.2e-4 of
    /// the range there, and mltool by 8.3e-4 from the builtin ones and 1.45e-3 from XNNPACK.
    @Test(arguments: [
        ("face_detection_short_range", 2e-6), ("face_landmark", 8e-6), ("iris_landmark", 1e-6),
        ("hand_landmark_lite", 6e-6), ("hand_landmark_full", 5e-6), ("palm_detection_lite", 3e-6),
        ("palm_detection_full", 2e-6), ("pose_landmark_full", 2e-5), ("selfie_segmentation", 1e-4),
        ("selfie_segmentation_landscape", 8e-5), ("hand_recrop", 1e-6),
        ("face_detection_full_range_sparse", 1e-6), ("pose_detection", 1.5e-6),
    ])
    func mediapipeModelMatchesLiteRT(model: String, tolerance: Double) throws {
        guard let manifest = try TFLiteFixtures.manifest(TFLiteFixtures.directory, script: "fetch_mediapipe.py") else { return }
        try TFLiteFixtures.compare(model, manifest: manifest, in: TFLiteFixtures.directory,
                                   tolerance: { model == "pose_landmark_full" && $0 == "Identity_2" ? 2e-3 : tolerance })
    }

    /// The face detector's structure: its input and outputs by the file's tensor names, NHWC shapes, no constant
    /// left as an input, float16 weights folded (every model tensor float32).
    @Test func faceDetectorStructure() throws {
        let p = TFLiteFixtures.path("models/face_detection_short_range.tflite")
        guard FileManager.default.fileExists(atPath: p) else {
            Oracles.missing("ai_edge_litert: no \(p) (python3 Tests/Fixtures/tflite/fetch_mediapipe.py)")
            return
        }
        #expect(try FileKind.detect(path: p) == .tflite)
        let model = try TFLiteImporter.importModel(path: p, options: ImportOptions())
        let graph = try #require(model.metadata.graph)
        #expect(graph.inputs.map(\.name) == ["input"])
        #expect(graph.inputs.map(\.shape) == [[1, 128, 128, 3]])
        #expect(graph.outputs == ["regressors", "classificators"])
        #expect(graph.sourceLayout == "nhwc")
        #expect(model.tensors.allSatisfy { $0.dtype == .f32 })
        #expect(graph.nodes.count == 73)
        #expect(model.parameterCount == 101_390)
    }

    /// One error for every operator the table lacks, with counts: face_landmark_with_attention's MediaPipe custom
    /// ops (which LiteRT itself cannot resolve without MediaPipe's op resolver).
    @Test func attentionLandmarkModelListsItsCustomOps() throws {
        let p = TFLiteFixtures.path("models/face_landmark_with_attention.tflite")
        guard FileManager.default.fileExists(atPath: p) else {
            Oracles.missing("ai_edge_litert: no \(p) (python3 Tests/Fixtures/tflite/fetch_mediapipe.py)")
            return
        }
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(path: p, options: ImportOptions()) })
        #expect(e.description.hasPrefix("\(p): 11 nodes of 3 unsupported types:\n"), "\(e.description)")
        for op in ["CUSTOM:Landmarks2TransformMatrix ×3", "CUSTOM:TransformTensorBilinear ×3", "CUSTOM:TransformLandmarks ×5"] {
            #expect(e.description.contains("\n  \(op) ("), "\(op) in \(e.description)")
        }
        #expect(e.exitStatus == .dataError)
    }

    /// The sparse face detector's 46 float16 weights stored sparse (CSR on the input channels), made dense by DENSIFY
    /// before their DEQUANTIZE: every weight tensor of the import is dense float32 (its numbers: the LiteRT test).
    @Test func sparseWeightsAreDensified() throws {
        let p = TFLiteFixtures.path("models/face_detection_full_range_sparse.tflite")
        guard FileManager.default.fileExists(atPath: p) else {
            Oracles.missing("ai_edge_litert: no \(p) (python3 Tests/Fixtures/tflite/fetch_mediapipe.py)")
            return
        }
        let tfl = try TFLiteFile(path: p)
        #expect(tfl.subgraphs[0].tensors.filter(\.isSparse).count == 46)
        let model = try TFLiteImporter.importModel(path: p, options: ImportOptions())
        #expect(model.tensors.allSatisfy { $0.dtype == .f32 })
        #expect(model.metadata.graph?.nodes.contains { $0.op == .transpose } == true)   // DEPTH_TO_SPACE's
    }

    // MARK: - Hand-built operator cases against LiteRT

    /// ops_conv: CONV_2D SAME stride 2 + RELU6, DEPTHWISE m = 2 dilation 2 VALID, MAX_POOL SAME, RESHAPE,
    /// FULLY_CONNECTED + RELU_N1_TO_1, SOFTMAX β = 0.5; ops_elementwise: the binary ops with broadcasting and fused
    /// activations, the unary ones, CONCATENATION, PADV2, AVERAGE_POOL SAME (padding not counted), MEAN;
    /// ops_shapes: both resizes in their three coordinate modes, TRANSPOSE, SLICE, SQUEEZE, STRIDED_SLICE with masks,
    /// a negative stride and a shrunk axis, TRANSPOSE_CONV SAME stride 2 with bias.
    /// ops_int8: the full-integer chain between QUANTIZE and DEQUANTIZE; one probability is one code (1/256) off, LiteRT's
    /// int8 softmax being a table of exponentials (5.38e-3 of the range); ops_uint8: the older uint8 form (asymmetric
    /// uint8 weights, stored as int8 with the zero point moved), one of five outputs a code (0.05) off (3.9e-3).
    @Test(arguments: [("ops_conv", 1e-6), ("ops_elementwise", 1e-6), ("ops_shapes", 1e-6), ("ops_sparse", 1e-6), ("ops_int8", 6e-3),
                      ("ops_uint8", 5e-3)])
    func handBuiltOpsMatchLiteRT(file: String, tolerance: Double) throws {
        guard let manifest = try TFLiteFixtures.manifest(TFLiteFixtures.tiny, script: "make_tflite.py") else { return }
        try TFLiteFixtures.compare(file, manifest: manifest, in: TFLiteFixtures.tiny, tolerance: { _ in tolerance })
    }

    // MARK: - Refusals

    static func refusal(_ body: () throws -> Model) -> ImportError? {
        do {
            _ = try body()
            Issue.record("imported, expected a refusal")
            return nil
        } catch let e as ImportError {
            return e
        } catch {
            Issue.record("\(type(of: error)): \(error)")
            return nil
        }
    }

    static func tinyPath(_ name: String) -> String? {
        let p = TFLiteFixtures.path(name, in: TFLiteFixtures.tiny)
        guard FileManager.default.fileExists(atPath: p) else {
            Oracles.missing("ai_edge_litert: no \(p) (python3 Tests/Fixtures/tflite/make_tflite.py)")
            return nil
        }
        return p
    }

    @Test func unsupportedOpsAreListedAtOnce() throws {
        guard let p = Self.tinyPath("unsupported.tflite") else { return }
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(path: p, options: ImportOptions()) })
        #expect(e.description == "\(p): 4 nodes of 3 unsupported types:\n  SPACE_TO_DEPTH ×1 ('s2d')\n  FLOOR ×2 ('floor', 'floor2')\n  CUSTOM:MyOp ×1 ('custom')")
        #expect(e.exitStatus == .dataError)
    }

    /// int16 activations (16x8 quantization) are still refused, naming the first such tensor.
    @Test func int16ActivationsAreRefused() throws {
        guard let p = Self.tinyPath("int16.tflite") else { return }
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(path: p, options: ImportOptions()) })
        #expect(e.description == "\(p): tensor 1 'quantized16' (int16): refused: quantized int16 activations are not supported (int8 and uint8 are)")
    }

    @Test func bufferIndexOutOfRangeIsRefused() throws {
        guard let p = Self.tinyPath("buffer_index.tflite") else { return }
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(path: p, options: ImportOptions()) })
        #expect(e.description == "\(p): tensor 1 'conv' buffer: expected an index below 8, found 99")
    }

    /// A sparse weight whose compressed column index lies past its row: refused naming the tensor and the level.
    @Test func sparseIndexOutOfRangeIsRefused() throws {
        guard let p = Self.tinyPath("sparse_bad_index.tflite") else { return }
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(path: p, options: ImportOptions()) })
        #expect(e.description == "\(p): tensor 2 'conv_w_sparse' sparsity array_indices of level 3: expected indices below 3, found 7")
    }

    // MARK: - Hostile bytes

    static func tinyBytes() throws -> [UInt8]? {
        guard let p = tinyPath("ops_conv.tflite") else { return nil }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: p)))
    }

    static func patch32(_ bytes: inout [UInt8], at: Int, _ value: UInt32) {
        for k in 0..<4 { bytes[at + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(k))) }
    }

    /// Every prefix of a valid file is refused with an ImportError naming a byte offset (never a crash).
    @Test func everyTruncationIsRefused() throws {
        guard let bytes = try Self.tinyBytes() else { return }
        var refused = 0
        for n in 0..<bytes.count {
            guard let e = Self.refusal({ try TFLiteImporter.importModel(bytes: Array(bytes[..<n]), file: "t.tflite") }) else { continue }
            #expect(e.description.hasPrefix("t.tflite: byte "), "prefix \(n): \(e.description)")
            refused += 1
        }
        #expect(refused == bytes.count)
    }

    @Test func rootOffsetPastTheEnd() throws {
        guard var bytes = try Self.tinyBytes() else { return }
        Self.patch32(&bytes, at: 0, 0xFFFF_FF00)
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(bytes: bytes, file: "t.tflite") })
        #expect(e.description == "t.tflite: byte 0: Model root offset: expected an offset to a position inside the file's \(bytes.count) bytes, found position \(0xFFFF_FF00)")
    }

    @Test func vtableOffsetOutOfRange() throws {
        guard var bytes = try Self.tinyBytes() else { return }
        let root = try FlatBuffer(bytes: bytes, file: "t.tflite").root("Model").position
        Self.patch32(&bytes, at: root, UInt32(bitPattern: -0x7000_0000))
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(bytes: bytes, file: "t.tflite") })
        #expect(e.description == "t.tflite: byte \(root): Model vtable offset: expected a vtable inside the file's \(bytes.count) bytes, found soffset -1879048192 (position \(root + 0x7000_0000))")
    }

    @Test func vectorLengthPastTheEnd() throws {
        guard var bytes = try Self.tinyBytes() else { return }
        let fb = FlatBuffer(bytes: bytes, file: "t.tflite")
        let model = try fb.root("Model")
        // The buffers vector (Model slot 4): its length word, set past the end of the file.
        let field = try #require(try fb.field(model, 4, size: 4, "buffers"))
        let header = try fb.follow(field, "buffers")
        Self.patch32(&bytes, at: header, 0x0FFF_FFFF)
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(bytes: bytes, file: "t.tflite") })
        #expect(e.description == "t.tflite: byte \(header): Model.buffers length: expected \(0x0FFF_FFFF) × 4 bytes inside the file's \(bytes.count), found \(bytes.count - header - 4) left")
    }

    @Test func wrongIdentifierIsRefused() throws {
        guard var bytes = try Self.tinyBytes() else { return }
        bytes[4] = UInt8(ascii: "X")
        #expect(FileKind.detect(bytes: bytes) != .tflite)
        let e = try #require(Self.refusal { try TFLiteImporter.importModel(bytes: bytes, file: "t.tflite") })
        #expect(e.description == "t.tflite: byte 4: file identifier: expected \"TFL3\", found \"XFL3\"")
    }

    @Test func fileKindRecognisesTFLite() throws {
        guard let bytes = try Self.tinyBytes() else { return }
        #expect(FileKind.detect(bytes: bytes) == .tflite)
        // The identifier alone, with a root offset outside the file, is not taken for TFLite.
        #expect(FileKind.detect(bytes: [0xFF, 0xFF, 0, 0] + Array("TFL3".utf8)) != .tflite)
    }
}
