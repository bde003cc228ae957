import Foundation
import MLToolCore
import Testing
@testable import MLToolImport

/// The wire walk that runs before protobuf-c: it must refuse exactly what protobuf-c refuses (plus nesting past
/// the depth limit), and say where.
@Suite struct ProtobufWireTests {
    static func bytes(_ path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }

    static let fixtures: [(String, ProtobufWire.Schema)] = [
        (ONNXFixtures.path("mlp_opset9.onnx"), .onnxModel), (ONNXFixtures.path("residual_cnn.onnx"), .onnxModel),
        (ONNXFixtures.path("qdq_weights.onnx"), .onnxModel), (CoreMLFixtures.path("small_cnn.mlmodel"), .coreMLModel),
        (CoreMLFixtures.path("detector_pipeline.mlmodel"), .coreMLModel),
        (CoreMLFixtures.path("resnet_palette4.mlmodel"), .coreMLModel),
    ]

    /// 2,000 mutants of each fixture (bit flips, byte runs, cuts, inserted and smashed varints, seeded): the walk
    /// finds a problem exactly when protobuf-c refuses the bytes. (None of these nests deeper than the limit.)
    @Test(arguments: fixtures.map(\.0))
    func walkAgreesWithProtobufCOnMutants(path: String) throws {
        let schema = try #require(Self.fixtures.first { $0.0 == path }?.1)
        let original = try Self.bytes(path)
        #expect(ProtobufWire.firstProblem(in: original, schema) == nil)
        #expect(ProtobufWire.protobufCAccepts(original, schema))
        var rng = SplitMix64(seed: 19)
        var refused = 0
        for i in 0..<2000 {
            var b = original
            let at = Int(rng.next() % UInt64(b.count))
            switch i % 6 {
            case 0: b[at] ^= UInt8(1) << UInt8(rng.next() % 8)
            case 1: for j in at..<min(b.count, at + 1 + Int(rng.next() % 8)) { b[j] = UInt8(truncatingIfNeeded: rng.next()) }
            case 2: b.removeSubrange(at..<b.count)
            case 3: b.insert(contentsOf: [0x80, 0x80, 0x80, 0x80, 0x80, 0x01], at: at)
            case 4: b[at] = [0x00, 0x07, 0x0b, 0x0c, 0xff, 0x0a][Int(rng.next() % 6)]
            default: b.removeSubrange(at..<min(b.count, at + 1 + Int(rng.next() % 4)))
            }
            let problem = ProtobufWire.firstProblem(in: b, schema)
            let accepted = ProtobufWire.protobufCAccepts(b, schema)
            #expect((problem == nil) == accepted, "mutant \(i) of \(path): walk says \(problem.map { "\($0)" } ?? "fine"), protobuf-c \(accepted ? "accepts" : "refuses")")
            if let problem {
                refused += 1
                #expect(problem.offset >= 0 && problem.offset <= b.count)
            }
        }
        print("ProtobufWireTests: \((path as NSString).lastPathComponent): \(refused) of 2000 mutants refused by both")
        #expect(refused > 100)
    }

    /// Every prefix of a fixture: the same agreement (cuts are the commonest damage).
    @Test func walkAgreesWithProtobufCOnEveryPrefix() throws {
        for (path, schema) in Self.fixtures.prefix(4) {
            let original = try Self.bytes(path)
            for n in stride(from: 0, to: original.count, by: max(1, original.count / 3000)) {
                let b = Array(original[0..<n])
                #expect((ProtobufWire.firstProblem(in: b, schema) == nil) == ProtobufWire.protobufCAccepts(b, schema),
                        "\(path): \(n)-byte prefix")
            }
        }
    }

    // MARK: exact places

    static func varint(_ v: UInt64) -> [UInt8] {
        var v = v, out = [UInt8]()
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        return out + [UInt8(v)]
    }
    static func field(_ number: Int, _ payload: [UInt8]) -> [UInt8] { varint(UInt64(number << 3 | 2)) + varint(UInt64(payload.count)) + payload }

    static func problem(_ bytes: [UInt8], _ schema: ProtobufWire.Schema = .onnxModel) -> String? {
        ProtobufWire.firstProblem(in: bytes, schema).map { "byte \($0.offset), \($0.place): \($0.reason)" }
    }

    @Test func placesAreNamed() {
        // A length that runs past the end, inside graph.node[1].
        let node = Self.field(4, Array("Relu".utf8))
        let graph = Self.field(1, node) + [0x0a, 0x20] + node
        #expect(Self.problem([0x08, 0x08] + Self.field(7, graph))
            == "byte 13, ModelProto.graph.node[1]: a length of 32 bytes runs past the end of its message at byte 20 (6 bytes are left)")
        // A varint where ir_version's int64 is expected is fine; a length-delimited value is not.
        #expect(Self.problem(Self.field(1, [1, 2]))
            == "byte 0, ModelProto.ir_version: a length-delimited value where the field is declared int64 (varint)")
        // Field number 0, a group, an unterminated varint, a cut 32-bit value.
        #expect(Self.problem([0x08, 0x08, 0x00]) == "byte 2, ModelProto: field number 0 (byte 0x0) is not a valid field key")
        #expect(Self.problem([0x0b]) == "byte 0, ModelProto.ir_version: wire type 3 (group start) is not supported")
        #expect(Self.problem([0x08] + [UInt8](repeating: 0xff, count: 11))
            == "byte 1, ModelProto.ir_version: a varint is not terminated within 10 bytes or before its message ends at byte 12")
        #expect(Self.problem([0x7d, 1, 2]) == "byte 1, ModelProto.field 15: a 4-byte value is cut off by the end of its message at byte 3")
        // Packed floats whose length is not a multiple of 4 (TensorProto.float_data, field 4, in an initializer).
        let tensor = Self.field(4, [0, 0, 128, 63, 0])
        #expect(Self.problem(Self.field(7, Self.field(5, tensor)))
            == "byte 6, ModelProto.graph.initializer[0].float_data[0]: packed 4-byte values take 5 bytes, not a multiple of 4")
        // Packed dims (int64 varints) whose last varint is cut.
        #expect(Self.problem(Self.field(7, Self.field(5, Self.field(1, [2, 0x83])))) ==
            "byte 7, ModelProto.graph.initializer[0].dims[0]: a packed varint is not terminated within 10 bytes or before byte 8")
        // Each of these is refused by protobuf-c as well.
        for bytes in [[0x08, 0x08] + Self.field(7, graph), Self.field(1, [1, 2]), [0x08, 0x08, 0x00], [0x0b],
                      Self.field(7, Self.field(5, tensor))] {
            #expect(!ProtobufWire.protobufCAccepts(bytes, .onnxModel))
        }
    }

    /// Core ML pipelines nested in pipelines, `levels` deep (Model.pipeline = 202, Pipeline.models = 1), built
    /// inside-out without copying.
    static func nestedPipelines(_ levels: Int) -> [UInt8] {
        var sizes = [Int](), size = 0
        for _ in 0..<levels {
            let models = varint(1 << 3 | 2).count + varint(UInt64(size)).count + size
            sizes.append(size)
            size = varint(202 << 3 | 2).count + varint(UInt64(models)).count + models
            sizes.append(models)
        }
        var out = varint(1 << 3) + varint(4)   // specificationVersion 4
        out.reserveCapacity(out.count + size)
        var i = sizes.count - 1
        while i > 0 {
            out += varint(202 << 3 | 2) + varint(UInt64(sizes[i])) + varint(1 << 3 | 2) + varint(UInt64(sizes[i - 1]))
            i -= 2
        }
        return out
    }

    @Test func nestingPastTheLimitIsRefusedWhereItStarts() {
        // 49 pipelines: 99 messages deep with the innermost Model, which is fine for both.
        let fine = Self.nestedPipelines(49)
        #expect(ProtobufWire.firstProblem(in: fine, .coreMLModel) == nil)
        #expect(ProtobufWire.protobufCAccepts(fine, .coreMLModel))
        let deep = Self.nestedPipelines(51)
        let p = ProtobufWire.firstProblem(in: deep, .coreMLModel)
        #expect(p?.reason == "messages are nested more than 100 deep (the limit; real models need far fewer)")
        #expect(p?.place.hasPrefix("Model.pipeline.models[0].pipeline.models[0].pipeline") == true)
        #expect(p?.place.hasSuffix(".pipeline.models[0]") == true)
        #expect(p?.place.contains(".….") == true)
        #expect(p?.limit == true)
        #expect((p?.offset ?? 0) > 200 && (p?.offset ?? 0) < deep.count)
    }

    @Test func tooManyFieldsInOneMessageAreRefused() {
        // Unknown field 100 as a one-byte varint, 2^22 + 1 times.
        let one: [UInt8] = Self.varint(100 << 3) + [1]
        var b = [UInt8]()
        b.reserveCapacity(one.count * (InputLimits.maxProtobufFieldsPerMessage + 1))
        for _ in 0...InputLimits.maxProtobufFieldsPerMessage { b += one }
        #expect(Self.problem(b) == "byte \(one.count * InputLimits.maxProtobufFieldsPerMessage), ModelProto: more than 4194304 fields in one message (the limit)")
        #expect(Self.problem(Array(b.dropLast(one.count))) == nil)
    }
}
