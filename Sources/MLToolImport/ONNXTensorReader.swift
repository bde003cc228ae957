import COnnxProto
import CProtobufC
import Foundation
import MLToolCore

/// Decodes ONNX TensorProtos: raw_data, the typed fields, or external data files that must stay inside the model's
/// own directory.
struct TensorReader {
    let file: String
    /// The model's directory, as the user named it (external data is opened relative to it, never through a link).
    let directory: String

    init(file: String) {
        self.file = file
        let dir = (file as NSString).deletingLastPathComponent
        self.directory = dir.isEmpty ? "." : dir
    }

    /// Element types: ONNX data_type → (name, bytes per element).
    static let elementTypes: [Int32: (name: String, size: Int)] = [
        1: ("float", 4), 2: ("uint8", 1), 3: ("int8", 1), 4: ("uint16", 2), 5: ("int16", 2), 6: ("int32", 4),
        7: ("int64", 8), 9: ("bool", 1), 10: ("float16", 2), 11: ("double", 8), 12: ("uint32", 4),
        13: ("uint64", 8), 16: ("bfloat16", 2),
    ]

    func read(_ tp: UnsafeMutablePointer<Onnx__TensorProto>, place: String) throws -> ONNXConstant {
        var c = try decode(tp, place: place)
        c.dataType = tp.pointee.has_data_type != 0 ? tp.pointee.data_type : 0
        return c
    }

    private func decode(_ tp: UnsafeMutablePointer<Onnx__TensorProto>, place: String) throws -> ONNXConstant {
        let t = tp.pointee
        let dims = (0..<t.n_dims).map { Int(t.dims[$0]) }
        // Every partial product of the dims must fit too (a 0 dim would hide huge ones).
        guard dims.allSatisfy({ $0 >= 0 }), (try? Checked.elementCount(dims.filter { $0 != 0 })) != nil else {
            throw ImportError.invalid(file: file, place: "\(place) dims", expected: "dimensions ≥ 0 whose product fits in memory",
                                      actual: "\(dims)")
        }
        let count = dims.reduce(1, *)
        let type = (t.has_data_type != 0) ? t.data_type : 0
        guard let (typeName, size) = Self.elementTypes[type] else {
            throw ImportError.invalid(file: file, place: "\(place) data_type",
                                      expected: "a numeric type (float, float16, double, bfloat16, int8…int64, bool)",
                                      actual: "\(type)")
        }
        let isInteger = ![1, 10, 11, 16].contains(type)
        let (byteCount, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow else {
            throw ImportError.invalid(file: file, place: "\(place) dims", expected: "a size that fits in memory", actual: "\(dims)")
        }

        if t.has_data_location != 0 && t.data_location == 1 {
            let bytes = try external(t, place: place, byteCount: byteCount)
            return ONNXConstant(shape: dims, values: bytes.withUnsafeBytes { decodeRaw($0, type: type, count: count) },
                                isInteger: isInteger)
        }
        if t.has_raw_data != 0 {
            guard t.raw_data.len == byteCount else {
                throw ImportError.invalid(file: file, place: "\(place) raw_data",
                                          expected: "\(byteCount) bytes (\(count) × \(typeName))",
                                          actual: "\(t.raw_data.len) bytes")
            }
            let raw = UnsafeRawBufferPointer(start: t.raw_data.data, count: t.raw_data.len)
            return ONNXConstant(shape: dims, values: decodeRaw(raw, type: type, count: count), isInteger: isInteger)
        }
        // Typed fields: float → float_data; double → double_data; int64 → int64_data; uint32/uint64 → uint64_data;
        // every narrower type (and float16/bfloat16 as bit patterns) → int32_data.
        let values: [Double]
        let field: String
        switch type {
        case 1: field = "float_data"; values = buffer(t.float_data, t.n_float_data).map { Double($0) }
        case 11: field = "double_data"; values = buffer(t.double_data, t.n_double_data)
        case 7: field = "int64_data"; values = buffer(t.int64_data, t.n_int64_data).map { Double($0) }
        case 12, 13: field = "uint64_data"; values = buffer(t.uint64_data, t.n_uint64_data).map { Double($0) }
        case 10:
            field = "int32_data"
            values = buffer(t.int32_data, t.n_int32_data).map { Double(Float(Float16(bitPattern: UInt16(truncatingIfNeeded: $0)))) }
        case 16:
            field = "int32_data"
            values = buffer(t.int32_data, t.n_int32_data).map {
                Double(Float(bitPattern: UInt32(UInt16(truncatingIfNeeded: $0)) << 16))
            }
        default: field = "int32_data"; values = buffer(t.int32_data, t.n_int32_data).map { Double($0) }
        }
        guard values.count == count else {
            throw ImportError.invalid(file: file, place: "\(place) \(field)", expected: "\(count) values",
                                      actual: "\(values.count)")
        }
        return ONNXConstant(shape: dims, values: values, isInteger: isInteger)
    }

    /// Reads the bytes of an external-data tensor after checking its location, offset and length.
    private func external(_ t: Onnx__TensorProto, place: String, byteCount: Int) throws -> Data {
        var entries: [String: String] = [:]
        for i in 0..<t.n_external_data {
            guard let e = t.external_data[i]?.pointee else { continue }
            entries[str(e.key)] = str(e.value)
        }
        guard let location = entries["location"], !location.isEmpty else {
            throw ImportError.invalid(file: file, place: "\(place) external_data", expected: "a 'location' entry",
                                      actual: "none")
        }
        let where_ = "\(place) external_data location '\(location)'"
        if location.hasPrefix("/") || location.hasPrefix("\\") || location.contains(":") {
            throw ImportError.refused(file: file, place: where_, reason: "absolute path (external data must be inside the model's directory)")
        }
        let components = location.split(whereSeparator: { $0 == "/" || $0 == "\\" })
        if components.contains(where: { $0 == ".." }) {
            throw ImportError.refused(file: file, place: where_, reason: "'..' leaves the model's directory")
        }
        let joined = (directory as NSString).appendingPathComponent(location)
        func number(_ key: String) throws -> Int? {
            guard let s = entries[key] else { return nil }
            guard let v = Int(s), v >= 0 else {
                throw ImportError.invalid(file: file, place: "\(place) external_data \(key)",
                                          expected: "a non-negative integer", actual: "'\(s)'")
            }
            return v
        }
        let offset = try number("offset") ?? 0
        let length = try number("length") ?? byteCount
        guard length == byteCount else {
            throw ImportError.invalid(file: file, place: "\(place) external_data length", expected: "\(byteCount) bytes",
                                      actual: "\(length)")
        }
        // No symlink on the way, a regular file with one hard link (ContainedFile's policy).
        let opened: (fd: Int32, size: Int)
        do {
            opened = try ContainedFile.open(directory: directory, relative: location)
        } catch {
            if error.isRefusal { throw ImportError.refused(file: file, place: where_, reason: error.reason) }
            if case .missing = error { throw ImportError.unreadable(file: joined, reason: "external data of \(place) does not exist") }
            throw ImportError.unreadable(file: joined, reason: "external data of \(place): \(error.reason)")
        }
        defer { close(opened.fd) }
        let size = opened.size
        let (end, overflow) = offset.addingReportingOverflow(length)
        guard !overflow else {
            throw ImportError.invalid(file: file, place: "\(place) external_data offset", expected: "offset + length that fits", actual: "\(offset)")
        }
        guard end <= size else {
            throw ImportError.invalid(file: file, place: "\(place) external_data '\(location)'",
                                      expected: "offset \(offset) + length \(length) ≤ file size",
                                      actual: "file size \(size)")
        }
        let data: Data
        do {
            data = try ContainedFile.pread(fd: opened.fd, offset: offset, count: length, what: location)
        } catch {
            throw ImportError.unreadable(file: joined, reason: "external data of \(place): \(error.reason)")
        }
        return data
    }
}

private func buffer<T>(_ p: UnsafeMutablePointer<T>?, _ n: Int) -> [T] {
    guard n > 0, let p else { return [] }
    return Array(UnsafeBufferPointer(start: p, count: n))
}

/// Little-endian elements of `type` → Double. The caller has checked `raw.count == count × size`.
private func decodeRaw(_ raw: UnsafeRawBufferPointer, type: Int32, count: Int) -> [Double] {
    func load<T: FixedWidthInteger>(_: T.Type) -> [Double] {
        (0..<count).map { Double(T(littleEndian: raw.loadUnaligned(fromByteOffset: $0 &* MemoryLayout<T>.size, as: T.self))) }
    }
    switch type {
    case 1: return (0..<count).map { Double(Float(bitPattern: raw.loadUnaligned(fromByteOffset: $0 &* 4, as: UInt32.self))) }
    case 11: return (0..<count).map { Double(bitPattern: raw.loadUnaligned(fromByteOffset: $0 &* 8, as: UInt64.self)) }
    case 10: return (0..<count).map { Double(Float(Float16(bitPattern: raw.loadUnaligned(fromByteOffset: $0 &* 2, as: UInt16.self)))) }
    case 16: return (0..<count).map {
        Double(Float(bitPattern: UInt32(raw.loadUnaligned(fromByteOffset: $0 &* 2, as: UInt16.self)) << 16))
    }
    case 2, 9: return load(UInt8.self)
    case 3: return load(Int8.self)
    case 4: return load(UInt16.self)
    case 5: return load(Int16.self)
    case 6: return load(Int32.self)
    case 7: return load(Int64.self)
    case 12: return load(UInt32.self)
    case 13: return load(UInt64.self)
    default: return []
    }
}
