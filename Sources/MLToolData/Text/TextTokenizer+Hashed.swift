extension TextTokenizer {
    /// The hashed columns of every term of `text`, in `terms` order: `terms(text).map { hashColumn($0, bits) }`
    /// (the reference, which `TextVectorizerTests` compares it with) without building a string per term. FNV-1a-64
    /// runs over the UTF-8 each term would have: a word n-gram's words with single spaces between them; a character
    /// n-gram's "#" and then the UTF-8 of its characters (grapheme clusters) of the space-padded word.
    func appendHashedTerms(of text: String, bits: Int, into out: inout [Int32]) {
        let words = words(text)
        let mask = (UInt64(1) << UInt64(bits)) &- 1
        let wn = config.wordNgrams
        for n in wn[0]...wn[1] where n <= words.count {
            for start in 0...(words.count - n) {
                var h = Self.fnvOffset
                for k in start..<(start + n) {
                    if k > start { h = Self.fnv(h, 0x20) }
                    for b in words[k].utf8 { h = Self.fnv(h, b) }
                }
                out.append(Int32(truncatingIfNeeded: h & mask))
            }
        }
        guard let cn = config.charNgrams else { return }
        var bytes: [UInt8] = [], bounds: [Int] = []
        for word in words {
            // The padded word " word " as UTF-8, and the byte offset where each of its characters starts (plus the end).
            bytes.removeAll(keepingCapacity: true)
            bounds.removeAll(keepingCapacity: true)
            bytes.append(0x20)
            bounds.append(0)
            for ch in word {
                bounds.append(bytes.count)
                bytes.append(contentsOf: ch.utf8)
            }
            bounds.append(bytes.count)
            bytes.append(0x20)
            bounds.append(bytes.count)
            let count = bounds.count - 1   // characters in the padded word
            bytes.withUnsafeBufferPointer { u in
                func gram(_ offset: Int, _ n: Int) {
                    var h = Self.fnv(Self.fnvOffset, 0x23)   // "#"
                    for i in bounds[offset]..<bounds[Swift.min(offset + n, count)] { h = Self.fnv(h, u[i]) }
                    out.append(Int32(truncatingIfNeeded: h & mask))
                }
                // The same walk as `appendCharNgrams`.
                for n in cn[0]...cn[1] {
                    var offset = 0
                    gram(offset, n)
                    while offset + n < count {
                        offset += 1
                        gram(offset, n)
                    }
                    if offset == 0 { break }
                }
            }
        }
    }

    static let fnvOffset: UInt64 = 0xcbf2_9ce4_8422_2325

    @inline(__always) static func fnv(_ h: UInt64, _ b: UInt8) -> UInt64 { (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
}
