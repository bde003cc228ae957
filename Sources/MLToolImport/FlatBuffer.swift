import MLToolCore

/// A bounds-checked reader of FlatBuffers (the TensorFlow Lite container) over untrusted bytes.
///
/// Layout (flatbuffers.dev "internals"; little-endian throughout):
/// - byte 0: u32 offset of the root table; bytes 4–7 the file identifier ("TFL3" for TFLite).
/// - A table at position t starts with an i32 soffset: its vtable is at t − soffset.
/// - A vtable: u16 vtable size in bytes, u16 table size, then one u16 per field (slot): the field's offset from t,
///   0 for an absent field (which then takes its schema default).
/// - An offset field (sub-table, vector, string) holds a u32 relative to the field's own position.
/// - A vector: u32 element count, then the elements; a string is a byte vector followed by a 0 byte.
/// - A union is two fields: a u8 type (slot n) and an offset to the table (slot n + 1).
/// Every position, vtable entry and vector length is checked against the bytes before it is used; sizes go through
/// `Checked`; a failure throws `ImportError.invalid` naming the file, the byte offset and what was expected.
/// Tables are read to the fixed depth of the schema subset (Model → SubGraph → Operator → options): nothing recurses
/// on what the file says, so a cyclic or deeply nested file costs one read per field asked for.
struct FlatBuffer {
    /// A table: its position and the position and size of its vtable.
    struct Table {
        var position: Int
        var vtable: Int
        var vtableSize: Int
        /// What the table is ("Model.subgraphs[0]"), for errors.
        var what: String
    }

    let bytes: [UInt8]
    let file: String

    init(bytes: [UInt8], file: String) {
        self.bytes = bytes; self.file = file
    }

    /// The 4-byte file identifier at offset 4, or nil when the file is shorter than 8 bytes.
    var identifier: String? {
        bytes.count >= 8 ? String(decoding: bytes[4..<8], as: UTF8.self) : nil
    }

    // MARK: - Checked reads

    func fail(_ at: Int, _ what: String, expected: String, actual: String) -> ImportError {
        .invalid(file: file, place: "byte \(at): \(what)", expected: expected, actual: actual)
    }

    /// Checks that `count` bytes at `at` lie inside the file.
    func require(_ at: Int, _ count: Int, _ what: String) throws {
        guard at >= 0, count >= 0, at <= bytes.count, count <= bytes.count - at else {
            throw fail(at, what, expected: "\(count) byte\(count == 1 ? "" : "s") inside the file's \(bytes.count)",
                       actual: at < 0 || at > bytes.count ? "a position outside the file" : "\(max(bytes.count - at, 0)) left")
        }
    }

    func u8(_ at: Int, _ what: String) throws -> UInt8 {
        try require(at, 1, what)
        return bytes[at]
    }

    func u16(_ at: Int, _ what: String) throws -> UInt16 {
        try require(at, 2, what)
        return UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
    }

    func u32(_ at: Int, _ what: String) throws -> UInt32 {
        try require(at, 4, what)
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
    }

    func u64(_ at: Int, _ what: String) throws -> UInt64 {
        try require(at, 8, what)
        return (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
    }

    /// The position an offset field at `at` points to (u32, relative to `at`), checked to lie inside the file.
    func follow(_ at: Int, _ what: String) throws -> Int {
        let target = try Checked.add(at, Int(try u32(at, what)), file: file, what: what)
        guard target < bytes.count else {
            throw fail(at, what, expected: "an offset to a position inside the file's \(bytes.count) bytes",
                       actual: "position \(target)")
        }
        return target
    }

    // MARK: - Tables

    /// The root table (the u32 at byte 0).
    func root(_ what: String) throws -> Table {
        try table(at: try follow(0, "\(what) root offset"), what)
    }

    /// The table at `position`, with its vtable checked: inside the file, an even size of at least 4 bytes.
    func table(at position: Int, _ what: String) throws -> Table {
        let soffset = Int(Int32(bitPattern: try u32(position, "\(what) vtable offset")))
        let (vtable, overflow) = position.subtractingReportingOverflow(soffset)
        guard !overflow, vtable >= 0, vtable < bytes.count else {
            throw fail(position, "\(what) vtable offset", expected: "a vtable inside the file's \(bytes.count) bytes",
                       actual: "soffset \(soffset) (position \(overflow ? "out of range" : "\(vtable)"))")
        }
        let size = Int(try u16(vtable, "\(what) vtable size"))
        guard size >= 4, size % 2 == 0 else {
            throw fail(vtable, "\(what) vtable size", expected: "an even size ≥ 4", actual: "\(size)")
        }
        try require(vtable, size, "\(what) vtable")
        let tableSize = Int(try u16(vtable + 2, "\(what) table size"))
        try require(position, max(tableSize, 4), "\(what) table")
        return Table(position: position, vtable: vtable, vtableSize: size, what: what)
    }

    /// The position of field `slot` of `t`, or nil when it is absent. Checks that `size` bytes lie there.
    func field(_ t: Table, _ slot: Int, size: Int, _ what: String) throws -> Int? {
        let entry = 4 + 2 * slot
        guard entry + 2 <= t.vtableSize else { return nil }
        let offset = Int(try u16(t.vtable + entry, "\(t.what).\(what) vtable entry"))
        guard offset != 0 else { return nil }
        let at = try Checked.add(t.position, offset, file: file, what: "\(t.what).\(what)")
        try require(at, size, "\(t.what).\(what)")
        return at
    }

    // MARK: - Scalars

    func uint8(_ t: Table, _ slot: Int, _ what: String, default value: UInt8 = 0) throws -> UInt8 {
        guard let at = try field(t, slot, size: 1, what) else { return value }
        return bytes[at]
    }

    func int8(_ t: Table, _ slot: Int, _ what: String, default value: Int8 = 0) throws -> Int8 {
        Int8(bitPattern: try uint8(t, slot, what, default: UInt8(bitPattern: value)))
    }

    func bool(_ t: Table, _ slot: Int, _ what: String, default value: Bool = false) throws -> Bool {
        try uint8(t, slot, what, default: value ? 1 : 0) != 0
    }

    func int32(_ t: Table, _ slot: Int, _ what: String, default value: Int32 = 0) throws -> Int32 {
        guard let at = try field(t, slot, size: 4, what) else { return value }
        return Int32(bitPattern: try u32(at, what))
    }

    func uint32(_ t: Table, _ slot: Int, _ what: String, default value: UInt32 = 0) throws -> UInt32 {
        guard let at = try field(t, slot, size: 4, what) else { return value }
        return try u32(at, what)
    }

    func uint64(_ t: Table, _ slot: Int, _ what: String, default value: UInt64 = 0) throws -> UInt64 {
        guard let at = try field(t, slot, size: 8, what) else { return value }
        return try u64(at, what)
    }

    func float32(_ t: Table, _ slot: Int, _ what: String, default value: Float = 0) throws -> Float {
        guard let at = try field(t, slot, size: 4, what) else { return value }
        return Float(bitPattern: try u32(at, what))
    }

    // MARK: - Offsets: tables, vectors, strings

    /// The sub-table in field `slot`, or nil when absent.
    func table(_ t: Table, _ slot: Int, _ what: String) throws -> Table? {
        guard let at = try field(t, slot, size: 4, what) else { return nil }
        return try table(at: try follow(at, "\(t.what).\(what)"), "\(t.what).\(what)")
    }

    /// The vector in field `slot`: the position of its first element and its length, with count × elementSize
    /// checked to lie inside the file; nil when absent.
    func vector(_ t: Table, _ slot: Int, elementSize: Int, _ what: String) throws -> (start: Int, count: Int)? {
        guard let at = try field(t, slot, size: 4, what) else { return nil }
        let place = "\(t.what).\(what)"
        let header = try follow(at, place)
        let count = Int(try u32(header, "\(place) length"))
        let start = header + 4
        let size = try Checked.mul(count, elementSize, file: file, what: "\(place) size")
        guard start <= bytes.count, size <= bytes.count - start else {
            throw fail(header, "\(place) length", expected: "\(count) × \(elementSize) bytes inside the file's \(bytes.count)",
                       actual: "\(max(bytes.count - start, 0)) left")
        }
        return (start, count)
    }

    /// The tables of a vector of offsets (empty when absent).
    func tables(_ t: Table, _ slot: Int, _ what: String) throws -> [Table] {
        guard let (start, count) = try vector(t, slot, elementSize: 4, what) else { return [] }
        return try (0..<count).map { i in
            let at = start + 4 * i
            return try table(at: try follow(at, "\(t.what).\(what)[\(i)]"), "\(t.what).\(what)[\(i)]")
        }
    }

    func int32s(_ t: Table, _ slot: Int, _ what: String) throws -> [Int32]? {
        guard let (start, count) = try vector(t, slot, elementSize: 4, what) else { return nil }
        return try (0..<count).map { Int32(bitPattern: try u32(start + 4 * $0, what)) }
    }

    func int64s(_ t: Table, _ slot: Int, _ what: String) throws -> [Int64]? {
        guard let (start, count) = try vector(t, slot, elementSize: 8, what) else { return nil }
        return try (0..<count).map { Int64(bitPattern: try u64(start + 8 * $0, what)) }
    }

    func float32s(_ t: Table, _ slot: Int, _ what: String) throws -> [Float]? {
        guard let (start, count) = try vector(t, slot, elementSize: 4, what) else { return nil }
        return try (0..<count).map { Float(bitPattern: try u32(start + 4 * $0, what)) }
    }

    /// The bytes of a [ubyte] vector, as a range of the file (nil when absent).
    func byteRange(_ t: Table, _ slot: Int, _ what: String) throws -> Range<Int>? {
        guard let (start, count) = try vector(t, slot, elementSize: 1, what) else { return nil }
        return start..<(start + count)
    }

    /// A string field (UTF-8; invalid sequences are replaced), nil when absent.
    func string(_ t: Table, _ slot: Int, _ what: String) throws -> String? {
        guard let range = try byteRange(t, slot, what) else { return nil }
        return String(decoding: bytes[range], as: UTF8.self)
    }
}
