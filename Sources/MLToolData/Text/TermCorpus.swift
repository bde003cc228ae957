import Dispatch
import Foundation
import MLToolCore

/// Documents tokenized once, each as a list of term ids, so that training can fit vocabularies on several subsets
/// (the training split, then training + validation) and build their sparse rows without tokenizing again.
///
/// `vectorizer(fittedOn:)` and `rows(_:_:)` give exactly what `TextVectorizer.fit(documents:config:)` and
/// `transform(_:)` give for the same documents (same vocabulary, idf and bit-identical rows; tested).
///
/// Fast path (word n-grams with NFKC): a document that is pure ASCII is tokenized on its bytes (NFKC leaves ASCII
/// unchanged), other documents through `TextTokenizer.words`; words are interned on their UTF-8 bytes, and an
/// n-gram is a node in a trie of word ids, so no String is made per token. Under NFKC (+ lower-casing) equal words
/// have equal bytes, which is what the String-keyed reference compares. Character n-grams and normalisation "none"
/// take the general path: `TextTokenizer.terms`, interned as Strings (Unicode canonical equality, like the reference).
public struct TermCorpus: Sendable {
    public let config: TextConfig
    public let documentCount: Int
    /// Term ids of document i: `termIDs[documentOffsets[i]..<documentOffsets[i + 1]]`, repeats kept.
    let documentOffsets: [Int]
    let termIDs: [Int32]
    let table: TermTable

    public init(documents: [String], config: TextConfig) throws {
        let tokenizer = try TextTokenizer(config: config)
        self.config = config
        documentCount = documents.count
        var offsets = [0], ids: [Int32] = []
        offsets.reserveCapacity(documents.count + 1)
        if config.charNgrams == nil && config.normalization == "nfkc" {
            (offsets, ids, table) = Self.buildTrie(documents, tokenizer: tokenizer)
        } else {
            var index: [String: Int32] = [:], strings: [String] = []
            for doc in documents {
                for term in tokenizer.terms(doc) {
                    if let id = index[term] {
                        ids.append(id)
                    } else {
                        let id = Int32(strings.count)
                        index[term] = id
                        strings.append(term)
                        ids.append(id)
                    }
                }
                offsets.append(ids.count)
            }
            table = .strings(strings)
        }
        documentOffsets = offsets
        termIDs = ids
    }

    /// The fast path, on two cores for 2000+ documents. Ids depend on the split, but nothing built from them does:
    /// vocabularies are sorted by bytes, rows by column.
    ///
    /// 1. Words: each half of the documents becomes a stream of word ids; the second half's words are then interned
    ///    in the first half's table.
    /// 2. N-grams: each part builds the n-grams that start with its words (a word's part is a hash of its id), over
    ///    all the documents, so the parts share no term and need no merging.
    /// 3. A document's term ids are part 0's, then part 1's (offset by part 0's term count).
    static func buildTrie(_ documents: [String], tokenizer: TextTokenizer) -> ([Int], [Int32], TermTable) {
        let parts = documents.count >= 2000 ? 2 : 1
        let n = documents.count
        let streams = Slots<WordStream>(count: parts)
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            var stream = WordStream(tokenizer: tokenizer)
            for doc in documents[(part * n / parts)..<((part + 1) * n / parts)] { stream.append(doc) }
            streams.set(part, stream)
        }
        var first = streams.values[0]
        for other in streams.values.dropFirst() { first.absorb(other) }
        let words = first
        let termParts = Slots<NgramBuilder>(count: parts)
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            // About one distinct term per 7.5 words on the Debian descriptions (1–2-grams): start at half that,
            // so the table grows at most once and stays small enough for the cache.
            var builder = NgramBuilder(wordCount: words.table.count, minN: tokenizer.config.wordNgrams[0],
                                       maxN: tokenizer.config.wordNgrams[1], part: part, parts: parts,
                                       expectedTerms: words.ids.count / (16 * parts))
            builder.build(words)
            termParts.set(part, builder)
        }
        let built = termParts.values
        // Term ids of part p start after the terms of the parts before it.
        var base = [Int32](repeating: 0, count: parts)
        for p in 1..<max(parts, 1) { base[p] = base[p - 1] &+ Int32(built[p - 1].parent.count) }
        var offsets = [Int](repeating: 0, count: n + 1)
        for d in 0..<n {
            var length = 0
            for b in built { length &+= b.ends[d &+ 1] &- b.ends[d] }
            offsets[d &+ 1] = offsets[d] &+ length
        }
        let total = offsets[n], starts = offsets, bases = base
        let ids = [Int32](unsafeUninitializedCapacity: total) { out, count in
            // Documents in `parts` ranges side by side; every position is written once.
            let shared = SharedBuffer(p: out.baseAddress)
            DispatchQueue.concurrentPerform(iterations: parts) { r in
                guard let out = shared.p else { return }
                for (p, b) in built.enumerated() {
                    b.ids.withUnsafeBufferPointer { src in
                        for d in (r * n / parts)..<((r + 1) * n / parts) {
                            var o = starts[d]  // after the terms of the earlier parts in this document
                            for q in 0..<p { o &+= built[q].ends[d &+ 1] &- built[q].ends[d] }
                            for i in b.ends[d]..<b.ends[d &+ 1] { out[o] = src[i] &+ bases[p]; o &+= 1 }
                        }
                    }
                }
            }
            count = total
        }
        var parent: [Int32] = [], word: [Int32] = []
        for (p, b) in built.enumerated() {
            parent += b.parent.map { $0 < 0 ? $0 : $0 &+ base[p] }
            word += b.word
        }
        return (offsets, ids, .trie(TermTable.Trie(parent: parent, word: word, words: words.table)))
    }

    /// A vocabulary (or hash settings) and idf fitted on some documents, with the column of every term id (−1: not
    /// a feature). Training needs only the columns, counts and idf; the vocabulary's text is made on request.
    public struct Fitted: Sendable {
        public let config: TextConfig
        public let featureCount: Int
        /// One per column with "tfidf", empty otherwise.
        public let idf: [Float]
        let columnOfTerm: [Int32]
        /// The term id of each column, in column order (empty with hashing).
        let columnTerms: [Int]
        let table: TermTable

        /// The vocabulary as a model stores it: the column names joined by "\n" (`TextVectorizer.vocabularyBytes`).
        public func vocabularyBytes() -> [UInt8] { table.joinedBytes(columnTerms, separator: 0x0A) }

        /// The equivalent `TextVectorizer` (it holds every column name as a String).
        public func makeVectorizer() -> TextVectorizer {
            TextVectorizer(config: config, vocabulary: table.strings(columnTerms), idf: idf)
        }
    }

    /// The same vocabulary and idf as `TextVectorizer.fit` on those documents' texts.
    public func vectorizer(fittedOn indices: [Int]) -> Fitted {
        let termCount = table.count
        var columnOfTerm = [Int32](repeating: -1, count: termCount)
        var df: [Int]
        var columnTerms: [Int] = []
        if let bits = config.hashBits {
            for t in 0..<termCount { columnOfTerm[t] = Int32(TextVectorizer.hashColumn(table.bytes(of: t), bits: bits)) }
            df = [Int](repeating: 0, count: 1 << bits)
            var lastSeen = [Int](repeating: -1, count: 1 << bits)
            for (position, doc) in indices.enumerated() {
                for i in documentOffsets[doc]..<documentOffsets[doc + 1] {
                    let c = Int(columnOfTerm[Int(termIDs[i])])
                    if lastSeen[c] != position { lastSeen[c] = position; df[c] += 1 }
                }
            }
        } else {
            // Document frequencies: a term counts once per document (`lastSeen` holds the last one it was in).
            var termDF = [Int32](repeating: 0, count: termCount)
            var lastSeen = [Int32](repeating: -1, count: termCount)
            termIDs.withUnsafeBufferPointer { ids in
                termDF.withUnsafeMutableBufferPointer { df in
                    lastSeen.withUnsafeMutableBufferPointer { last in
                        for (position, doc) in indices.enumerated() {
                            let p = Int32(truncatingIfNeeded: position)
                            for i in documentOffsets[doc]..<documentOffsets[doc + 1] {
                                let t = Int(ids[i])
                                if last[t] != p { last[t] = p; df[t] &+= 1 }
                            }
                        }
                    }
                }
            }
            let kept = (0..<termCount).filter { Int(termDF[$0]) >= config.minCount }
            columnTerms = table.byteOrder(kept, maxWords: config.wordNgrams[1]).map { kept[$0] }
            df = columnTerms.map { Int(termDF[$0]) }
            for (column, t) in columnTerms.enumerated() { columnOfTerm[t] = Int32(column) }
        }
        var idf: [Float] = []
        if config.weighting == "tfidf" {
            let n = indices.count
            idf = df.map { Float(log(Double(1 + n) / Double(1 + $0)) + 1) }
        }
        return Fitted(config: config, featureCount: config.hashBits.map { 1 << $0 } ?? columnTerms.count, idf: idf,
                      columnOfTerm: columnOfTerm, columnTerms: columnTerms, table: table)
    }

    /// The rows of the documents at `indices`: bit-identical to `fitted.vectorizer.transform` of their texts.
    /// Above 4096 documents, two halves are built side by side and joined.
    public func rows(_ indices: [Int], _ fitted: Fitted) -> CSRMatrix {
        guard indices.count >= 4096 else { return rows(indices[...], fitted) }
        let half = indices.count / 2
        let parts = Slots<CSRMatrix>(count: 2)
        DispatchQueue.concurrentPerform(iterations: 2) { p in
            parts.set(p, rows(p == 0 ? indices[..<half] : indices[half...], fitted))
        }
        let done = parts.values
        let (a, b) = (done[0], done[1])
        var offsets = a.rowOffsets
        offsets.reserveCapacity(indices.count + 1)
        let base = a.nonZeros
        for o in b.rowOffsets.dropFirst() { offsets.append(o &+ base) }
        return CSRMatrix(unchecked: indices.count, cols: a.cols, rowOffsets: offsets, columns: a.columns + b.columns,
                         values: a.values + b.values)
    }

    func rows(_ indices: ArraySlice<Int>, _ fitted: Fitted) -> CSRMatrix {
        let v = fitted
        enum Weighting { case binary, count, tfidf }
        let weighting: Weighting = config.weighting == "binary" ? .binary : config.weighting == "count" ? .count : .tfidf
        let sublinear = config.sublinearTF, normalize = config.l2Normalize
        var longest = 0, total = 0
        for doc in indices {
            let length = documentOffsets[doc + 1] - documentOffsets[doc]
            longest = max(longest, length)
            total += length
        }
        var offsets = [Int](), columns: [Int32] = [], values: [Float] = []
        offsets.reserveCapacity(indices.count + 1)
        offsets.append(0)
        columns.reserveCapacity(total / 2)
        values.reserveCapacity(total / 2)
        // Per document: counts in a dense scratch array, the touched columns in `seen`, then sorted.
        let counts = UnsafeMutablePointer<Int32>.allocate(capacity: max(v.featureCount, 1))
        counts.initialize(repeating: 0, count: max(v.featureCount, 1))
        let seen = UnsafeMutablePointer<Int32>.allocate(capacity: max(longest, 1))
        let sortScratch = UnsafeMutablePointer<Int32>.allocate(capacity: max(longest, 1))
        let buckets = UnsafeMutablePointer<Int>.allocate(capacity: 256)
        let row = UnsafeMutablePointer<Double>.allocate(capacity: max(longest, 1))
        defer { counts.deallocate(); seen.deallocate(); sortScratch.deallocate(); buckets.deallocate(); row.deallocate() }
        termIDs.withUnsafeBufferPointer { ids in
            fitted.columnOfTerm.withUnsafeBufferPointer { columnOf in
                v.idf.withUnsafeBufferPointer { idf in
                    for doc in indices {
                        var m = 0
                        for i in documentOffsets[doc]..<documentOffsets[doc + 1] {
                            let c = columnOf[Int(ids[i])]
                            guard c >= 0 else { continue }
                            if counts[Int(c)] == 0 { seen[m] = c; m &+= 1 }
                            counts[Int(c)] &+= 1
                        }
                        sortColumns(seen, m, limit: v.featureCount, scratch: sortScratch, counts: buckets)
                        // The arithmetic of `TextVectorizer.transform`, in the same order.
                        var sq = 0.0
                        for j in 0..<m {
                            let c = Int(seen[j])
                            let tf = Double(counts[c])
                            counts[c] = 0
                            let x: Double
                            switch weighting {
                            case .binary: x = 1
                            case .count: x = tf
                            // log(1) is exactly 0: skip the call for the most common count.
                            case .tfidf: x = (sublinear ? (tf == 1 ? 1 : 1 + log(tf)) : tf) * Double(idf[c])
                            }
                            row[j] = x
                            sq += x * x
                        }
                        if normalize {
                            let norm = sq.squareRoot()
                            if norm > 0 { for j in 0..<m { row[j] = row[j] / norm } }
                        }
                        columns.append(contentsOf: UnsafeBufferPointer(start: seen, count: m))
                        for j in 0..<m { values.append(Float(row[j])) }
                        offsets.append(columns.count)
                    }
                }
            }
        }
        return CSRMatrix(unchecked: indices.count, cols: v.featureCount, rowOffsets: offsets, columns: columns,
                         values: values)
    }
}

/// Sorts the distinct values `p[0..<n]`, all in `0..<limit`, ascending: insertion sort below 32 values, else an LSD
/// radix sort on digits of up to 8 bits (as many as `limit` needs), which has no data-dependent branches.
/// `scratch` holds n values and `counts` 256.
func sortColumns(_ p: UnsafeMutablePointer<Int32>, _ n: Int, limit: Int, scratch: UnsafeMutablePointer<Int32>,
                 counts: UnsafeMutablePointer<Int>) {
    if n < 32 {
        if n < 2 { return }
        for i in 1..<n {
            let x = p[i]
            var j = i &- 1
            while j >= 0 && p[j] > x { p[j &+ 1] = p[j]; j &-= 1 }
            p[j &+ 1] = x
        }
        return
    }
    let bits = max(Int.bitWidth - (max(limit, 2) &- 1).leadingZeroBitCount, 1)
    let passes = (bits + 7) / 8, digit = (bits + passes - 1) / passes
    let buckets = 1 << digit, mask = Int32(buckets - 1)
    var src = p, dst = scratch
    for pass in 0..<passes {
        let shift = Int32(pass * digit)
        counts.initialize(repeating: 0, count: buckets)
        for i in 0..<n { counts[Int((src[i] >> shift) & mask)] &+= 1 }
        var sum = 0
        for b in 0..<buckets { let c = counts[b]; counts[b] = sum; sum &+= c }
        for i in 0..<n {
            let v = src[i], b = Int((v >> shift) & mask)
            dst[counts[b]] = v
            counts[b] &+= 1
        }
        swap(&src, &dst)
    }
    if src != p { p.update(from: src, count: n) }
}

/// How term ids map back to term text.
enum TermTable: Sendable {
    /// Term t is word `word[t]` appended (after a space) to term `parent[t]` (−1: none).
    case trie(Trie)
    case strings([String])

    struct Trie: Sendable {
        var parent: [Int32]
        var word: [Int32]
        var words: WordTable
    }

    var count: Int {
        switch self {
        case .trie(let t): return t.parent.count
        case .strings(let s): return s.count
        }
    }

    /// The positions of `terms` sorted by their bytes (memcmp order, a prefix first), as scikit-learn sorts its
    /// vocabulary.
    ///
    /// Word n-grams up to 2 words compare as (rank of the first word, rank of the second word, a unigram first):
    /// every byte of a word is above the space that joins two words, so "ab" < "ab c" < "abc" both ways. Only the
    /// words are sorted as bytes.
    func byteOrder(_ terms: [Int], maxWords: Int) -> [Int] {
        guard case .trie(let t) = self, maxWords <= 2 else {
            // Longer n-grams and string tables: the terms' bytes in one arena, sorted as bytes.
            var arena: [UInt8] = [], starts = [0]
            starts.reserveCapacity(terms.count + 1)
            for term in terms { appendBytes(of: term, to: &arena); starts.append(arena.count) }
            return arena.withUnsafeBufferPointer { Self.sortedByBytes($0.baseAddress, starts: starts, ids: Array(terms.indices)) }
        }
        let words = t.words
        let order = words.arena.withUnsafeBufferPointer {
            Self.sortedByBytes($0.baseAddress, starts: words.starts, ids: Array(0..<words.count))
        }
        var rank = [UInt32](repeating: 0, count: order.count)
        for (r, w) in order.enumerated() { rank[w] = UInt32(r) }
        // (first word rank, second word rank + 1 or 0 for a unigram) is unique per term.
        var keyed = terms.indices.map { i -> (UInt64, Int) in
            let term = terms[i], p = Int(t.parent[term]), w = Int(t.word[term])
            if p < 0 { return (UInt64(rank[w]) << 32, i) }
            return (UInt64(rank[Int(t.word[p])]) << 32 | UInt64(rank[w] &+ 1), i)
        }
        keyed.sort { $0.0 < $1.0 }
        return keyed.map(\.1)
    }

    /// The terms' bytes, one after another with `separator` between two.
    func joinedBytes(_ terms: [Int], separator: UInt8) -> [UInt8] {
        var out: [UInt8] = []
        for (i, term) in terms.enumerated() {
            if i > 0 { out.append(separator) }
            appendBytes(of: term, to: &out)
        }
        return out
    }

    /// The terms as Strings.
    func strings(_ terms: [Int]) -> [String] {
        var scratch: [UInt8] = []
        return terms.map { term in
            scratch.removeAll(keepingCapacity: true)
            appendBytes(of: term, to: &scratch)
            return String(decoding: scratch, as: UTF8.self)
        }
    }

    /// `ids` sorted by the byte strings `base[starts[i]..<starts[i + 1]]` (memcmp order, a prefix first).
    static func sortedByBytes(_ base: UnsafePointer<UInt8>?, starts: [Int], ids: [Int]) -> [Int] {
        guard let base else { return ids }
        // The first 8 bytes big-endian (zero-padded; terms hold no zero bytes) decide most comparisons.
        var keyed = ids.map { i -> (UInt64, Int) in
            var key: UInt64 = 0
            for b in 0..<8 {
                key <<= 8
                if starts[i] + b < starts[i + 1] { key |= UInt64(base[starts[i] + b]) }
            }
            return (key, i)
        }
        keyed.sort { x, y in
            if x.0 != y.0 { return x.0 < y.0 }
            let i = x.1, j = y.1
            let li = starts[i + 1] - starts[i], lj = starts[j + 1] - starts[j]
            let c = memcmp(base + starts[i], base + starts[j], min(li, lj))
            return c != 0 ? c < 0 : li < lj
        }
        return keyed.map(\.1)
    }

    /// The term's UTF-8 bytes (words joined by one space).
    func bytes(of term: Int) -> [UInt8] {
        var out: [UInt8] = []
        appendBytes(of: term, to: &out)
        return out
    }

    func appendBytes(of term: Int, to out: inout [UInt8]) {
        switch self {
        case .strings(let s):
            out += s[term].utf8
        case .trie(let t):
            // Word n-grams are at most 32 words; walk up to the root, then write from the first word.
            var chain = (Int32(0), Int32(0), Int32(0), Int32(0))
            var node = Int32(term), depth = 0
            var longer: [Int32] = []
            while node >= 0 {
                let w = t.word[Int(node)]
                switch depth {
                case 0: chain.0 = w
                case 1: chain.1 = w
                case 2: chain.2 = w
                case 3: chain.3 = w
                default: longer.append(w)
                }
                depth += 1
                node = t.parent[Int(node)]
            }
            for level in stride(from: depth - 1, through: 0, by: -1) {
                let w: Int32
                switch level {
                case 0: w = chain.0
                case 1: w = chain.1
                case 2: w = chain.2
                case 3: w = chain.3
                default: w = longer[level - 4]
                }
                t.words.appendBytes(of: Int(w), to: &out)
                if level > 0 { out.append(0x20) }
            }
        }
    }
}

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

/// Documents as one stream of word ids (the first step of `TermCorpus.buildTrie`): words are interned on their
/// UTF-8 bytes; a pure-ASCII document is tokenized on its bytes (NFKC leaves ASCII unchanged), others through
/// `TextTokenizer.words`. Stop words are left out of the stream.
struct WordStream {
    let tokenizer: TextTokenizer
    let lowercase: Bool, hasStopWords: Bool
    var table = WordTable()
    /// Per word id: dropped as a stop word.
    var stop: [Bool] = []
    /// Word ids of document i: `ids[ends[i]..<ends[i + 1]]`.
    var ids: [Int32] = []
    var ends: [Int] = [0]
    /// Scratch: the bytes of the word being read.
    var wordBytes: [UInt8] = []

    init(tokenizer: TextTokenizer) {
        self.tokenizer = tokenizer
        lowercase = tokenizer.config.lowercase
        hasStopWords = !tokenizer.config.stopWords.isEmpty
    }

    /// The id of word `bytes[0..<length]`, interned (with its stop-word flag) when new.
    mutating func wordID(_ bytes: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
        let (id, isNew) = table.intern(bytes, length)
        if isNew {
            stop.append(hasStopWords && tokenizer.isStopWord(String(decoding: UnsafeBufferPointer(start: bytes, count: length),
                                                                    as: UTF8.self)))
        }
        return id
    }

    mutating func internWord(_ bytes: UnsafePointer<UInt8>, _ length: Int) {
        let id = wordID(bytes, length)
        if !stop[Int(id)] { ids.append(id) }
    }

    /// Appends the words of `doc` as one more document.
    mutating func append(_ doc: String) {
        var text = doc
        let n = text.utf8.count
        if wordBytes.count < n { wordBytes = [UInt8](repeating: 0, count: max(n, 2 * wordBytes.count)) }
        var scratch = wordBytes
        wordBytes = []  // `scratch` holds the only reference while words are interned
        let start = ids.count
        let ascii = text.withUTF8 { u in
            guard let p = u.baseAddress else { return true }
            return Self.tokenizeASCII(p, u.count, lowercase: lowercase, into: &scratch, &self)
        }
        wordBytes = scratch
        if !ascii {
            // `words` has already dropped the stop words; the flags agree for the ones that remain.
            ids.removeSubrange(start...)
            for w in tokenizer.words(doc) {
                var w = w
                w.withUTF8 { internWord($0.baseAddress!, $0.count) }
            }
        }
        ends.append(ids.count)
    }

    /// Words of the ASCII text `p[0..<n]` (lower-cased into `scratch`) interned into `stream`; false, with nothing
    /// interned, when the text is not pure ASCII.
    static func tokenizeASCII(_ p: UnsafePointer<UInt8>, _ n: Int, lowercase: Bool, into scratch: inout [UInt8],
                              _ stream: inout WordStream) -> Bool {
        var i = 0
        while i < n { if p[i] >= 0x80 { return false }; i &+= 1 }
        scratch.withUnsafeMutableBufferPointer { buffer in
            guard let word = buffer.baseAddress else { return }
            var length = 0
            i = 0
            while i < n {
                var b = p[i]
                if isAlphanumeric(b) {
                    if lowercase && b >= 0x41 && b <= 0x5A { b |= 0x20 }
                    word[length] = b
                    length &+= 1
                } else if b == 0x27, length > 0, i &+ 1 < n, isAlphanumeric(p[i &+ 1]) {
                    word[length] = b
                    length &+= 1
                } else if length > 0 {
                    stream.internWord(word, length)
                    length = 0
                }
                i &+= 1
            }
            if length > 0 { stream.internWord(word, length) }
        }
        return true
    }

    /// Appends `other`'s documents, its words interned in this table.
    mutating func absorb(_ other: WordStream) {
        var map = [Int32](repeating: 0, count: other.table.count)
        other.table.arena.withUnsafeBufferPointer { arena in
            for w in 0..<other.table.count {
                let start = other.table.starts[w]
                map[w] = wordID(arena.baseAddress! + start, other.table.starts[w + 1] - start)
            }
        }
        let base = ids.count
        ids.reserveCapacity(base + other.ids.count)
        for w in other.ids { ids.append(map[Int(w)]) }
        ends += other.ends.dropFirst().map { $0 + base }
    }

    static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }
}

/// The n-grams (`minN`…`maxN` words) of a word stream that start with the words of one part (the second step of
/// `TermCorpus.buildTrie`), as terms of a trie: a unigram's term id is looked up by word id in an array, an n-gram
/// (n ≥ 2) is the child of its first n − 1 words' term in a hash table.
struct NgramBuilder {
    let minN: Int, maxN: Int
    let part: Int, parts: Int
    /// Per word id: the term id of the word alone (−1: not a term yet).
    var unigram: [Int32]
    var children: IDTable
    var parent: [Int32] = []
    var word: [Int32] = []
    /// Term ids of document i: `ids[ends[i]..<ends[i + 1]]` (this part's terms only).
    var ids: [Int32] = []
    var ends: [Int] = [0]

    init(wordCount: Int, minN: Int, maxN: Int, part: Int, parts: Int, expectedTerms: Int) {
        self.minN = minN; self.maxN = maxN; self.part = part; self.parts = parts
        unigram = [Int32](repeating: -1, count: wordCount)
        children = IDTable(expected: expectedTerms)
    }

    /// The part a word belongs to: a multiplicative hash of its id, so parts get a similar share of frequent words.
    static func part(of w: Int32, parts: Int) -> Int {
        parts == 1 ? 0 : Int((UInt32(bitPattern: w) &* 0x9E37_79B9) >> 16) % parts
    }

    /// Every n-gram of `stream` that starts with a word of this part, by document, then start, then length.
    mutating func build(_ stream: WordStream) {
        ids.reserveCapacity(stream.ids.count * (maxN - minN + 1) / parts + 16)
        ends.reserveCapacity(stream.ends.count)
        stream.ids.withUnsafeBufferPointer { words in
            for d in 0..<(stream.ends.count - 1) {
                let lo = stream.ends[d], hi = stream.ends[d + 1]
                for start in lo..<hi where Self.part(of: words[start], parts: parts) == part {
                    var node = child(-1, words[start])
                    if minN == 1 { ids.append(node) }
                    var length = 1
                    while length < maxN && start &+ length < hi {
                        node = child(node, words[start &+ length])
                        length &+= 1
                        if length >= minN { ids.append(node) }
                    }
                }
                ends.append(ids.count)
            }
        }
    }

    /// The term `node` + " " + word `w` (node −1: the word alone).
    mutating func child(_ node: Int32, _ w: Int32) -> Int32 {
        if node < 0 {
            let t = unigram[Int(w)]
            if t >= 0 { return t }
            let id = Int32(parent.count)
            unigram[Int(w)] = id
            parent.append(-1)
            word.append(w)
            return id
        }
        let key = UInt64(UInt32(bitPattern: node)) << 32 | UInt64(UInt32(bitPattern: w))
        let (id, isNew) = children.findOrInsert(key, Int32(parent.count))
        if isNew {
            parent.append(node)
            word.append(w)
        }
        return id
    }
}

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

/// A buffer that the tasks of one `concurrentPerform` write at disjoint positions.
struct SharedBuffer: @unchecked Sendable {
    let p: UnsafeMutablePointer<Int32>?
}

/// One slot per concurrent task; each task writes only its own slot, and the slots are read after the tasks end.
public final class Slots<T>: @unchecked Sendable {
    private let slots: UnsafeMutablePointer<T?>
    private let count: Int
    public init(count: Int) {
        self.count = count
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil, count: count)
    }
    deinit { slots.deinitialize(count: count); slots.deallocate() }
    /// Stores task `i`'s result.
    public func set(_ i: Int, _ value: T) { slots[i] = value }
    /// The results stored, in slot order.
    public var values: [T] { (0..<count).compactMap { slots[$0] } }
}
