import Foundation
import Testing
import MLToolCore
@testable import MLToolFormat

@Suite struct RoundTripTests {
    @Test(arguments: 0..<24 as Range<UInt64>)
    func randomModelsRoundTripByteIdentical(seed: UInt64) throws {
        let model = TestModels.random(seed: seed)
        let first = try ModelFile.serialize(model)
        let read = try ModelFile.read(bytes: first, name: "random.mlt")
        #expect(sameModel(model, read))
        #expect(try ModelFile.serialize(read) == first)
        // Values through the dequantizing accessor agree bit for bit too.
        for (a, b) in zip(model.tensors, read.tensors) {
            #expect(try a.floats().map(\.bitPattern) == b.floats().map(\.bitPattern), "tensor \(a.name)")
        }
    }

    @Test func randomModelsCoverEveryDType() {
        let seen = Set((0..<4).flatMap { TestModels.random(seed: $0).tensors.map(\.dtype) })
        #expect(seen == Set(DType.allCases))
        let quant = TestModels.random(seed: 1).tensors.compactMap(\.quant)
        #expect(quant.contains { $0.scales != nil && $0.axis == nil })      // int8 per tensor
        #expect(quant.contains { $0.scales != nil && $0.axis != nil })      // int8 per channel
        #expect(quant.contains { $0.lut != nil && $0.axis == nil })         // palette per tensor
        #expect(quant.contains { $0.lut != nil && $0.groupSize != nil })    // palette grouped
    }

    @Test func serializeIsDeterministic() throws {
        let a = try ModelFile.serialize(TestModels.random(seed: 99))
        let b = try ModelFile.serialize(TestModels.random(seed: 99))
        #expect(a == b)
    }

    @Test func writeThenReadFromDiskMapsWithoutCopying() throws {
        let dir = try TestModels.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/model.bin"
        let model = TestModels.random(seed: 5)
        try ModelFile.write(model, to: path)
        let read = try ModelFile.read(path: path)
        #expect(sameModel(model, read))
        #expect(try ModelFile.serialize(read) == ModelFile.serialize(model))
        // Each non-empty tensor is a 64-byte aligned view into one mapping.
        for t in read.tensors where t.bytes.count > 0 {
            #expect(Int(bitPattern: t.bytes.buffer.baseAddress) % 64 == 0)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["model.bin"])
    }

    @Test func tensorsOutliveTheModelValue() throws {
        let dir = try TestModels.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ModelFile.write(TestModels.small(), to: dir + "/m")
        let w = try ModelFile.read(path: dir + "/m").tensors[0]   // the Model is gone; the mapping is not
        #expect(try w.floats() == (0..<12).map { Float($0) * 0.5 })
    }

    @Test func layoutListsSectionsAndBytesPerDType() throws {
        let dir = try TestModels.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ModelFile.write(TestModels.small(), to: dir + "/m")
        let layout = try ModelFile.layout(path: dir + "/m")
        #expect(layout.sections.map(\.name) == ["header", "metadata", "data", "trailer"])
        #expect(layout.sections[0].offset == 0 && layout.sections[0].length == 128)
        #expect(layout.sections[2].offset % 64 == 0)
        #expect(layout.sections[2].length == 128 + 64)      // fc.w 48 B, fc.b 12 B, q 6 B, each 64-aligned
        #expect(layout.sections[3].offset + 16 == layout.fileSize)
        #expect(layout.bytesPerDType == [.f32: 60, .int8: 6])
        let size = try FileManager.default.attributesOfItem(atPath: dir + "/m")[.size] as? Int
        #expect(layout.fileSize == size)
    }

    @Test func emptyModelRoundTrips() throws {
        let model = Model(metadata: ModelMetadata(task: .network), tensors: [])
        let bytes = try ModelFile.serialize(model)
        #expect(bytes.count % 64 == 16)
        #expect(sameModel(model, try ModelFile.read(bytes: bytes, name: "empty")))
    }
}
