import Foundation
import MLToolCore

/// Interns words (UTF-8 byte strings) as dense ids: open addressing on FNV-1a, bytes kept in one arena. A slot holds
/// the low 32 bits of the hash and id + 1 (0: empty), so a probe compares hashes without reading the arena.
struct WordTable: Sendable {
    private(set) var arena: [UInt8] = []
    private(set) var starts: [Int] = [0]
    private var slots: [UInt64]
    private var mask: Int

    init() {
        slots = [UInt64](repeating: 0, count: 1 << 12)
        mask = (1 << 12) - 1
    }

    var count: Int { starts.count - 1 }

    func appendBytes(of id: Int, to out: inout [UInt8]) { out += arena[starts[id]..<starts[id + 1]] }

    /// The id of the word `bytes[0..<length]`, added when new (`isNew` tells).
    mutating func intern(_ bytes: UnsafePointer<UInt8>, _ length: Int) -> (id: Int32, isNew: Bool) {
        let h = Self.hash(bytes, length)
        let tag = h & 0xFFFF_FFFF
        var slot = Int(truncatingIfNeeded: h) & mask
        while true {
            let entry = slots[slot]
            if entry == 0 { break }
            if entry >> 32 == tag {
                let id = Int(entry & 0xFFFF_FFFF) &- 1
                let start = starts[id]
                if starts[id &+ 1] &- start == length {
                    let same = arena.withUnsafeBufferPointer { memcmp($0.baseAddress! + start, bytes, length) == 0 }
                    if same { return (Int32(id), false) }
                }
            }
            slot = (slot &+ 1) & mask
        }
        let id = count
        slots[slot] = tag << 32 | UInt64(id &+ 1)
        arena.append(contentsOf: UnsafeBufferPointer(start: bytes, count: length))
        starts.append(arena.count)
        if count * 2 > mask { grow() }
        return (Int32(id), true)
    }

    /// A hash of `bytes[0..<length]` read 8 bytes at a time (multiply, xor-shift): a word costs one or two
    /// multiplications instead of one per byte. Only the table's layout depends on it, not the ids.
    @inline(__always) static func hash(_ bytes: UnsafePointer<UInt8>, _ length: Int) -> UInt64 {
        let raw = UnsafeRawPointer(bytes)
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: length)
        var i = 0
        while i &+ 8 <= length {
            h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
            i &+= 8
        }
        if i < length {
            var tail: UInt64 = 0, shift: UInt64 = 0
            while i < length { tail |= UInt64(bytes[i]) << shift; shift &+= 8; i &+= 1 }
            h = (h ^ tail) &* 0x94D0_49BB_1331_11EB
        }
        h ^= h >> 32
        return h &* 0xD6E8_FEB8_6659_FD93
    }

    private mutating func grow() {
        let old = slots
        slots = [UInt64](repeating: 0, count: old.count * 2)
        mask = slots.count - 1
        for entry in old where entry != 0 {
            var slot = Int(truncatingIfNeeded: entry >> 32) & mask
            while slots[slot] != 0 { slot = (slot &+ 1) & mask }
            slots[slot] = entry
        }
    }
}
