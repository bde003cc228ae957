import CCoreMLProto
import COnnxProto
import CProtobufC
import Foundation
import MLToolCore

/// A walk over protobuf wire bytes guided by protobuf-c's generated descriptors, run before protobuf-c unpacks a
/// file. It does two things protobuf-c cannot:
///
/// - **Bounds the nesting depth** (`InputLimits.maxProtobufDepth`). protobuf-c unpacks nested messages by recursion
///   with no limit, so a few megabytes of Core ML pipelines nested in pipelines overflow the stack; the walk refuses
///   them before protobuf-c sees them.
/// - **Names the place** of what protobuf-c refuses: the field path (`Model.pipeline.models[2].neuralNetwork.…`) and
///   the byte offset in the file, where protobuf-c only returns NULL.
///
/// The rules are protobuf-c 1.4's (`protobuf_c_message_unpack`), in its order: each message's fields are scanned
/// first (keys, varints, lengths, packed element sizes), then its members are parsed one by one (wire type against the
/// declared type, packed varints, sub-messages, recursively). It never reads out of bounds and allocates only the
/// field path it reports.
enum ProtobufWire {
    /// What is wrong, where: `place` is the field path, `offset` the byte offset from the start of the bytes.
    struct Problem: Error, Equatable, Sendable {
        var place: String
        var offset: Int
        var reason: String
        /// A limit of mltool's (depth, field count) rather than bytes protobuf-c would refuse.
        var limit = false
    }

    /// The first problem protobuf-c would refuse (or the first message nested past `maxDepth`), or nil.
    static func firstProblem(in bytes: UnsafeRawBufferPointer, message descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
                             maxDepth: Int = InputLimits.maxProtobufDepth) -> Problem? {
        guard let base = bytes.baseAddress else { return nil }
        let walker = Walker(base: base.assumingMemoryBound(to: UInt8.self), maxDepth: maxDepth)
        return walker.message(descriptor, from: 0, to: bytes.count, path: String(cString: descriptor.pointee.short_name),
                              depth: 1)
    }

    /// One field occurrence: its number, wire type, where its key starts, where its value starts (after any length
    /// prefix) and ends.
    private struct Occurrence {
        var number: UInt32
        var wireType: UInt8
        var keyAt: Int
        var start: Int
        var end: Int
    }

    private struct Walker {
        let base: UnsafePointer<UInt8>
        let maxDepth: Int

        /// The wire-type names, by wire type (3 and 4 are groups, which protobuf-c does not read).
        static let wireNames = ["varint", "64-bit", "length-delimited", "group start", "group end", "32-bit",
                                "reserved (6)", "reserved (7)"]

        /// Checks the message of type `d` in bytes `start..<end`. Two passes over the bytes, as protobuf-c's scan and
        /// parse, keeping nothing per occurrence (a hostile message may hold millions of them).
        func message(_ d: UnsafePointer<ProtobufCMessageDescriptor>, from start: Int, to end: Int, path: String,
                     depth: Int) -> Problem? {
            if depth > maxDepth {
                return Problem(place: shortened(path), offset: start,
                               reason: "messages are nested more than \(maxDepth) deep (the limit; real models need far fewer)", limit: true)
            }
            var fields = MessageFields(d, path: path)
            if let p = scan(&fields, from: start, to: end) { return p }
            fields.counts = [:]
            return parse(&fields, from: start, to: end, depth: depth)
        }

        /// The fields of a message type and the occurrences of its repeated ones seen so far (for their paths).
        struct MessageFields {
            let fields: UnsafePointer<ProtobufCFieldDescriptor>?
            let count: Int
            let path: String
            var counts: [UInt32: Int] = [:]

            init(_ d: UnsafePointer<ProtobufCMessageDescriptor>, path: String) {
                fields = d.pointee.fields
                count = fields == nil ? 0 : Int(d.pointee.n_fields)
                self.path = path
            }

            func lookup(_ number: UInt32) -> UnsafePointer<ProtobufCFieldDescriptor>? {
                guard let fields else { return nil }
                for i in 0..<count where fields[i].id == number { return fields + i }
                return nil
            }

            /// The path of the next occurrence of field `number` (counting occurrences of repeated fields).
            mutating func memberPath(_ number: UInt32, _ field: UnsafePointer<ProtobufCFieldDescriptor>?) -> String {
                guard let f = field else { return path + ".field \(number)" }
                let name = path + "." + String(cString: f.pointee.name)
                guard f.pointee.label == PROTOBUF_C_LABEL_REPEATED else { return name }
                let n = counts[number, default: 0]
                counts[number] = n + 1
                return name + "[\(n)]"
            }
        }

        /// Scan: keys, value extents, packed element sizes, the number of occurrences, the required fields.
        func scan(_ m: inout MessageFields, from start: Int, to end: Int) -> Problem? {
            var seen = Set<UInt32>()
            var occurrences = 0
            var at = start
            while at < end {
                let o: Occurrence
                switch next(at: at, end: end) {
                case let .success(found): o = found
                case let .failure(bad):
                    let number = key(at: at, end: end)?.0
                    let place = number.map { m.memberPath($0, m.lookup($0)) } ?? m.path
                    return Problem(place: place, offset: bad.offset, reason: bad.reason)
                }
                occurrences += 1
                if occurrences > InputLimits.maxProtobufFieldsPerMessage {
                    return Problem(place: m.path, offset: o.keyAt,
                                   reason: "more than \(InputLimits.maxProtobufFieldsPerMessage) fields in one message (the limit)", limit: true)
                }
                let field = m.lookup(o.number)
                if let f = field, f.pointee.label == PROTOBUF_C_LABEL_REPEATED {
                    if o.wireType == 2, let size = packedSize(f.pointee.type), size > 0, (o.end - o.start) % size != 0 {
                        return Problem(place: m.memberPath(o.number, f), offset: o.start,
                                       reason: "packed \(size)-byte values take \(o.end - o.start) bytes, not a multiple of \(size)")
                    }
                    _ = m.memberPath(o.number, f)
                }
                if field != nil { seen.insert(o.number) }
                at = o.end
            }
            for f in (0..<m.count).compactMap({ i in m.fields.map { $0 + i } }) {
                if f.pointee.label == PROTOBUF_C_LABEL_REQUIRED, f.pointee.default_value == nil, !seen.contains(f.pointee.id) {
                    return Problem(place: m.path + "." + String(cString: f.pointee.name), offset: end,
                                   reason: "a required field is missing")
                }
            }
            return nil
        }

        /// Parse: each value against its declared type, sub-messages recursively (every key is valid now).
        func parse(_ m: inout MessageFields, from start: Int, to end: Int, depth: Int) -> Problem? {
            var at = start
            while at < end, case let .success(o) = next(at: at, end: end) {
                at = o.end
                guard let f = m.lookup(o.number) else { continue }
                let place = m.memberPath(o.number, f)
                let type = f.pointee.type
                if f.pointee.label == PROTOBUF_C_LABEL_REPEATED, o.wireType == 2, let size = packedSize(type) {
                    var p = o.start
                    while size == 0, p < o.end {
                        guard let n = varintLength(at: p, end: o.end) else {
                            return Problem(place: place, offset: p,
                                           reason: "a packed varint is not terminated within 10 bytes or before byte \(o.end)")
                        }
                        p += n
                    }
                    continue
                }
                if let expected = expectedWireType(type), expected != o.wireType {
                    return Problem(place: place, offset: o.keyAt,
                                   reason: "a \(Self.wireNames[Int(o.wireType)]) value where the field is declared \(typeName(type)) (\(Self.wireNames[Int(expected)]))")
                }
                if type == PROTOBUF_C_TYPE_MESSAGE, let sub = f.pointee.descriptor {
                    let subDescriptor = sub.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                    if let p = message(subDescriptor, from: o.start, to: o.end, path: place, depth: depth + 1) { return p }
                }
            }
            return nil
        }

        /// A field path of more than 13 parts as its first 6 and last 6 with "…" between (nested pipelines).
        func shortened(_ path: String) -> String {
            let parts = path.split(separator: ".")
            guard parts.count > 13 else { return path }
            return (parts.prefix(6) + ["…"] + parts.suffix(6)).joined(separator: ".")
        }

        struct Bad: Error {
            var offset: Int
            var reason: String
        }

        /// The field occurrence starting at `at`, or what is wrong with it.
        func next(at: Int, end: Int) -> Result<Occurrence, Bad> {
            guard let (number, wireType, keyLength) = key(at: at, end: end) else {
                let reason = base[at] & 0xf8 == 0
                    ? "field number 0 (byte 0x\(String(base[at], radix: 16))) is not a valid field key"
                    : "a field key is longer than 5 bytes or cut off by the end of its message at byte \(end)"
                return .failure(Bad(offset: at, reason: reason))
            }
            let valueAt = at + keyLength
            switch wireType {
            case 0:
                guard let n = varintLength(at: valueAt, end: end) else {
                    return .failure(Bad(offset: valueAt,
                                        reason: "a varint is not terminated within 10 bytes or before its message ends at byte \(end)"))
                }
                return .success(Occurrence(number: number, wireType: 0, keyAt: at, start: valueAt, end: valueAt + n))
            case 1, 5:
                let size = wireType == 1 ? 8 : 4
                guard end - valueAt >= size else {
                    return .failure(Bad(offset: valueAt,
                                        reason: "a \(size)-byte value is cut off by the end of its message at byte \(end)"))
                }
                return .success(Occurrence(number: number, wireType: wireType, keyAt: at, start: valueAt, end: valueAt + size))
            case 2:
                guard let (length, prefix) = lengthPrefix(at: valueAt, end: end) else {
                    return .failure(Bad(offset: valueAt,
                                        reason: "a length prefix is longer than 5 bytes or cut off by the end of its message at byte \(end)"))
                }
                let start = valueAt + prefix
                guard length <= UInt64(Int32.max) else {
                    return .failure(Bad(offset: valueAt, reason: "a length of \(length) bytes is past 2 GiB"))
                }
                guard Int(length) <= end - start else {
                    return .failure(Bad(offset: valueAt,
                                        reason: "a length of \(length) bytes runs past the end of its message at byte \(end) (\(end - start) bytes are left)"))
                }
                return .success(Occurrence(number: number, wireType: 2, keyAt: at, start: start, end: start + Int(length)))
            default:
                return .failure(Bad(offset: at, reason: "wire type \(wireType) (\(Self.wireNames[Int(wireType)])) is not supported"))
            }
        }

        /// A field key: (field number, wire type, bytes used), as protobuf-c's `parse_tag_and_wiretype`; nil for
        /// field number 0 and keys longer than 5 bytes or cut off.
        func key(at: Int, end: Int) -> (UInt32, UInt8, Int)? {
            let first = base[at]
            guard first & 0xf8 != 0 else { return nil }
            let wireType = first & 7
            var number = UInt32((first & 0x7f) >> 3)
            if first & 0x80 == 0 { return (number, wireType, 1) }
            var shift: UInt32 = 4
            var i = 1
            while i < min(5, end - at) {
                let b = base[at + i]
                number |= UInt32(b & 0x7f) &<< shift
                if b & 0x80 == 0 { return (number, wireType, i + 1) }
                shift += 7
                i += 1
            }
            return nil
        }

        /// Bytes of a varint (at most 10) that ends before `end`, or nil.
        func varintLength(at: Int, end: Int) -> Int? {
            var i = 0
            while i < min(10, end - at) {
                if base[at + i] & 0x80 == 0 { return i + 1 }
                i += 1
            }
            return nil
        }

        /// A length prefix of at most 5 bytes: (value, bytes used), or nil.
        func lengthPrefix(at: Int, end: Int) -> (UInt64, Int)? {
            var value: UInt64 = 0
            var i = 0
            while i < min(5, end - at) {
                let b = base[at + i]
                value |= UInt64(b & 0x7f) << (7 * UInt64(i))
                if b & 0x80 == 0 { return (value, i + 1) }
                i += 1
            }
            return nil
        }

    }

    /// The one wire type protobuf-c accepts for a non-packed value of `type` (nil: any, as for bool).
    static func expectedWireType(_ type: ProtobufCType) -> UInt8? {
        switch type {
        case PROTOBUF_C_TYPE_BOOL: return nil
        case PROTOBUF_C_TYPE_SFIXED32, PROTOBUF_C_TYPE_FIXED32, PROTOBUF_C_TYPE_FLOAT: return 5
        case PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE: return 1
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_BYTES, PROTOBUF_C_TYPE_MESSAGE: return 2
        default: return 0
        }
    }

    /// Bytes per element of a packed fixed-size type, 0 for packed varints, nil for types that are never packed.
    static func packedSize(_ type: ProtobufCType) -> Int? {
        switch expectedWireType(type) {
        case 5: return 4
        case 1: return 8
        case 2: return nil
        default: return 0
        }
    }

    static func typeName(_ type: ProtobufCType) -> String {
        let names: [ProtobufCType: String] = [
            PROTOBUF_C_TYPE_INT32: "int32", PROTOBUF_C_TYPE_SINT32: "sint32", PROTOBUF_C_TYPE_SFIXED32: "sfixed32",
            PROTOBUF_C_TYPE_INT64: "int64", PROTOBUF_C_TYPE_SINT64: "sint64", PROTOBUF_C_TYPE_SFIXED64: "sfixed64",
            PROTOBUF_C_TYPE_UINT32: "uint32", PROTOBUF_C_TYPE_FIXED32: "fixed32", PROTOBUF_C_TYPE_UINT64: "uint64",
            PROTOBUF_C_TYPE_FIXED64: "fixed64", PROTOBUF_C_TYPE_FLOAT: "float", PROTOBUF_C_TYPE_DOUBLE: "double",
            PROTOBUF_C_TYPE_BOOL: "bool", PROTOBUF_C_TYPE_ENUM: "enum", PROTOBUF_C_TYPE_STRING: "string",
            PROTOBUF_C_TYPE_BYTES: "bytes", PROTOBUF_C_TYPE_MESSAGE: "message",
        ]
        return names[type] ?? "type \(type.rawValue)"
    }
}

extension ProtobufWire {
    /// `data` walked (`firstProblem`) and then unpacked by protobuf-c's generated `unpack` for `descriptor`'s message.
    /// A problem the walk finds is an `ImportError` naming the byte and the field path (`malformed`: "not <format>:
    /// byte N, path: reason"; `refused` for a limit of mltool's); protobuf-c failing where the walk found nothing
    /// (its allocations) is `malformed` too. The caller frees what this returns.
    static func unpack<T>(_ data: Data, _ descriptor: ProtobufCMessageDescriptor, file: String, format: String,
                          _ unpack: (Int, UnsafePointer<UInt8>?) -> UnsafeMutablePointer<T>?) throws -> UnsafeMutablePointer<T> {
        let result: Result<UnsafeMutablePointer<T>?, Problem> = data.withUnsafeBytes { raw in
            withUnsafePointer(to: descriptor) { d in
                if let problem = firstProblem(in: raw, message: d) { return .failure(problem) }
                return .success(unpack(raw.count, raw.baseAddress?.assumingMemoryBound(to: UInt8.self)))
            }
        }
        switch result {
        case let .success(value?):
            return value
        case .success(nil):
            let name = String(cString: descriptor.short_name)
            throw ImportError.malformed(file: file, reason: "protobuf-c could not unpack \(name) although its wire format checks out (out of memory?)")
        case let .failure(p) where p.limit:
            throw ImportError.refused(file: file, place: "byte \(p.offset), \(p.place)", reason: p.reason)
        case let .failure(p):
            throw ImportError.malformed(file: file, reason: "not \(format): byte \(p.offset), \(p.place): \(p.reason)")
        }
    }
}

extension ProtobufWire {
    /// The top-level messages mltool reads, for tests that hold the walk against protobuf-c itself.
    enum Schema: CaseIterable { case onnxModel, coreMLModel }

    static func firstProblem(in bytes: [UInt8], _ schema: Schema) -> Problem? {
        bytes.withUnsafeBytes { raw in
            switch schema {
            case .onnxModel:
                withUnsafePointer(to: onnx__model_proto__descriptor) { firstProblem(in: raw, message: $0) }
            case .coreMLModel:
                withUnsafePointer(to: core_ml__specification__model__descriptor) { firstProblem(in: raw, message: $0) }
            }
        }
    }

    /// Whether protobuf-c unpacks `bytes` as `schema`'s message (what it made is freed at once).
    static func protobufCAccepts(_ bytes: [UInt8], _ schema: Schema) -> Bool {
        bytes.withUnsafeBufferPointer { b in
            switch schema {
            case .onnxModel:
                guard let m = onnx__model_proto__unpack(nil, b.count, b.baseAddress) else { return false }
                onnx__model_proto__free_unpacked(m, nil)
            case .coreMLModel:
                guard let m = core_ml__specification__model__unpack(nil, b.count, b.baseAddress) else { return false }
                core_ml__specification__model__free_unpacked(m, nil)
            }
            return true
        }
    }
}
