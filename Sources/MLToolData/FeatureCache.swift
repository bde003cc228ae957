import Foundation
import MLToolCore

/// A content-addressed on-disk cache of feature vectors, so a second `train` on the same data extracts nothing.
///
/// Key: SHA-256 of the image file's content hash, the extractor's digest, the preprocessing description and the
/// augmentation variant (`key(contentHash:extractor:preprocessing:variant:)`). Entries live in
/// `<directory>/<first two hex digits>/<key>.f32` and are written to a temporary file `.<key>.f32.tmp-<pid>@<host>-XXXXXX` in
/// the same folder, then renamed (`AtomicReplace`), so a reader never sees half an entry; a killed writer's temporary
/// files are removed by the next process that writes into that folder. Entry layout (little-endian):
///
///     "MLFC"             4 bytes  magic
///     version  u32       1
///     key      32 bytes  the SHA-256 the entry is filed under
///     count    u64       number of floats
///     floats   count × f32
///     crc32    u32       CRC-32 (IEEE) of everything before it
///
/// An entry that is short, long, mislabelled, fails its checksum or holds a non-finite float is a miss: it is
/// removed and never used (recomputed, where a non-finite feature once stopped training). There is
/// no fsync: a crash can lose an entry, and the checksum catches a torn one.
public struct FeatureCache: Sendable {
    public let directory: String
    private static let magic: [UInt8] = Array("MLFC".utf8)
    private static let version: UInt32 = 1
    private static let headerSize = 4 + 4 + 32 + 8

    /// A cache rooted at `directory` (created on the first `put`).
    public init(directory: String) { self.directory = directory }

    /// `$MLTOOL_CACHE/features`, else `~/.cache/mltool/features`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let d = environment["MLTOOL_CACHE"], !d.isEmpty { return d + "/features" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.cache/mltool/features"
    }

    /// The cache key (64 hex digits) for one image, extractor, preprocessing and augmentation variant.
    public static func key(contentHash: String, extractor: String, preprocessing: String, variant: String) -> String {
        var h = SHA256()
        for part in ["mltool-features-v1", contentHash, extractor, preprocessing, variant] {
            let bytes = Array(part.utf8)
            h.update(withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { Array($0) })
            h.update(bytes)
        }
        return h.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// Where the entry for `key` lives.
    public func path(for key: String) -> String {
        directory + "/" + String(key.prefix(2)) + "/" + key + ".f32"
    }

    /// The features stored under `key`, or nil if there is no intact entry (a damaged one is removed).
    public func get(key: String) -> [Float]? {
        let p = path(for: key)
        guard let data = FileManager.default.contents(atPath: p) else { return nil }
        if let v = Self.decode([UInt8](data), key: key) { return v }
        try? FileManager.default.removeItem(atPath: p)
        return nil
    }

    /// Stores `features` under `key`, atomically (temporary file + rename).
    public func put(key: String, features: [Float]) throws {
        guard let keyBytes = Self.keyBytes(key) else {
            throw DataError.invalidArgument(what: "feature cache key", value: key, expected: "64 hex digits")
        }
        let p = path(for: key)
        let dir = (p as NSString).deletingLastPathComponent
        var bytes = Self.magic
        bytes.reserveCapacity(Self.headerSize + features.count * 4 + 4)
        append(&bytes, Self.version)
        bytes += keyBytes
        append(&bytes, UInt64(features.count))
        for f in features { append(&bytes, f.bitPattern) }
        append(&bytes, CRC32.checksum(bytes))
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw DataError.cannotWrite(file: dir, reason: "cannot create the cache folder: \(error.localizedDescription)")
        }
        Self.sweepOnce(dir)
        do {
            try AtomicReplace.write(bytes, to: p, durable: false, removingStale: false)
        } catch {
            throw DataError.cannotWrite(file: p, reason: error.description)
        }
    }

    /// Removes a killed writer's temporary files from a shard folder, once per shard per process (a sweep per
    /// entry would list the folder once per image).
    private static func sweepOnce(_ dir: String) {
        swept.lock.lock()
        let first = swept.dirs.insert(dir).inserted
        swept.lock.unlock()
        if first { AtomicReplace.removeStaleTemporaries(of: nil, in: dir) }
    }
    private final class Swept: @unchecked Sendable { let lock = NSLock(); var dirs = Set<String>() }
    private static let swept = Swept()

    package static func decode(_ b: [UInt8], key: String) -> [Float]? {
        guard b.count >= headerSize + 4, Array(b[0..<4]) == magic, u32(b, 4) == version,
              let keyBytes = keyBytes(key), Array(b[8..<40]) == keyBytes else { return nil }
        let count = u64(b, 40)
        guard count <= UInt64(b.count), UInt64(headerSize) + count * 4 + 4 == UInt64(b.count) else { return nil }
        let end = b.count - 4
        guard CRC32.checksum(b[0..<end]) == u32(b, end) else { return nil }
        let floats = (0..<Int(count)).map { Float(bitPattern: u32(b, headerSize + $0 * 4)) }
        return floats.allSatisfy(\.isFinite) ? floats : nil
    }

    private static func keyBytes(_ key: String) -> [UInt8]? {
        let hex = Array(key.utf8)
        guard hex.count == 64 else { return nil }
        var out = [UInt8]()
        for i in stride(from: 0, to: 64, by: 2) {
            guard let v = UInt8(String(decoding: hex[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(v)
        }
        return out
    }

    private static func u32(_ b: [UInt8], _ o: Int) -> UInt32 {
        UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3]) << 24
    }
    private static func u64(_ b: [UInt8], _ o: Int) -> UInt64 { UInt64(u32(b, o)) | UInt64(u32(b, o + 4)) << 32 }
    private func append<T: FixedWidthInteger>(_ b: inout [UInt8], _ v: T) {
        withUnsafeBytes(of: v.littleEndian) { b += $0 }
    }
}

/// CRC-32 (IEEE 802.3, as zlib), table-driven.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}
