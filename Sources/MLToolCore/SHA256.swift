import Foundation

/// SHA-256 (FIPS 180-4), for provenance, split manifests and the feature cache. No Swift crypto package can be
/// fetched here, so this is a plain implementation.
public struct SHA256: Sendable {
    private var h: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    private var pending = [UInt8]()
    private var length: UInt64 = 0

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    public init() {}

    public mutating func update(_ data: UnsafeRawBufferPointer) {
        length &+= UInt64(data.count)
        var start = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, data.count)
            pending.append(contentsOf: data[0..<take])
            start = take
            if pending.count == 64 {
                pending.withUnsafeBytes { compress($0, at: 0) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        while data.count - start >= 64 {
            compress(data, at: start)
            start += 64
        }
        if start < data.count { pending.append(contentsOf: data[start...]) }
    }

    public mutating func update<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        let a = Array(bytes)
        a.withUnsafeBytes { update($0) }
    }

    public mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var tail: [UInt8] = [0x80]
        let padTo = (pending.count + 1) % 64 <= 56 ? 56 - (pending.count + 1) % 64 : 120 - (pending.count + 1) % 64
        tail += [UInt8](repeating: 0, count: padTo)
        for i in (0..<8).reversed() { tail.append(UInt8(truncatingIfNeeded: bitLength >> (UInt64(i) * 8))) }
        let saved = length
        update(tail)
        length = saved
        var out = [UInt8]()
        for v in h { for s in [24, 16, 8, 0] { out.append(UInt8(truncatingIfNeeded: v >> UInt32(s))) } }
        return out
    }

    private mutating func compress(_ p: UnsafeRawBufferPointer, at offset: Int) {
        // The 64-word schedule lives on the stack: no allocation per block.
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 {
                let b = offset &+ i &* 4
                w[i] = UInt32(p[b]) << 24 | UInt32(p[b &+ 1]) << 16 | UInt32(p[b &+ 2]) << 8 | UInt32(p[b &+ 3])
            }
            for i in 16..<64 {
                let s0 = rotr(w[i &- 15], 7) ^ rotr(w[i &- 15], 18) ^ (w[i &- 15] >> 3)
                let s1 = rotr(w[i &- 2], 17) ^ rotr(w[i &- 2], 19) ^ (w[i &- 2] >> 10)
                w[i] = w[i &- 16] &+ s0 &+ w[i &- 7] &+ s1
            }
            var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7]
            for i in 0..<64 {
                let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                let ch = (e & f) ^ (~e & g)
                let t1 = hh &+ s1 &+ ch &+ SHA256.k[i] &+ w[i]
                let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                let maj = (a & b) ^ (a & c) ^ (b & c)
                let t2 = s0 &+ maj
                hh = g; g = f; f = e; e = d &+ t1; d = c; c = b; b = a; a = t1 &+ t2
            }
            h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d; h[4] &+= e; h[5] &+= f; h[6] &+= g; h[7] &+= hh
        }
    }

    @inline(__always) private func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }

    /// Lowercase hex of `digest` (String(format:) per byte cost ~5 µs a digest; holdout manifests hash thousands).
    static func hexString(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(digest.count * 2)
        for b in digest { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The lowercase hex digest of `bytes`.
    public static func hex<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var s = SHA256()
        s.update(bytes)
        return hexString(s.finalize())
    }

    /// The lowercase hex digest of the file at `path`, read in 1 MiB chunks.
    public static func hex(fileAt path: String) throws -> String {
        guard let fh = FileHandle(forReadingAtPath: path) else {
            throw CoreError.cannotRead(file: path, reason: "no such file or not readable")
        }
        defer { try? fh.close() }
        var s = SHA256()
        while true {
            let chunk: Data
            do { chunk = try fh.read(upToCount: 1 << 20) ?? Data() } catch {
                throw CoreError.cannotRead(file: path, reason: "\(error)")
            }
            if chunk.isEmpty { break }
            chunk.withUnsafeBytes { s.update($0) }
        }
        return hexString(s.finalize())
    }
}
