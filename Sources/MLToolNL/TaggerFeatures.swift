/// The tagger's feature templates (feature sets "mltool-tagger-1", "-2" and "-3", docs/FORMAT.md): for word i of a sentence, the
/// keys of every feature that fires. A key is `TaggerHash.key(template, value…)`; the model keeps one weight row per
/// key seen in training.
///
/// | template | value |
/// |---|---|
/// | 1 | bias (every word) |
/// | 2, 3 | the word; its lower-case form |
/// | 4–7, 8–12 | prefixes of 1–4 and suffixes of 1–5 scalars (lower case) |
/// | 13, 14 | shape, short shape |
/// | 15 | each flag bit that is set (digit, upper, all upper, initial upper, hyphen, period, no letter or digit, number, letter, apostrophe) |
/// | 16 | length (capped at 12) |
/// | 17 | first word of the sentence with an initial capital |
/// | 20–23 | lower-case word at −1, +1, −2, +2 (sentinels past the ends) |
/// | 24, 25 | 3-scalar suffix at −1, +1 |
/// | 26, 27 | short shape at −1, +1 |
/// | 28, 29 | word pairs (−1, 0) and (0, +1), lower case |
/// | 30–33 | tag set seen in training for the word at 0, −1, +1, +2 |
/// | 34 | tag sets at −1 and +1 together |
/// | 40–43 | word cluster at 0: bit-path prefixes of 4, 6, 10 bits and the whole path |
/// | 44, 45 | whole cluster path at −1, +1 |
/// | 35 | each gazetteer bit of the word at 0 (feature set "mltool-tagger-2" only: other sets have none) |
/// | 36, 37 | gazetteer bits at −1, +1 (whole value, when not 0) |
/// | 46, 47 | the word at −1, +1 as written (feature set "mltool-tagger-3" only, `context`) |
/// | 48 | gazetteer bits at 0 (whole value) with the word's initial-capital and all-capitals flags ("-3" only) |
/// | 49, 50 | gazetteer bits at −2, +2 (whole value, when not 0; "-3" only) |
enum TaggerFeatures {
    /// The most keys one word can have.
    static let maxKeys = 96

    /// Writes the keys of word `i` of `w` into `out` and returns how many. `w` holds the sentence with two
    /// sentinels on each side (`TaggerWord.start` twice, the words, `TaggerWord.end` twice): word i is `w[i + 2]`.
    @inline(__always)
    static func keys(_ w: UnsafePointer<TaggerWord>, _ i: Int, into out: UnsafeMutablePointer<UInt64>,
                     context: Bool) -> Int {
        let c = w + (i &+ 2)
        let cur = c.pointee, prev = c[-1], next = c[1], prev2 = c[-2], next2 = c[2]
        var n = 0
        @inline(__always) func emit(_ k: UInt64) { out[n] = k; n &+= 1 }
        typealias H = TaggerHash
        emit(H.key(1, 0))
        emit(H.key(2, cur.form))
        emit(H.key(3, cur.lower))
        for k in 0..<4 where cur.prefix[k] != 0 { emit(H.key(UInt64(4 &+ k), cur.prefix[k])) }
        for k in 0..<5 where cur.suffix[k] != 0 { emit(H.key(UInt64(8 &+ k), cur.suffix[k])) }
        emit(H.key(13, cur.shape))
        emit(H.key(14, cur.shortShape))
        let flags = cur.flags.rawValue
        for bit in 0..<TaggerWord.Flags.count where flags & (1 << bit) != 0 { emit(H.key(15, UInt64(bit))) }
        emit(H.key(16, UInt64(min(cur.length, 12))))
        if i == 0 && cur.flags.contains(.initialUpper) { emit(H.key(17, 1)) }
        emit(H.key(20, prev.lower))
        emit(H.key(21, next.lower))
        emit(H.key(22, prev2.lower))
        emit(H.key(23, next2.lower))
        emit(H.key(24, prev.suffix[2] != 0 ? prev.suffix[2] : prev.lower))
        emit(H.key(25, next.suffix[2] != 0 ? next.suffix[2] : next.lower))
        emit(H.key(26, prev.shortShape))
        emit(H.key(27, next.shortShape))
        emit(H.key(28, prev.lower, cur.lower))
        emit(H.key(29, cur.lower, next.lower))
        emit(H.key(30, UInt64(cur.tagMask)))
        emit(H.key(31, UInt64(prev.tagMask)))
        emit(H.key(32, UInt64(next.tagMask)))
        emit(H.key(33, UInt64(next2.tagMask)))
        emit(H.key(34, UInt64(prev.tagMask), UInt64(next.tagMask)))
        if cur.names != 0 {
            for bit in 0..<14 where cur.names & (1 << bit) != 0 { emit(H.key(35, UInt64(bit))) }
        }
        if prev.names != 0 { emit(H.key(36, UInt64(prev.names))) }
        if next.names != 0 { emit(H.key(37, UInt64(next.names))) }
        if cur.cluster != 0 {
            let bits = 31 &- cur.cluster.leadingZeroBitCount
            if bits > 4 { emit(H.key(40, UInt64(cur.cluster >> UInt32(bits &- 4)))) }
            if bits > 6 { emit(H.key(41, UInt64(cur.cluster >> UInt32(bits &- 6)))) }
            if bits > 10 { emit(H.key(42, UInt64(cur.cluster >> UInt32(bits &- 10)))) }
            emit(H.key(43, UInt64(cur.cluster)))
        }
        if prev.cluster != 0 { emit(H.key(44, UInt64(prev.cluster))) }
        if next.cluster != 0 { emit(H.key(45, UInt64(next.cluster))) }
        guard context else { return n }
        let capitals = UInt64(cur.flags.rawValue & (TaggerWord.Flags.initialUpper.rawValue | TaggerWord.Flags.allUpper.rawValue))
        emit(H.key(46, prev.form))
        emit(H.key(47, next.form))
        if cur.names != 0 { emit(H.key(48, UInt64(cur.names), capitals)) }
        if prev2.names != 0 { emit(H.key(49, UInt64(prev2.names))) }
        if next2.names != 0 { emit(H.key(50, UInt64(next2.names))) }
        return n
    }
}
