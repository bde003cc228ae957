import Foundation
import Testing
import MLToolCore
@testable import MLToolFormat

/// The corrupt-file corpus: each case damages a valid small model in one way and names the exact error expected.
/// Structural cases re-seal every checksum first, so that the rule under test, not a checksum, must catch them.
enum Corruption: String, CaseIterable, Sendable {
    case badMagic, futureVersion, versionZero, headerChecksum, nonZeroFlags, nonZeroReserved, appendedByte
    case badEndMagic, fileChecksum, metadataChecksum, dataChecksum, metadataTooLarge, tooManyTensors
    case sectionOutOfBounds, sectionOverflow, metadataMisplaced, dataMisplaced, nonZeroSectionPadding
    case badJSON, missingKey, tensorCountMismatch, duplicateKey, escapedDuplicateKey, byteOrderMark
    case duplicateNames, overlappingTensors, holeBetweenTensors, holeAtEnd, misalignedOffset, tensorPastData
    case nonZeroTensorPadding, overflowingDims, overflowingBytes, negativeDim, rankTooHigh, emptyName, longName
    case unknownDType, wrongLength, quantOnFloat, int8MissingScales, int8ScaleCount, int8ZeroPointRange
    case int8NonFiniteScale, paletteTailBits, paletteLutSize, paletteAxisOutOfRange, paletteZeroGroupSize
    case unknownNodeInput, unknownGraphOutput, duplicateNodeOutput, nodeOutputShadowsTensor, missingFeatureTensor
    case inputRangeInverted, enumeratedShapeRank
    case detectorWithoutDetection, detectionOnNetwork, unknownDecoder, wrongBoxEncoding, classCountMismatch
    case headNotAnOutput, zeroStride, badAnchor, anchorsOnAnchorFree, missingRegMax, iouOutOfRange, zeroMaxDetections
    case scoresLayoutMissing, boxesOnGridDecoder, letterboxCrop, letterboxPadValue

    static let file = "corrupt.mlt"

    var expected: FormatError {
        let f = Corruption.file
        switch self {
        case .badMagic:
            return .badMagic(file: f, offset: 0, expected: FileHeader.magic, actual: [0x89, 0x4D, 0x4C, 0x55, 0x0D, 0x0A, 0x1A, 0x0A])
        case .futureVersion: return .unsupportedVersion(file: f, version: 2, supported: 1)
        case .versionZero: return .unsupportedVersion(file: f, version: 0, supported: 1)
        case .headerChecksum:
            return .checksumMismatch(file: f, section: "header", offset: 0, stored: 0x1234, computed: Corruption.baseHeaderHash)
        case .nonZeroFlags: return .invalidField(file: f, offset: 12, field: "flags", expected: "0", actual: "1")
        case .nonZeroReserved:
            return .invalidField(file: f, offset: 88, field: "reserved", expected: "32 zero bytes", actual: "non-zero bytes")
        case .appendedByte:
            return .invalidField(file: f, offset: 16, field: "file_length", expected: "1041 (the file size)", actual: "1040")
        case .badEndMagic:
            return .badMagic(file: f, offset: 1024, expected: FileHeader.endMagic, actual: Array("MLTENd\r\n".utf8))
        case .fileChecksum, .metadataChecksum, .dataChecksum:
            return .checksumMismatch(file: f, section: "?", offset: 0, stored: 0, computed: 0)   // see `matches`
        case .metadataTooLarge:
            return .capExceeded(file: f, what: "metadata_length", limit: 256 << 20, actual: (256 << 20) + 1)
        case .tooManyTensors: return .capExceeded(file: f, what: "tensor_count", limit: 1_000_000, actual: 1_000_001)
        case .sectionOutOfBounds:
            return .sectionOutOfBounds(file: f, section: "data", offset: 832, length: 1 << 40, limit: 1024)
        case .sectionOverflow:
            return .sectionOutOfBounds(file: f, section: "data", offset: 832, length: UInt64.max - 100, limit: 1024)
        case .metadataMisplaced:
            return .sectionMisplaced(file: f, section: "metadata", field: "metadata_offset", expected: 128, actual: 192)
        case .dataMisplaced:
            return .sectionMisplaced(file: f, section: "data", field: "data_offset", expected: 832, actual: 896)
        case .nonZeroSectionPadding: return .nonZeroPadding(file: f, offset: 800)
        case .badJSON, .missingKey, .duplicateKey, .escapedDuplicateKey, .byteOrderMark:
            return .badMetadata(file: f, offset: 128, reason: "?")   // see `matches`
        case .tensorCountMismatch:
            return .invalidField(file: f, offset: 64, field: "tensor_count", expected: "3 (entries in the tensor table)", actual: "4")
        case .duplicateNames: return .duplicateName(file: f, tensor: "fc.w", index: 1, firstIndex: 0)
        case .overlappingTensors: return .overlap(file: f, tensor: "fc.b", previous: "fc.w", offset: 0, previousEnd: 48)
        case .holeBetweenTensors: return .hole(file: f, tensor: "fc.b", offset: 128, expected: 64)
        case .holeAtEnd: return .hole(file: f, tensor: "", offset: 256, expected: 192)
        case .misalignedOffset:
            return .badTensor(file: f, tensor: "fc.b", field: "offset", expected: "a multiple of 64, ≥ 0", actual: "60")
        case .tensorPastData:
            return .sectionOutOfBounds(file: f, section: "tensor 'q'", offset: 128, length: 6, limit: 128)
        case .nonZeroTensorPadding: return .nonZeroPadding(file: f, offset: 832 + 60)
        case .overflowingDims:
            return .overflow(file: f, tensor: "fc.w", what: "element count of shape [4611686018427387904, 4]")
        case .overflowingBytes:
            return .overflow(file: f, tensor: "fc.w", what: "byte count of f32 [1152921504606846976, 4]")
        case .negativeDim: return .badTensor(file: f, tensor: "fc.w", field: "shape", expected: "dimensions ≥ 0", actual: "[4, -3]")
        case .rankTooHigh:
            return .badTensor(file: f, tensor: "fc.w", field: "shape", expected: "rank ≤ 8", actual: "rank 9")
        case .emptyName:
            return .badTensor(file: f, tensor: "", field: "name", expected: "1 to 1024 bytes of UTF-8", actual: "0 bytes")
        case .longName:
            return .badTensor(file: f, tensor: String(repeating: "n", count: 64) + "…", field: "name",
                              expected: "1 to 1024 bytes of UTF-8", actual: "1025 bytes")
        case .unknownDType:
            return .badTensor(file: f, tensor: "fc.w", field: "dtype",
                              expected: "one of f32, f16, int8, palette1, palette2, palette4, palette6, palette8, u8, i32, i64",
                              actual: "'bf16'")
        case .wrongLength: return .badTensor(file: f, tensor: "fc.b", field: "length", expected: "12 bytes (f32 [3])", actual: "16 bytes")
        case .quantOnFloat: return .badTensor(file: f, tensor: "fc.b", field: "quant", expected: "absent for dtype f32", actual: "present")
        case .int8MissingScales: return .badTensor(file: f, tensor: "q", field: "quant.scales", expected: "2 values", actual: "absent")
        case .int8ScaleCount: return .badTensor(file: f, tensor: "q", field: "quant.scales", expected: "2 values", actual: "3")
        case .int8ZeroPointRange: return .badTensor(file: f, tensor: "q", field: "quant.zeroPoints[1]", expected: "-128...127", actual: "128")
        case .int8NonFiniteScale: return .badTensor(file: f, tensor: "q", field: "quant.scales[0]", expected: "finite", actual: "inf")
        case .paletteTailBits:
            return .badTensor(file: f, tensor: "q", field: "packed indices",
                              expected: "zero in the unused high 6 bits of the last byte", actual: "last byte 0x7F")
        case .paletteLutSize:
            return .badTensor(file: f, tensor: "q", field: "quant.lut", expected: "512 values (2 groups × 256)", actual: "256")
        case .paletteAxisOutOfRange: return .badTensor(file: f, tensor: "q", field: "quant.axis", expected: "0..<2", actual: "2")
        case .paletteZeroGroupSize: return .badTensor(file: f, tensor: "q", field: "quant.groupSize", expected: "≥ 1", actual: "0")
        case .unknownNodeInput:
            return .badGraph(file: f, node: "node 'fc'", field: "input 'fc.W'",
                             reason: "is not a graph input, a node output or a stored tensor")
        case .unknownGraphOutput:
            return .badGraph(file: f, node: "graph", field: "output 'z'", reason: "is not a graph input, a node output or a stored tensor")
        case .inputRangeInverted:
            return .badGraph(file: f, node: "graph", field: "input 'x' dimensionRanges",
                             reason: "expected one [min, max] with 0 ≤ min ≤ max (or max −1) per dimension, found [[8, 2], [0, -1]]")
        case .enumeratedShapeRank:
            return .badGraph(file: f, node: "graph", field: "input 'x' enumeratedShapes", reason: "a shape of another rank than 2")
        case .duplicateNodeOutput:
            return .badGraph(file: f, node: "node 'fc2'", field: "output 'y'", reason: "is also produced by node 'fc'")
        case .nodeOutputShadowsTensor:
            return .badGraph(file: f, node: "node 'fc'", field: "output 'q'", reason: "is also a stored tensor")
        case .missingFeatureTensor:
            return .badGraph(file: f, node: "metadata", field: "featureTensor 'pool'",
                             reason: "is not a graph input, a node output or a stored tensor")
        case .detectorWithoutDetection:
            return .badDetection(file: f, field: "detection", expected: "present for task objectDetector", actual: "absent")
        case .detectionOnNetwork: return .badDetection(file: f, field: "detection", expected: "absent for task network", actual: "present")
        case .unknownDecoder:
            return .badDetection(file: f, field: "decoder", expected: "anchorGrid, anchorFree or boxes", actual: "'ssd'")
        case .wrongBoxEncoding:
            return .badDetection(file: f, field: "boxEncoding", expected: "dfl or ltrb for decoder anchorFree", actual: "'yolov5'")
        case .classCountMismatch: return .badDetection(file: f, field: "classCount", expected: "3 (one per label)", actual: "2")
        case .headNotAnOutput: return .badDetection(file: f, field: "heads[1].tensor", expected: "a graph output", actual: "'fc.w'")
        case .zeroStride: return .badDetection(file: f, field: "heads[0].stride", expected: "1…65536", actual: "0")
        case .badAnchor:
            return .badDetection(file: f, field: "heads[0].anchors[1]", expected: "a width and a height, finite and > 0", actual: "[12.0, nan]")
        case .anchorsOnAnchorFree:
            return .badDetection(file: f, field: "heads[0].anchors", expected: "absent for decoder anchorFree", actual: "present")
        case .missingRegMax: return .badDetection(file: f, field: "regMax", expected: "1…4096 for encoding dfl", actual: "absent")
        case .iouOutOfRange: return .badDetection(file: f, field: "nms.iouThreshold", expected: "0…1", actual: "1.5")
        case .zeroMaxDetections: return .badDetection(file: f, field: "nms.maxDetections", expected: "1…1000000", actual: "0")
        case .scoresLayoutMissing: return .badDetection(file: f, field: "boxes.scoresLayout", expected: "nbc or ncb", actual: "absent")
        case .boxesOnGridDecoder: return .badDetection(file: f, field: "boxes", expected: "absent for decoder anchorGrid", actual: "present")
        case .letterboxCrop: return .badDetection(file: f, field: "image.crop", expected: "none with resize letterbox", actual: "'center'")
        case .letterboxPadValue: return .badDetection(file: f, field: "image.padValue", expected: "0…255", actual: "300.0")
        }
    }

    /// Checksum and JSON errors carry computed values or library text: compare the parts that matter.
    func matches(_ error: FormatError) -> Bool {
        switch (self, error) {
        case (.fileChecksum, .checksumMismatch(Corruption.file, "file", 0, _, _)): return true
        case (.metadataChecksum, .checksumMismatch(Corruption.file, "metadata", 128, _, _)): return true
        case (.dataChecksum, .checksumMismatch(Corruption.file, "data", 832, _, _)): return true
        case (.badJSON, .badMetadata(Corruption.file, 128, let reason)): return !reason.isEmpty
        case (.missingKey, .badMetadata(Corruption.file, 128, let reason)): return reason.contains("'task'")
        case (.duplicateKey, .badMetadata(Corruption.file, let at, let reason)),
             (.escapedDuplicateKey, .badMetadata(Corruption.file, let at, let reason)):
            return at > 128 && reason == #"key "task" occurs twice in one object"#
        case (.byteOrderMark, .badMetadata(Corruption.file, 128, let reason)): return reason.contains("first byte")
        default: return error == expected
        }
    }

    static var baseHeaderHash: UInt64 { base.withUnsafeBytes { FileHeader(decoding: $0).headerHash } }

    /// The small model's file: 1040 bytes, metadata at 128 (646 bytes), data at 832 (192 bytes), trailer at 1024.
    static let base: [UInt8] = (try? ModelFile.serialize(TestModels.small())) ?? []

    func apply(to base: [UInt8]) throws -> [UInt8] {
        var b = base
        let reseal = TestModels.reseal
        func table(_ edit: (inout MetadataDocument) -> Void) throws -> [UInt8] { try TestModels.editTable(base, edit) }
        switch self {
        case .badMagic: b[3] = 0x55
        case .futureVersion: b[8] = 2
        case .versionZero: b[8] = 0
        case .headerChecksum: TestModels.setU64(&b, 120, 0x1234)
        case .nonZeroFlags: b[12] = 1; b = reseal(b)
        case .nonZeroReserved:
            b[100] = 1   // `reseal` would rewrite the reserved bytes as zero: fix the header checksum by hand
            TestModels.setU64(&b, 120, XXH64.hash(Array(b[0..<120])))
            b = Corruption.resealFileOnly(b)
        case .appendedByte: b.append(0)
        case .badEndMagic: b[1029] = UInt8(ascii: "d"); b = Corruption.resealFileOnly(b)
        case .fileChecksum: b[b.count - 1] ^= 0x40
        case .metadataChecksum: b[200] ^= 1; b = Corruption.resealFileOnly(b)
        case .dataChecksum: b[840] ^= 1; b = Corruption.resealFileOnly(b)
        case .metadataTooLarge: TestModels.setU64(&b, 32, (256 << 20) + 1); b = reseal(b)
        case .tooManyTensors: TestModels.setU64(&b, 64, 1_000_001); b = reseal(b)
        case .sectionOutOfBounds: TestModels.setU64(&b, 48, 1 << 40); b = reseal(b)
        case .sectionOverflow: TestModels.setU64(&b, 48, UInt64.max - 100); b = reseal(b)
        case .metadataMisplaced: TestModels.setU64(&b, 24, 192); b = reseal(b)
        case .dataMisplaced: TestModels.setU64(&b, 40, 896); TestModels.setU64(&b, 48, 128); b = reseal(b)
        case .nonZeroSectionPadding: b[800] = 1; b = reseal(b)
        case .badJSON: b[128] = UInt8(ascii: "["); b = reseal(b)
        case .missingKey:
            return try table { _ in }.replacing(Array(#""task":"network""#.utf8), with: Array(#""tusk":"network""#.utf8))
                .resealed()
        case .duplicateKey, .escapedDuplicateKey, .byteOrderMark:
            let h = b.withUnsafeBytes { FileHeader(decoding: $0) }
            var json = Array(b[128..<(128 + Int(h.metadataLength))])
            switch self {
            case .duplicateKey: json.insert(contentsOf: Array(#""task":"network","#.utf8), at: 13)
            case .escapedDuplicateKey: json.insert(contentsOf: Array(#""t\u0061sk":"network","#.utf8), at: 13)
            default: json.insert(contentsOf: [0xEF, 0xBB, 0xBF], at: 0)
            }
            let data = Array(b[832..<1024])
            return ModelFile.assemble(metadataJSON: json, tensorCount: 3, dataLength: 192) { out, _ in out += data }
        case .tensorCountMismatch: TestModels.setU64(&b, 64, 4); b = reseal(b)
        case .duplicateNames: return try table { $0.tensors[1].name = "fc.w" }
        case .overlappingTensors: return try table { $0.tensors[1].offset = 0 }
        case .holeBetweenTensors: return try table { $0.tensors[1].offset = 128; $0.tensors[2].offset = 192 }
        case .holeAtEnd:
            let h = b.withUnsafeBytes { FileHeader(decoding: $0) }
            let json = Array(b[128..<(128 + Int(h.metadataLength))])
            let data = Array(b[832..<1024]) + [UInt8](repeating: 0, count: 64)
            return ModelFile.assemble(metadataJSON: json, tensorCount: 3, dataLength: 256) { out, _ in out += data }
        case .misalignedOffset: return try table { $0.tensors[1].offset = 60 }
        case .tensorPastData:   // the data section cut to 128 bytes: q (at 128) no longer fits
            let h = b.withUnsafeBytes { FileHeader(decoding: $0) }
            let json = Array(b[128..<(128 + Int(h.metadataLength))])
            let data = Array(b[832..<(832 + 128)])
            return ModelFile.assemble(metadataJSON: json, tensorCount: 3, dataLength: 128) { out, _ in out += data }
        case .nonZeroTensorPadding: b[832 + 60] = 7; b = reseal(b)
        case .overflowingDims: return try table { $0.tensors[0].shape = [1 << 62, 4] }
        case .overflowingBytes: return try table { $0.tensors[0].shape = [1 << 60, 4] }
        case .negativeDim: return try table { $0.tensors[0].shape = [4, -3] }
        case .rankTooHigh: return try table { $0.tensors[0].shape = [1, 1, 1, 1, 1, 1, 1, 4, 3] }
        case .emptyName: return try table { $0.tensors[0].name = "" }
        case .longName: return try table { $0.tensors[0].name = String(repeating: "n", count: 1025) }
        case .unknownDType: return try table { $0.tensors[0].dtype = "bf16" }
        case .wrongLength: return try table { $0.tensors[1].length = 16 }
        case .quantOnFloat: return try table { $0.tensors[1].quant = QuantParams(scales: [1]) }
        case .int8MissingScales: return try table { $0.tensors[2].quant?.scales = nil }
        case .int8ScaleCount: return try table { $0.tensors[2].quant?.scales = [1, 2, 3] }
        case .int8ZeroPointRange: return try table { $0.tensors[2].quant?.zeroPoints = [0, 128] }
        case .int8NonFiniteScale: return try table { $0.tensors[2].quant?.scales = [.infinity, 1] }
        case .paletteTailBits:   // q's 6 bytes as 7 six-bit indices: its last byte 0x7F has 6 unused bits, not zero
            return try table { $0.tensors[2].dtype = "palette6"; $0.tensors[2].shape = [7]
                               $0.tensors[2].quant = QuantParams(lut: Array(repeating: 0, count: 64)) }
        case .paletteLutSize:
            return try table { $0.tensors[2].dtype = "palette8"; $0.tensors[2].quant = QuantParams(axis: 0, lut: Array(repeating: 0, count: 256)) }
        case .paletteAxisOutOfRange:
            return try table { $0.tensors[2].dtype = "palette8"; $0.tensors[2].quant = QuantParams(axis: 2, lut: []) }
        case .paletteZeroGroupSize:
            return try table { $0.tensors[2].dtype = "palette8"; $0.tensors[2].quant = QuantParams(axis: 1, groupSize: 0, lut: []) }
        case .unknownNodeInput: return try table { $0.metadata.graph?.nodes[0].inputs[1] = "fc.W" }
        case .unknownGraphOutput: return try table { $0.metadata.graph?.outputs = ["z"] }
        case .inputRangeInverted: return try table { $0.metadata.graph?.inputs[0].dimensionRanges = [[8, 2], [0, -1]] }
        case .enumeratedShapeRank: return try table { $0.metadata.graph?.inputs[0].enumeratedShapes = [[1, 4, 1]] }
        case .duplicateNodeOutput:
            return try table { doc in
                doc.metadata.graph?.nodes.append(Node(name: "fc2", op: .relu, inputs: ["y"], outputs: ["y"]))
            }
        case .nodeOutputShadowsTensor: return try table { $0.metadata.graph?.nodes[0].outputs = ["q"] }
        case .missingFeatureTensor: return try table { $0.metadata.featureTensor = "pool" }
        case .detectorWithoutDetection: return try table { $0.metadata.task = .objectDetector }
        case .detectionOnNetwork: return try table { $0.metadata.detection = .boxes(classes: 3, tensor: "y") }
        default: return try table { doc in
            doc.metadata.task = .objectDetector
            let grid = [DetectionHead(tensor: "y", stride: 8, anchors: [[10, 13], [16, 30]])]
            var d = DetectionConfig.boxes(classes: 3, tensor: "y")
            switch self {
            case .unknownDecoder: d.decoder = "ssd"
            case .wrongBoxEncoding: d = .anchorFree(classes: 3, heads: [DetectionHead(tensor: "y", stride: 8)]); d.boxEncoding = "yolov5"
            case .classCountMismatch: d.classCount = 2
            case .headNotAnOutput: d = .anchorFree(classes: 3, heads: [DetectionHead(tensor: "y", stride: 8), DetectionHead(tensor: "fc.w", stride: 16)])
            case .zeroStride: d = .anchorGrid(classes: 3, heads: [DetectionHead(tensor: "y", stride: 0, anchors: [[10, 13]])])
            case .badAnchor: d = .anchorGrid(classes: 3, heads: [DetectionHead(tensor: "y", stride: 8, anchors: [[10, 13], [12, .nan]])])
            case .anchorsOnAnchorFree: d = .anchorFree(classes: 3, heads: grid)
            case .missingRegMax: d = .anchorFree(classes: 3, heads: [DetectionHead(tensor: "y", stride: 8)]); d.regMax = nil
            case .iouOutOfRange: d.nms.iouThreshold = 1.5
            case .zeroMaxDetections: d.nms.maxDetections = 0
            case .scoresLayoutMissing: d.boxes?.scoresTensor = "y"
            case .boxesOnGridDecoder: d = .anchorGrid(classes: 3, heads: grid); d.boxes = BoxesOutput(tensor: "y")
            case .letterboxCrop: doc.metadata.image = ImagePreprocessing(height: 8, width: 8, resize: "letterbox", crop: "center")
            case .letterboxPadValue: doc.metadata.image = ImagePreprocessing(height: 8, width: 8, resize: "letterbox", padValue: 300)
            default: break
            }
            doc.metadata.detection = d
        }
        }
        return b
    }

    /// Recomputes only the whole-file checksum (to reach a section check behind it).
    static func resealFileOnly(_ bytes: [UInt8]) -> [UInt8] {
        var b = bytes
        TestModels.setU64(&b, b.count - 8, XXH64.hash(Array(b[0..<(b.count - 8)])))
        return b
    }
}

extension [UInt8] {
    func replacing(_ old: [UInt8], with new: [UInt8]) -> [UInt8] {
        guard let r = self.firstRange(of: old) else { return self }
        var c = self
        c.replaceSubrange(r, with: new)
        return c
    }

    func resealed() -> [UInt8] { TestModels.reseal(self) }
}

@Suite struct CorruptFileTests {
    @Test func baseFileHasTheLayoutTheCorpusAssumes() throws {
        let b = Corruption.base
        #expect(b.count == 1040)
        let h = b.withUnsafeBytes { FileHeader(decoding: $0) }
        #expect(h.metadataLength == 646)
        #expect(h.dataOffset == 832)
        #expect(h.dataLength == 192)
        #expect(h.trailerOffset == 1024)
        #expect(sameModel(try ModelFile.read(bytes: b, name: "base"), TestModels.small()))
        #expect(TestModels.reseal(b) == b)
    }

    @Test(arguments: Corruption.allCases)
    func corruptFileThrowsItsOwnError(_ corruption: Corruption) throws {
        let bytes = try corruption.apply(to: Corruption.base)
        #expect(bytes != Corruption.base)
        do {
            _ = try ModelFile.read(bytes: bytes, name: Corruption.file)
            Issue.record("\(corruption): read succeeded")
        } catch let error as FormatError {
            #expect(corruption.matches(error), "\(corruption): got \(error)")
            #expect(error.exitStatus == .dataError)
            #expect(error.description.hasPrefix(Corruption.file))
        }
    }

    @Test func everyPrefixIsRejected() {
        let b = Corruption.base
        for n in 0..<b.count {
            #expect(throws: FormatError.self, "prefix \(n)") { try ModelFile.read(bytes: Array(b[0..<n]), name: "p") }
        }
    }

    @Test func everySingleBitFlipIsDetected() {
        var b = Corruption.base
        var detected = 0
        for bit in 0..<(b.count * 8) {
            b[bit / 8] ^= 1 << (bit % 8)
            do { _ = try ModelFile.read(bytes: b, name: "flip") } catch is FormatError { detected += 1 } catch {}
            b[bit / 8] ^= 1 << (bit % 8)
        }
        #expect(detected == b.count * 8)
    }

    @Test func writerRefusesInvalidModels() {
        var m = TestModels.small()
        m.tensors[1].name = "fc.w"
        #expect(throws: FormatError.duplicateName(file: "(model being written)", tensor: "fc.w", index: 1, firstIndex: 0)) {
            try ModelFile.serialize(m)
        }
        var n = TestModels.small()
        n.tensors[0].shape = [5, 3]
        #expect(throws: FormatError.badTensor(file: "(model being written)", tensor: "fc.w", field: "length",
                                              expected: "60 bytes (f32 [5, 3])", actual: "48 bytes")) {
            try ModelFile.serialize(n)
        }
    }
}
