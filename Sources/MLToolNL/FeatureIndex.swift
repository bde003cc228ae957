/// Feature keys (non-zero 64-bit hashes) to dense row numbers: open addressing with linear probing, a slot holding
/// the key and its row. Rows are numbered in insertion order.
struct FeatureIndex: Sendable {
    private var keys: [UInt64]
    private var rows: [Int32]
    private var shift: UInt64
    private(set) var count = 0

    var keysInSlots: [UInt64] { keys }
    var rowsInSlots: [Int32] { rows }

    /// Room for `expected` keys before the first growth.
    init(expected: Int = 1 << 16) {
        var log2 = 10
        while (1 << log2) < 2 * expected && log2 < 40 { log2 += 1 }
        keys = [UInt64](repeating: 0, count: 1 << log2)
        rows = [Int32](repeating: -1, count: 1 << log2)
        shift = UInt64(64 - log2)
    }

    /// The index of sorted, distinct keys: row r is `sorted[r]`.
    init(sorted: UnsafeBufferPointer<UInt64>) {
        self.init(expected: sorted.count)
        for k in sorted { _ = insert(k) }
    }

    @inline(__always) private func slot(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The row of `key`, or −1.
    @inline(__always) func row(_ key: UInt64) -> Int32 {
        let mask = keys.count &- 1
        return keys.withUnsafeBufferPointer { k in
            var s = slot(key)
            while true {
                let found = k[s]
                if found == key { return rows[s] }
                if found == 0 { return -1 }
                s = (s &+ 1) & mask
            }
        }
    }

    /// The row of `key`, added as the next row when new.
    mutating func insert(_ key: UInt64) -> (row: Int32, isNew: Bool) {
        let mask = keys.count &- 1
        var s = slot(key)
        while true {
            let found = keys[s]
            if found == key { return (rows[s], false) }
            if found == 0 { break }
            s = (s &+ 1) & mask
        }
        let row = Int32(count)
        keys[s] = key
        rows[s] = row
        count += 1
        if count * 2 > keys.count { grow() }
        return (row, true)
    }

    private mutating func grow() {
        let oldKeys = keys, oldRows = rows
        keys = [UInt64](repeating: 0, count: oldKeys.count * 2)
        rows = [Int32](repeating: -1, count: oldKeys.count * 2)
        shift -= 1
        let mask = keys.count - 1
        for i in 0..<oldKeys.count where oldKeys[i] != 0 {
            var s = slot(oldKeys[i])
            while keys[s] != 0 { s = (s &+ 1) & mask }
            keys[s] = oldKeys[i]
            rows[s] = oldRows[i]
        }
    }
}

extension FeatureIndex {
    /// Calls `body` with every key and its row, in slot order.
    func forEach(_ body: (UInt64, Int32) -> Void) {
        for (key, row) in zip(keysInSlots, rowsInSlots) where key != 0 { body(key, row) }
    }
}
