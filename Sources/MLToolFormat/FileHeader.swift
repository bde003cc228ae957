/// The fixed 128-byte header of a model file, the format's constants and its caps (docs/FORMAT.md sections 2, 3, 7).
struct FileHeader: Equatable {
    /// 0x89 "MLT" CR LF SUB LF.
    static let magic: [UInt8] = [0x89, 0x4D, 0x4C, 0x54, 0x0D, 0x0A, 0x1A, 0x0A]
    /// "MLTEND" CR LF, the first 8 bytes of the trailer.
    static let endMagic: [UInt8] = [0x4D, 0x4C, 0x54, 0x45, 0x4E, 0x44, 0x0D, 0x0A]
    static let currentVersion: UInt32 = 1
    static let size = 128
    static let hashedSize = 120
    static let trailerSize = 16
    static let alignment = 64
    /// Header, 64 bytes of metadata (with its padding), no data, trailer.
    static let minimumFileSize = 208

    static let maxMetadataLength = 256 << 20
    static let minMetadataLength = 2
    static let maxTensorCount = 1_000_000
    static let maxNameBytes = 1024
    static let maxRank = 8
    static let maxNodes = 1_000_000

    var version: UInt32 = currentVersion
    var flags: UInt32 = 0
    var fileLength: UInt64 = 0
    var metadataOffset: UInt64 = UInt64(size)
    var metadataLength: UInt64 = 0
    var dataOffset: UInt64 = 0
    var dataLength: UInt64 = 0
    var trailerOffset: UInt64 = 0
    var tensorCount: UInt64 = 0
    var metadataHash: UInt64 = 0
    var dataHash: UInt64 = 0
    var reservedIsZero = true
    var headerHash: UInt64 = 0

    init() {}

    /// Reads the fields of the first 128 bytes of `raw` (the caller checked the length and the magic).
    init(decoding raw: UnsafeRawBufferPointer) {
        func u64(_ at: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        version = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        flags = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
        fileLength = u64(16)
        metadataOffset = u64(24)
        metadataLength = u64(32)
        dataOffset = u64(40)
        dataLength = u64(48)
        trailerOffset = u64(56)
        tensorCount = u64(64)
        metadataHash = u64(72)
        dataHash = u64(80)
        reservedIsZero = raw[88..<120].allSatisfy { $0 == 0 }
        headerHash = u64(120)
    }

    /// The 128 header bytes, with `header_xxh64` computed over the first 120.
    func encoded() -> [UInt8] {
        var w = [UInt8]()
        w.reserveCapacity(FileHeader.size)
        func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { w.append(contentsOf: $0) } }
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { w.append(contentsOf: $0) } }
        w.append(contentsOf: FileHeader.magic)
        u32(version); u32(flags)
        u64(fileLength); u64(metadataOffset); u64(metadataLength); u64(dataOffset); u64(dataLength)
        u64(trailerOffset); u64(tensorCount); u64(metadataHash); u64(dataHash)
        w.append(contentsOf: [UInt8](repeating: 0, count: 32))
        u64(XXH64.hash(w))
        return w
    }

    /// `align64(x)`, or nil when it overflows.
    static func align(_ x: UInt64) -> UInt64? {
        let (s, o) = x.addingReportingOverflow(UInt64(alignment - 1))
        return o ? nil : s & ~UInt64(alignment - 1)
    }
}
