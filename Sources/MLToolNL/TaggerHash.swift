/// The tagger's hashes: a multiply–xorshift hash of UTF-8 bytes read 8 at a time, and the mixing that turns a
/// template number and values into a feature key. Fixed constants, no per-process seed: a stored model's keys are
/// the same on every machine.
enum TaggerHash {
    static let seed: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The hash of `bytes` (never 0).
    @inline(__always) static func bytes(_ u: UnsafeBufferPointer<UInt8>) -> UInt64 {
        guard let p = u.baseAddress else { return finish(seed) }
        let raw = UnsafeRawPointer(p)
        let n = u.count
        var h = seed ^ UInt64(truncatingIfNeeded: n)
        var i = 0
        while i &+ 8 <= n {
            h = add(h, raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i &+= 8
        }
        if i < n {
            var tail: UInt64 = 0, shift: UInt64 = 0
            while i < n { tail |= UInt64(p[i]) << shift; shift &+= 8; i &+= 1 }
            h = add(h, tail)
        }
        return finish(h)
    }

    /// One more 64-bit value into a running hash.
    @inline(__always) static func add(_ h: UInt64, _ v: UInt64) -> UInt64 {
        var x = (h ^ v) &* 0xBF58_476D_1CE4_E5B9
        x ^= x >> 31
        return x &* 0x94D0_49BB_1331_11EB
    }

    /// The final avalanche; never 0 (0 marks an empty slot).
    @inline(__always) static func finish(_ h: UInt64) -> UInt64 {
        var x = h ^ (h >> 32)
        x = x &* 0xD6E8_FEB8_6659_FD93
        x ^= x >> 32
        return x == 0 ? 1 : x
    }

    /// The key of feature template `template` with value `v`.
    @inline(__always) static func key(_ template: UInt64, _ v: UInt64) -> UInt64 {
        finish(add(template &* 0xA24B_AED4_963E_E407, v))
    }

    /// The key of template `template` with two values.
    @inline(__always) static func key(_ template: UInt64, _ a: UInt64, _ b: UInt64) -> UInt64 {
        finish(add(add(template &* 0xA24B_AED4_963E_E407, a), b))
    }
}
