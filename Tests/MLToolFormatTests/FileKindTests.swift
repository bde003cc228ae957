import Foundation
import MLToolTestSupport
import Testing
import MLToolCore
@testable import MLToolFormat

@Suite struct FileKindTests {
    /// A hand-made ONNX ModelProto: ir_version 8, producer "pytorch", graph { node {} }, opset_import { version 13 }.
    static let onnx: [UInt8] = [0x08, 0x08, 0x12, 0x07] + Array("pytorch".utf8)
        + [0x3A, 0x02, 0x0A, 0x00, 0x42, 0x02, 0x10, 0x0D]
    /// A hand-made Core ML Model: specificationVersion 4, description {}, neuralNetwork (field 500) {}.
    static let coreml: [UInt8] = [0x08, 0x04, 0x12, 0x00, 0xA2, 0x1F, 0x00]
    /// What onnx 1.x `onnx.save` writes for a one-MatMul model (ir_version 14, opset 28, a metadata_props entry).
    static let realONNX: [UInt8] = hexBytes(
        "080e1201743a7d0a110a01780a017712017922064d61744d756c1201672a3b0804080310014201774a300000803f0000803f0000803f"
        + "0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f5a130a0178120e0a0c080112080a0208010a"
        + "02080462130a0179120e0a0c080112080a0208010a0208034202101c72060a0161120162")
    static let hdf5Signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

    static let cases: [(String, [UInt8], FileKind)] = [
        ("onnx", onnx, .onnx),
        ("onnx written by the onnx package", realONNX, .onnx),
        ("coreml", coreml, .coreml),
        ("hdf5 at 0", hdf5Signature + [UInt8](repeating: 0, count: 100), .hdf5),
        ("hdf5 after a 512-byte user block", [UInt8](repeating: 0x20, count: 512) + hdf5Signature + [0, 0], .hdf5),
        ("hdf5 after a 2048-byte user block", [UInt8](repeating: 0, count: 2048) + hdf5Signature, .hdf5),
        ("hdf5 signature at a non-power-of-two offset", [UInt8](repeating: 0, count: 700) + hdf5Signature, .unknown),
        ("text", Array("hello, world\nthis is not a model\n".utf8), .unknown),
        ("csv", Array("path,label\na.jpg,cat\n".utf8), .unknown),
        ("empty", [], .unknown),
        ("onnx truncated inside the graph", Array(onnx.dropLast(5)), .unknown),
        ("onnx with a Core ML type field", onnx + [0xA2, 0x1F, 0x00], .unknown),
        ("coreml with an ONNX graph field", coreml + [0x3A, 0x00], .unknown),
        ("protobuf without field 1", Array(onnx.dropFirst(2)), .unknown),
    ]

    @Test(arguments: cases)
    func detectsByContent(label: String, bytes: [UInt8], kind: FileKind) {
        #expect(FileKind.detect(bytes: bytes) == kind, "\(label)")
    }

    @Test func extensionsDoNotMatter() throws {
        let dir = try TempDir(tag: "format").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ModelFile.write(TestModels.tiny(), to: dir + "/x.onnx")
        #expect(FileManager.default.createFile(atPath: dir + "/x.bin", contents: Data(Self.onnx)))
        #expect(FileManager.default.createFile(atPath: dir + "/x.mlt", contents: Data(Self.hdf5Signature + [0, 0])))
        #expect(FileManager.default.createFile(atPath: dir + "/x.h5", contents: Data("just text\n".utf8)))
        #expect(try FileKind.detect(path: dir + "/x.onnx") == .mltool)
        #expect(try FileKind.detect(path: dir + "/x.bin") == .onnx)
        #expect(try FileKind.detect(path: dir + "/x.mlt") == .hdf5)
        #expect(try FileKind.detect(path: dir + "/x.h5") == .unknown)
        #expect(throws: FormatError.cannotOpen(file: dir + "/none", reason: "no such file or directory")) {
            try FileKind.detect(path: dir + "/none")
        }
        // An .mlpackage directory.
        try FileManager.default.createDirectory(atPath: dir + "/m.mlpackage/Data/com.apple.CoreML",
                                                withIntermediateDirectories: true)
        #expect(try FileKind.detect(path: dir + "/m.mlpackage") == .unknown)
        #expect(FileManager.default.createFile(atPath: dir + "/m.mlpackage/Manifest.json", contents: Data("{}".utf8)))
        #expect(FileManager.default.createFile(atPath: dir + "/m.mlpackage/Data/com.apple.CoreML/model.mlmodel",
                                               contents: Data(Self.coreml)))
        #expect(try FileKind.detect(path: dir + "/m.mlpackage") == .coreml)
    }
}

func hexBytes(_ hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = hex.makeIterator()
    while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16) ?? 0) }
    return out
}
