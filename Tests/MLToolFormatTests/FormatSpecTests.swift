import Foundation
import Testing
import MLToolCore
import MLToolTestSupport
@testable import MLToolFormat

/// The format pinned down: the example file of docs/FORMAT.md byte for byte, and an independent reader written
/// from the spec alone (reference_reader.py) agreeing with the Swift writer.
@Suite struct FormatSpecTests {
    /// docs/FORMAT.md section 11. Re-record only on purpose, together with the spec (a change here is a format change).
    static let golden: [UInt8] = hexBytes(
        "894d4c540d0a1a0a010000000000000090010000000000008000000000000000c00000000000000040010000000000004000000000000000" +
        "80010000000000000100000000000000e4a635a754c4925ca38ef0c8ed8a27ee000000000000000000000000000000000000000000000000" +
        "00000000000000004bb82998a41312657b226d65746164617461223a7b226c6162656c73223a5b5d2c226d657472696373223a7b7d2c2270" +
        "726f76656e616e6365223a7b22736f7572636573223a5b5d2c2274696d696e6773223a7b7d2c22746f6f6c56657273696f6e223a22302e31" +
        "2e30227d2c227461736b223a226e6574776f726b227d2c2274656e736f7273223a5b7b226474797065223a22663332222c226c656e677468" +
        "223a382c226e616d65223a2277222c226f6666736574223a302c227368617065223a5b325d7d5d7d0000803f000000400000000000000000" +
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000004d4c54454e440d0a" +
        "416123f58a0cf35e")

    @Test func writerProducesTheSpecExample() throws {
        let bytes = try ModelFile.serialize(TestModels.tiny())
        #expect(bytes.count == 400)
        #expect(bytes == Self.golden)
        #expect(sameModel(try ModelFile.read(bytes: Self.golden, name: "golden"), TestModels.tiny()))
    }

    /// Runs `python3 reference_reader.py FILE`; nil (with a loud message) when python3 is missing.
    static func referenceRead(_ path: String) throws -> (status: Int32, output: Data)? {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("reference_reader.py").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", script, path]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        try p.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        if p.terminationStatus == 127 {
            Oracles.missing("FormatSpecTests: the reference-reader cross-check (python3 not found on PATH)")
            return nil
        }
        return (p.terminationStatus, out)
    }

    struct Reference: Decodable {
        struct Entry: Decodable { var name: String; var dtype: String; var shape: [Int]; var values: [Int64] }
        var metadata: ModelMetadata
        var tensors: [Entry]
    }

    @Test(arguments: 0..<7 as Range<UInt64>)
    func independentReaderAgreesWithTheWriter(seed: UInt64) throws {
        let dir = try TempDir(tag: "format").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let model = seed == 0 ? TestModels.small() : seed == 6 ? TestModels.compactScales() : TestModels.random(seed: seed)
        try ModelFile.write(model, to: dir + "/m")
        guard let (status, out) = try Self.referenceRead(dir + "/m") else { return }
        try #require(status == 0, "\(String(decoding: out, as: UTF8.self))")
        let ref = try MetadataDocument.decoder().decode(Reference.self, from: out)
        // The file holds the metadata with its paths as recorded (docs/FORMAT.md, "Paths").
        #expect(ref.metadata == model.metadata.recordingPaths(forFileAt: dir + "/m", policy: .relative))
        #expect(ref.tensors.map(\.name) == model.tensors.map(\.name))
        for (r, t) in zip(ref.tensors, model.tensors) {
            #expect(r.dtype == t.dtype.name && r.shape == t.shape)
            switch t.dtype {
            case .u8: #expect(r.values == t.bytes.buffer.map { Int64($0) })
            case .i32, .i64:
                let size = t.dtype == .i32 ? 4 : 8
                let ints = (0..<(t.bytes.count / size)).map { i -> Int64 in
                    size == 4 ? Int64(Int32(littleEndian: t.bytes.buffer.loadUnaligned(fromByteOffset: i * 4, as: Int32.self)))
                              : Int64(littleEndian: t.bytes.buffer.loadUnaligned(fromByteOffset: i * 8, as: Int64.self))
                }
                #expect(r.values == ints, "\(t.name)")
            default:
                let swift = try t.floats()
                let same = r.values.count == swift.count && zip(r.values, swift).allSatisfy { bits, f in
                    let p = Float(bitPattern: UInt32(truncatingIfNeeded: bits))
                    return p.bitPattern == f.bitPattern || (p.isNaN && f.isNaN)
                }
                #expect(same, "\(t.name) (\(t.dtype.name))")
            }
        }
    }

    @Test func independentReaderRejectsADamagedFile() throws {
        let dir = try TempDir(tag: "format").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var bytes = try ModelFile.serialize(TestModels.small())
        bytes[900] ^= 4
        #expect(FileManager.default.createFile(atPath: dir + "/m", contents: Data(bytes)))
        guard let (status, out) = try Self.referenceRead(dir + "/m") else { return }
        #expect(status == 1)
        #expect(String(decoding: out, as: UTF8.self).hasPrefix("invalid: file checksum"))
    }
}
