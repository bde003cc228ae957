import Foundation

/// What a model file is, recognised by its content and never by its extension.
///
/// Rules (first match wins):
/// - `mltool`: the 8 bytes at offset 0 are the format's magic `89 4D 4C 54 0D 0A 1A 0A`.
/// - `hdf5`: the HDF5 signature `89 48 44 46 0D 0A 1A 0A` at offset 0, 512, 1024, 2048, … (powers of two × 512),
///   where the HDF5 specification allows a user block before it.
/// - `tflite`: the FlatBuffers file identifier "TFL3" at offset 4 (TensorFlow Lite), after a root offset at 0 that
///   points inside the file.
/// - The whole file must parse as a sequence of top-level protobuf fields (wire types 0, 1, 2, 5) that ends exactly
///   at the end of the file, with field 1 a varint (ONNX `ir_version` / Core ML `specificationVersion`, 1 … 10,000):
///   - `onnx` (ModelProto): field 7 (`graph`) is present as a length-delimited field and no field number is above
///     100; known fields have their wire types (1, 5 varint; 2, 3, 4, 6, 7, 8, 14, 20, 25 length-delimited).
///   - `coreml` (Model): a length-delimited field numbered 200 or more (the model type: pipeline, neuralNetwork,
///     mlProgram, …) is present and no field is numbered 3 … 9 (they do not exist in Core ML's `Model`); known
///     fields have their wire types (2 length-delimited, 10 varint).
///   The two are disjoint: ONNX never has a field ≥ 200, Core ML never has field 7.
/// - A directory holding `Manifest.json` and `Data/com.apple.CoreML/model.mlmodel` (an .mlpackage) is `coreml`.
/// - Anything else is `unknown`.
public enum FileKind: String, Sendable, Equatable, CaseIterable {
    case mltool, onnx, hdf5, coreml, tflite, unknown

    /// The FlatBuffers file identifier of TensorFlow Lite, at offset 4.
    public static let tfliteIdentifier: [UInt8] = Array("TFL3".utf8)

    /// The HDF5 format signature.
    public static let hdf5Signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Where an HDF5 signature may start in a file of `size` bytes: 0, 512, 1024, 2048, … (where libhdf5 looks).
    public static func hdf5SignatureOffsets(fileSize size: Int) -> [Int] {
        var offsets: [Int] = []
        var at = 0
        while at <= size - hdf5Signature.count {
            offsets.append(at)
            let (next, overflow) = (at == 0 ? 256 : at).multipliedReportingOverflow(by: 2)
            if overflow { break }
            at = next
        }
        return offsets
    }

    /// Detects the kind of the file (or .mlpackage directory) at `path`; throws `FormatError.cannotOpen` when it
    /// does not exist or cannot be read.
    public static func detect(path: String) throws -> FileKind {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FormatError.cannotOpen(file: path, reason: "no such file or directory")
        }
        if isDirectory.boolValue {
            let fm = FileManager.default
            let isPackage = fm.fileExists(atPath: path + "/Manifest.json")
                && fm.fileExists(atPath: path + "/Data/com.apple.CoreML/model.mlmodel")
            return isPackage ? .coreml : .unknown
        }
        let storage = try FileStorage(mapping: path, populate: false)
        return detect(bytes: storage.bytes)
    }

    /// Detects the kind of a file held in memory.
    public static func detect(bytes: UnsafeRawBufferPointer) -> FileKind {
        if bytes.count >= 8, bytes.prefix(8).elementsEqual(FileHeader.magic) { return .mltool }
        for at in hdf5SignatureOffsets(fileSize: bytes.count) where bytes[at..<(at + 8)].elementsEqual(hdf5Signature) {
            return .hdf5
        }
        if bytes.count >= 8, bytes[4..<8].elementsEqual(tfliteIdentifier) {
            let root = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
            if root >= 8, root < bytes.count { return .tflite }
        }
        return protobufKind(bytes)
    }

    /// Detects the kind of a byte array.
    public static func detect(bytes: [UInt8]) -> FileKind {
        bytes.withUnsafeBytes { detect(bytes: $0) }
    }

    static func protobufKind(_ b: UnsafeRawBufferPointer) -> FileKind {
        guard let fields = topLevelFields(b) else { return .unknown }
        guard let first = fields.first(where: { $0.number == 1 }), first.wire == 0,
              (1...10_000).contains(first.value) else { return .unknown }
        let onnxWire: [UInt64: UInt8] = [1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2]
        let isONNX = fields.contains { $0.number == 7 && $0.wire == 2 }
            && fields.allSatisfy { $0.number <= 100 && (onnxWire[$0.number] ?? $0.wire) == $0.wire }
        if isONNX { return .onnx }
        let coremlWire: [UInt64: UInt8] = [1: 0, 2: 2, 10: 0]
        let isCoreML = fields.contains { $0.number >= 200 && $0.wire == 2 }
            && fields.allSatisfy { !(3...9).contains($0.number) && (coremlWire[$0.number] ?? $0.wire) == $0.wire }
        return isCoreML ? .coreml : .unknown
    }

    /// The top-level fields of a protobuf message (number, wire type, varint value), or nil unless the bytes parse
    /// cleanly to the end. Length-delimited payloads are skipped, not parsed.
    /// Where in the file at `path` recognition failed, for the error of a file that is no known kind: the byte where
    /// the top-level protobuf fields stop parsing, or the first bytes when they are no signature at all.
    public static func unrecognisedPlace(path: String) -> String {
        guard let storage = try? FileStorage(mapping: path, populate: false) else { return "the file cannot be read" }
        let b = storage.bytes
        guard b.count > 0 else { return "the file is empty (0 bytes)" }
        let head = b.prefix(8).map { String(format: "%02x", $0) }.joined(separator: " ")
        var i = 0, fields = 0
        while i < b.count {
            let start = i
            guard let key = varint(b, &i), key >> 3 >= 1, key >> 3 < (1 << 29) else {
                return fields == 0 ? "byte 0: starts \(head), no known signature (\(b.count) bytes)"
                    : "byte \(start): top-level protobuf field \(fields + 1) has no valid key (\(b.count) bytes)"
            }
            var ok = true
            switch key & 7 {
            case 0: ok = varint(b, &i) != nil
            case 1, 5:
                let n = key & 7 == 1 ? 8 : 4
                ok = b.count - i >= n
                i += n
            case 2:
                if let n = varint(b, &i), n <= UInt64(b.count - i) { i += Int(n) } else { ok = false }
            default: ok = false
            }
            guard ok else {
                return "byte \(start): top-level protobuf field \(key >> 3) (wire type \(key & 7)) runs past the end of the file's \(b.count) bytes or is malformed"
            }
            fields += 1
        }
        return "bytes 0–\(b.count): \(fields) top-level protobuf fields, but not the fields of an ONNX ModelProto or a Core ML Model"
    }

    static func topLevelFields(_ b: UnsafeRawBufferPointer, limit: Int = 1_000_000)
        -> [(number: UInt64, wire: UInt8, value: UInt64)]? {
        var fields: [(number: UInt64, wire: UInt8, value: UInt64)] = []
        var i = 0
        while i < b.count {
            guard fields.count < limit, let key = varint(b, &i) else { return nil }
            let number = key >> 3, wire = UInt8(key & 7)
            guard number >= 1, number < (1 << 29) else { return nil }
            var value: UInt64 = 0
            switch wire {
            case 0:
                guard let v = varint(b, &i) else { return nil }
                value = v
            case 1, 5:
                let n = wire == 1 ? 8 : 4
                guard b.count - i >= n else { return nil }
                i += n
            case 2:
                guard let n = varint(b, &i), n <= UInt64(b.count - i) else { return nil }
                i += Int(n)
            default:
                return nil
            }
            fields.append((number, wire, value))
        }
        return fields.isEmpty ? nil : fields
    }

    static func varint(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> UInt64? {
        var v: UInt64 = 0
        for shift in stride(from: UInt64(0), to: 70, by: 7) {
            guard i < b.count else { return nil }
            let byte = b[i]
            i += 1
            v |= UInt64(byte & 0x7F) &<< shift
            if byte & 0x80 == 0 { return v }
        }
        return nil
    }
}
