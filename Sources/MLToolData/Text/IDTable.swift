import Foundation
import MLToolCore

/// UInt64 keys (never UInt64.max) to Int32 values: open addressing with a multiplicative hash, for the n-gram trie.
/// A slot is two words, key then value, so that a probe reads one cache line.
struct IDTable: Sendable {
    private var slots: [UInt64]
    private var shift: UInt64
    private(set) var count = 0

    /// Room for `expected` keys before the first growth.
    init(expected: Int = 8192) {
        var log2 = 14
        while (1 << log2) < 2 * expected && log2 < 40 { log2 += 1 }
        slots = Self.empty(1 << log2)
        shift = UInt64(64 - log2)
    }

    private static func empty(_ capacity: Int) -> [UInt64] {
        var s = [UInt64](repeating: 0, count: 2 * capacity)
        for i in stride(from: 0, to: s.count, by: 2) { s[i] = .max }
        return s
    }

    /// The value of `key`, inserting `value` when the key is new (`isNew` tells).
    mutating func findOrInsert(_ key: UInt64, _ value: Int32) -> (value: Int32, isNew: Bool) {
        let mask = slots.count / 2 - 1
        var slot = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
        while true {
            let k = slots[2 &* slot]
            if k == key { return (Int32(truncatingIfNeeded: slots[2 &* slot &+ 1]), false) }
            if k == .max { break }
            slot = (slot &+ 1) & mask
        }
        slots[2 &* slot] = key
        slots[2 &* slot &+ 1] = UInt64(UInt32(bitPattern: value))
        count += 1
        if count * 2 > slots.count / 2 { grow() }
        return (value, true)
    }

    private mutating func grow() {
        let old = slots
        slots = Self.empty(old.count)  // twice the slots: `old.count` words hold old.count / 2
        shift -= 1
        let mask = slots.count / 2 - 1
        for i in stride(from: 0, to: old.count, by: 2) where old[i] != .max {
            var slot = Int(truncatingIfNeeded: (old[i] &* 0x9E37_79B9_7F4A_7C15) >> shift)
            while slots[2 &* slot] != .max { slot = (slot &+ 1) & mask }
            slots[2 &* slot] = old[i]
            slots[2 &* slot &+ 1] = old[i &+ 1]
        }
    }
}
