import Foundation
import Testing
import MLToolCore
import MLToolTestSupport
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

    /// A detector's settings (every decoder kind) and letterbox preprocessing survive a write and read unchanged.
    @Test func detectorSettingsRoundTrip() throws {
        let configs: [DetectionConfig] = [
            .anchorGrid(classes: 3, heads: [DetectionHead(tensor: "y", stride: 8, anchors: [[10, 13], [16.5, 30]])], encoding: "yolov3",
                        nms: NMSSettings(iouThreshold: 0.6, confidenceThreshold: 0.001, perClass: false, maxDetections: 300, maxPerClass: 50)),
            .anchorFree(classes: 3, heads: [DetectionHead(tensor: "y", stride: 32)], regMax: 16),
            DetectionConfig(decoder: "boxes", classCount: 3, boxEncoding: "yxyx",
                            boxes: BoxesOutput(tensor: "y", layout: "nbk", scoresTensor: "y", scoresLayout: "ncb", scoreActivation: "sigmoid", normalized: true)),
        ]
        for config in configs {
            var model = TestModels.small()
            model.metadata.task = .objectDetector
            model.metadata.detection = config
            model.metadata.image = .yolo(size: 320)
            let bytes = try ModelFile.serialize(model)
            let read = try ModelFile.read(bytes: bytes, name: "detector.mlt")
            #expect(read.metadata == model.metadata)
            #expect(try ModelFile.serialize(read) == bytes)
        }
    }

    @Test func bfloat16ScalesRoundTripAndHalveTheirText() throws {
        let model = TestModels.compactScales()
        let bytes = try ModelFile.serialize(model)
        let read = try ModelFile.read(bytes: bytes, name: "compact.mlt")
        #expect(sameModel(model, read))
        #expect(try ModelFile.serialize(read) == bytes)
        #expect(read.tensors[0].quant?.scalesType == "bf16" && read.tensors[0].quant?.scales == model.tensors[0].quant?.scales)
        // Reference dequantization: scale × q for int8, scale × lut[index] for the palette.
        let s = try #require(model.tensors[0].quant?.scales)
        let q: [Int8] = [1, 2, 3, -1, -128, 127, 0, 9]
        #expect(try read.tensors[0].floats() == q.enumerated().map { s[$0.offset % 4] * Float($0.element) })
        let lut: [Float] = [-1, -0.25, 0.5, 1], idx = [0, 1, 2, 3, 3, 2, 1, 0, 0, 3, 1, 2]
        #expect(try read.tensors[1].floats() == idx.enumerated().map { s[$0.offset / 3] * lut[$0.element] })
        // bf16 scales take 2 bytes (before base64) instead of 4.
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""scalesType":"bf16""#))
        func scalesText(_ q: QuantParams?) throws -> String? {
            let json = try JSONSerialization.jsonObject(with: try MetadataDocument.encoder().encode(q)) as? [String: Any]
            return json?["scales"] as? String
        }
        var f32 = model.tensors[0].quant
        f32?.scalesType = nil
        #expect(try scalesText(model.tensors[0].quant)?.count == 12)   // 4 × 2 bytes in base64
        #expect(try scalesText(f32)?.count == 24)                      // 4 × 4 bytes
    }

    @Test func bfloat16ScalesThatAreNotExactOrUnknownTypesAreRejected() throws {
        var model = TestModels.compactScales()
        model.tensors[0].quant?.scales?[0] = 0.1   // not a bfloat16 value
        #expect(throws: (any Error).self) { try ModelFile.serialize(model) }
        // An unknown scalesType is a metadata error, not a misread (checksums resealed so the JSON is what fails).
        let good = try ModelFile.serialize(TestModels.compactScales())
        let bad = good.replacing(Array(#""scalesType":"bf16""#.utf8), with: Array(#""scalesType":"bf17""#.utf8)).resealed()
        #expect(bad != good)
        #expect(throws: FormatError.self) { try ModelFile.read(bytes: bad, name: "bad.mlt") }
        // Absent (binary32) still reads: files written before scalesType keep working.
        var old = TestModels.compactScales()
        for i in old.tensors.indices { old.tensors[i].quant?.scalesType = nil }
        #expect(sameModel(try ModelFile.read(bytes: try ModelFile.serialize(old), name: "old.mlt"), old))
    }

    @Test func bfloat16RoundingIsToNearestEven() {
        #expect(QuantParams.bfloat16Rounded(1) == 1)
        #expect(QuantParams.bfloat16Rounded(Float(bitPattern: 0x3F80_8000)) == 1)                        // tie → even
        #expect(QuantParams.bfloat16Rounded(Float(bitPattern: 0x3F81_8000)) == Float(bitPattern: 0x3F82_0000)) // tie → even
        #expect(QuantParams.bfloat16Rounded(Float(bitPattern: 0x3F80_8001)) == Float(bitPattern: 0x3F81_0000))
        #expect(QuantParams.bfloat16Rounded(.greatestFiniteMagnitude) == Float(bitPattern: 0x7F7F_0000))
        for x: Float in [0.1, 3e-9, 12345.678, -7.25] {
            let r = QuantParams.bfloat16Rounded(x)
            #expect(r.bitPattern & 0xFFFF == 0 && abs(r - x) <= abs(x) * 0x1p-8)
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
        let dir = try TempDir(tag: "format").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/model.bin"
        let model = TestModels.random(seed: 5)
        try ModelFile.write(model, to: path)
        let read = try ModelFile.read(path: path)
        #expect(sameModel(model, read))
        #expect(try ModelFile.serialize(read) == ModelFile.serialize(model))
        // Each non-empty tensor is a 64-byte aligned view into one mapping of the file (not a copy): its bytes lie
        // in an address range the kernel lists for model.bin in /proc/self/maps.
        let mapped = Self.mappings(of: path)
        #expect(!mapped.isEmpty, "model.bin is not mapped")
        var tensors = 0
        for t in read.tensors where t.bytes.count > 0 {
            let start = UInt(bitPattern: t.bytes.buffer.baseAddress), end = start + UInt(t.bytes.count)
            #expect(start % 64 == 0)
            #expect(mapped.contains { $0.contains(start) && end <= $0.upperBound }, "\(t.name) is not inside the mapping")
            tensors += 1
        }
        #expect(tensors > 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["model.bin"])
    }

    /// Reading verifies every checksum (all pages read), then gives the file's pages back: the mapping holds at
    /// most its last, partial page; a tensor read afterwards has its bytes unchanged (read from the file again), and
    /// `releasePages` gives back the whole pages inside it.
    @Test func readGivesTheFilePagesBackAndTheBytesStayTheSame() throws {
        let dir = try TempDir(tag: "format").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/model.bin"
        let values = (0..<300_000).map { Float($0 % 977) * 0.25 - 60 }
        var model = TestModels.small()
        model.tensors.append(StoredTensor(name: "big", tensor: Tensor(shape: [values.count], data: values)))
        try ModelFile.write(model, to: path)
        let read = try ModelFile.read(path: path)
        let page = sysconf(Int32(_SC_PAGESIZE)), read0 = ResidentMemory.kilobytes(mappedFrom: path)
        #expect(read0 >= 0 && read0 * 1024 <= page, "after read: \(read0) KB resident")
        let big = try #require(read.tensors.first { $0.name == "big" })
        #expect(try big.floats() == values)
        #expect(ResidentMemory.kilobytes(mappedFrom: path) >= values.count * 4 / 1024 - 8, "reading the tensor brings its pages back")
        big.bytes.releasePages()
        // At most what the kernel mapped around the tensor when it was read (fault-around: 64 KB by default).
        let after = ResidentMemory.kilobytes(mappedFrom: path)
        #expect(after <= values.count * 4 / 1024 / 4, "after releasePages: \(after) KB")
        #expect(try big.floats() == values)
        #expect(try ModelFile.serialize(read) == ModelFile.serialize(model))
        // Owned bytes (a model read from memory) are left alone.
        let copy = try ModelFile.read(bytes: try ModelFile.serialize(model), name: "copy")
        let owned = try #require(copy.tensors.first { $0.name == "big" })
        owned.bytes.releasePages()
        #expect(try owned.floats() == values)
    }

    /// The address ranges this process has mapped from `path` (Linux /proc/self/maps).
    static func mappings(of path: String) -> [Range<UInt>] {
        // Read to the end: /proc files report a size of 0, which String(contentsOfFile:) would take at its word.
        guard let h = FileHandle(forReadingAtPath: "/proc/self/maps") else { return [] }
        let maps = String(decoding: h.readDataToEndOfFile(), as: UTF8.self)
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        return maps.split(separator: "\n").compactMap { line in
            // start-end perms offset dev inode path
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[5].trimmingCharacters(in: .whitespaces) == real else { return nil }
            let bounds = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
            return bounds.count == 2 ? bounds[0]..<bounds[1] : nil
        }
    }

    @Test func tensorsOutliveTheModelValue() throws {
        let dir = try TempDir(tag: "format").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ModelFile.write(TestModels.small(), to: dir + "/m")
        let w = try ModelFile.read(path: dir + "/m").tensors[0]   // the Model is gone; the mapping is not
        #expect(try w.floats() == (0..<12).map { Float($0) * 0.5 })
    }

    @Test func layoutListsSectionsAndBytesPerDType() throws {
        let dir = try TempDir(tag: "format").path
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
