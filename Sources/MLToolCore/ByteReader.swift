/// A bounds-checked little-endian reader over untrusted bytes. Every read checks the remaining length first and
/// throws `CoreError.truncated` naming the file, the offset and what was being read.
public struct ByteReader {
    public let bytes: UnsafeRawBufferPointer
    public let file: String
    public private(set) var offset: Int

    public init(_ bytes: UnsafeRawBufferPointer, file: String, offset: Int = 0) {
        self.bytes = bytes; self.file = file; self.offset = offset
    }

    public var remaining: Int { bytes.count - offset }

    /// Checks that `count` bytes remain at the current offset.
    public func require(_ count: Int, _ what: String) throws {
        guard count >= 0, offset <= bytes.count, count <= bytes.count - offset else {
            throw CoreError.truncated(file: file, offset: offset, needed: count, length: bytes.count, what: what)
        }
    }

    public mutating func seek(to newOffset: Int, _ what: String) throws {
        guard newOffset >= 0, newOffset <= bytes.count else {
            throw CoreError.truncated(file: file, offset: newOffset, needed: 0, length: bytes.count, what: what)
        }
        offset = newOffset
    }

    public mutating func u8(_ what: String) throws -> UInt8 {
        try require(1, what)
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func u32(_ what: String) throws -> UInt32 {
        try require(4, what)
        defer { offset += 4 }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    public mutating func u64(_ what: String) throws -> UInt64 {
        try require(8, what)
        defer { offset += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// A u64 that must fit in Int (as sizes and offsets must).
    public mutating func size(_ what: String) throws -> Int {
        let at = offset
        let v = try u64(what)
        guard v <= UInt64(Int.max) else {
            throw CoreError.invalidValue(file: file, offset: at, what: what, expected: "≤ \(Int.max)", actual: "\(v)")
        }
        return Int(v)
    }

    public mutating func bytes(_ count: Int, _ what: String) throws -> UnsafeRawBufferPointer {
        try require(count, what)
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }
}

/// A little-endian byte writer.
public struct ByteWriter {
    public private(set) var bytes: [UInt8] = []
    public init() {}
    public var count: Int { bytes.count }
    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    public mutating func append<C: Collection>(_ b: C) where C.Element == UInt8 { bytes.append(contentsOf: b) }
    public mutating func pad(toMultipleOf a: Int) { while bytes.count % a != 0 { bytes.append(0) } }
}
