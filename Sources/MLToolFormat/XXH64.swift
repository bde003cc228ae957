/// XXH64 (xxHash, 64-bit), the checksum of every section of a model file (docs/FORMAT.md section 6).
///
/// Not cryptographic: it detects accidental damage. All arithmetic wraps (`&+`, `&*`), as the algorithm is defined
/// modulo 2^64; inputs are read as little-endian words.
public enum XXH64 {
    static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    /// The XXH64 hash of `bytes` with `seed` (mltool uses seed 0).
    public static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let len = bytes.count
        guard let base = bytes.baseAddress, len > 0 else { return avalanche(seed &+ p5) }
        var i = 0
        var h: UInt64
        if len >= 32 {
            var v1 = seed &+ p1 &+ p2, v2 = seed &+ p2, v3 = seed, v4 = seed &- p1
            let limit = len &- 32
            while i <= limit {
                v1 = round(v1, load64(base, i))
                v2 = round(v2, load64(base, i &+ 8))
                v3 = round(v3, load64(base, i &+ 16))
                v4 = round(v4, load64(base, i &+ 24))
                i &+= 32
            }
            h = rotl(v1, 1) &+ rotl(v2, 7) &+ rotl(v3, 12) &+ rotl(v4, 18)
            h = merge(h, v1); h = merge(h, v2); h = merge(h, v3); h = merge(h, v4)
        } else {
            h = seed &+ p5
        }
        h &+= UInt64(len)
        while len &- i >= 8 {
            h = rotl(h ^ round(0, load64(base, i)), 27) &* p1 &+ p4
            i &+= 8
        }
        if len &- i >= 4 {
            let w = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt32.self)))
            h = rotl(h ^ (w &* p1), 23) &* p2 &+ p3
            i &+= 4
        }
        while i < len {
            h = rotl(h ^ (UInt64(base.load(fromByteOffset: i, as: UInt8.self)) &* p5), 11) &* p1
            i &+= 1
        }
        return avalanche(h)
    }

    /// The XXH64 hash of a byte array.
    public static func hash(_ bytes: [UInt8], seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { hash($0, seed: seed) }
    }

    @inline(__always) static func load64(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always) static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x &<< r) | (x &>> (64 &- r)) }

    @inline(__always) static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        rotl(acc &+ input &* p2, 31) &* p1
    }

    @inline(__always) static func merge(_ acc: UInt64, _ v: UInt64) -> UInt64 {
        (acc ^ round(0, v)) &* p1 &+ p4
    }

    @inline(__always) static func avalanche(_ h0: UInt64) -> UInt64 {
        var h = h0
        h ^= h &>> 33; h &*= p2
        h ^= h &>> 29; h &*= p3
        h ^= h &>> 32
        return h
    }
}
