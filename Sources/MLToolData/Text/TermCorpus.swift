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
            var builder = TrieBuilder(tokenizer: tokenizer)
            for doc in documents {
                builder.appendTerms(of: doc, into: &ids)
                offsets.append(ids.count)
            }
            table = .trie(builder.finish())
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

    /// A vectorizer fitted on the documents at `indices`, with the column of every term id (−1: not a feature).
    public struct Fitted: Sendable {
        public let vectorizer: TextVectorizer
        let columnOfTerm: [Int32]
    }

    /// The same vocabulary and idf as `TextVectorizer.fit` on those documents' texts.
    public func vectorizer(fittedOn indices: [Int]) -> Fitted {
        let termCount = table.count
        var columnOfTerm = [Int32](repeating: -1, count: termCount)
        var df: [Int]
        var vocabulary: [String] = []
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
            var termDF = [Int](repeating: 0, count: termCount)
            var lastSeen = [Int](repeating: -1, count: termCount)
            for (position, doc) in indices.enumerated() {
                for i in documentOffsets[doc]..<documentOffsets[doc + 1] {
                    let t = Int(termIDs[i])
                    if lastSeen[t] != position { lastSeen[t] = position; termDF[t] += 1 }
                }
            }
            let kept = (0..<termCount).filter { termDF[$0] >= config.minCount }
            let keys = kept.map { table.bytes(of: $0) }
            let order = kept.indices.sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
            vocabulary = order.map { String(decoding: keys[$0], as: UTF8.self) }
            df = order.map { termDF[kept[$0]] }
            for (column, k) in order.enumerated() { columnOfTerm[kept[k]] = Int32(column) }
        }
        var idf: [Float] = []
        if config.weighting == "tfidf" {
            let n = indices.count
            idf = df.map { Float(log(Double(1 + n) / Double(1 + $0)) + 1) }
        }
        return Fitted(vectorizer: TextVectorizer(config: config, vocabulary: vocabulary, idf: idf),
                      columnOfTerm: columnOfTerm)
    }

    /// The rows of the documents at `indices`: bit-identical to `fitted.vectorizer.transform` of their texts.
    public func rows(_ indices: [Int], _ fitted: Fitted) -> CSRMatrix {
        let v = fitted.vectorizer
        var offsets = [0], columns: [Int32] = [], values: [Float] = []
        offsets.reserveCapacity(indices.count + 1)
        // Count per column with a dense scratch array, touched entries listed in `seen`.
        var counts = [Int](repeating: 0, count: v.featureCount)
        var seen: [Int32] = []
        var row: [Double] = []
        for doc in indices {
            seen.removeAll(keepingCapacity: true)
            for i in documentOffsets[doc]..<documentOffsets[doc + 1] {
                let c = fitted.columnOfTerm[Int(termIDs[i])]
                guard c >= 0 else { continue }
                if counts[Int(c)] == 0 { seen.append(c) }
                counts[Int(c)] += 1
            }
            seen.sort()
            // The arithmetic of `TextVectorizer.transform`, in the same order.
            row.removeAll(keepingCapacity: true)
            for c in seen {
                let tf = Double(counts[Int(c)])
                counts[Int(c)] = 0
                switch config.weighting {
                case "binary": row.append(1)
                case "count": row.append(tf)
                default: row.append((config.sublinearTF ? 1 + log(tf) : tf) * Double(v.idf[Int(c)]))
                }
            }
            if config.l2Normalize {
                let norm = row.reduce(0) { $0 + $1 * $1 }.squareRoot()
                if norm > 0 { for j in row.indices { row[j] = row[j] / norm } }
            }
            columns += seen
            for x in row { values.append(Float(x)) }
            offsets.append(columns.count)
        }
        return CSRMatrix(unchecked: indices.count, cols: v.featureCount, rowOffsets: offsets, columns: columns,
                         values: values)
    }
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

    /// The term's UTF-8 bytes (words joined by one space).
    func bytes(of term: Int) -> [UInt8] {
        switch self {
        case .strings(let s):
            return Array(s[term].utf8)
        case .trie(let t):
            var chain: [Int32] = []
            var node = Int32(term)
            while node >= 0 { chain.append(t.word[Int(node)]); node = t.parent[Int(node)] }
            var out: [UInt8] = []
            for (i, w) in chain.reversed().enumerated() {
                if i > 0 { out.append(0x20) }
                t.words.appendBytes(of: Int(w), to: &out)
            }
            return out
        }
    }
}

/// Interns words (UTF-8 byte strings) as dense ids: open addressing on FNV-1a, bytes kept in one arena.
struct WordTable: Sendable {
    private(set) var arena: [UInt8] = []
    private(set) var starts: [Int] = [0]
    private var slots: [Int32]
    private var hashes: [UInt64] = []
    private var mask: Int

    init() {
        slots = [Int32](repeating: -1, count: 1 << 12)
        mask = (1 << 12) - 1
    }

    var count: Int { starts.count - 1 }

    func appendBytes(of id: Int, to out: inout [UInt8]) { out += arena[starts[id]..<starts[id + 1]] }

    /// The id of the word `bytes[0..<length]`, added when new (`isNew` tells).
    mutating func intern(_ bytes: UnsafePointer<UInt8>, _ length: Int) -> (id: Int32, isNew: Bool) {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for i in 0..<length { h = (h ^ UInt64(bytes[i])) &* 0x0000_0100_0000_01B3 }
        var slot = Int(truncatingIfNeeded: h) & mask
        while true {
            let id = Int(slots[slot])
            if id < 0 { break }
            if hashes[id] == h && starts[id + 1] - starts[id] == length {
                let same = arena.withUnsafeBufferPointer { memcmp($0.baseAddress! + starts[id], bytes, length) == 0 }
                if same { return (Int32(id), false) }
            }
            slot = (slot &+ 1) & mask
        }
        let id = Int32(count)
        slots[slot] = id
        hashes.append(h)
        arena.append(contentsOf: UnsafeBufferPointer(start: bytes, count: length))
        starts.append(arena.count)
        if count * 2 > mask { grow() }
        return (id, true)
    }

    private mutating func grow() {
        let size = (mask + 1) * 2
        slots = [Int32](repeating: -1, count: size)
        mask = size - 1
        for id in 0..<count {
            var slot = Int(truncatingIfNeeded: hashes[id]) & mask
            while slots[slot] >= 0 { slot = (slot &+ 1) & mask }
            slots[slot] = Int32(id)
        }
    }
}

/// Tokenizes documents into n-gram term ids (the fast path of `TermCorpus`).
struct TrieBuilder {
    let tokenizer: TextTokenizer
    var words = WordTable()
    /// Per word id: dropped as a stop word.
    var stop: [Bool] = []
    var children: [UInt64: Int32] = [:]
    var parent: [Int32] = []
    var word: [Int32] = []
    /// Scratch: the current document's word ids and word bytes.
    var docWords: [Int32] = []
    var buffer: [UInt8] = []

    init(tokenizer: TextTokenizer) { self.tokenizer = tokenizer }

    mutating func internWord(_ bytes: UnsafePointer<UInt8>, _ length: Int) {
        let (id, isNew) = words.intern(bytes, length)
        if isNew {
            stop.append(tokenizer.isStopWord(String(decoding: UnsafeBufferPointer(start: bytes, count: length),
                                                    as: UTF8.self)))
        }
        if !stop[Int(id)] { docWords.append(id) }
    }

    mutating func flushWord() {
        guard !buffer.isEmpty else { return }
        let b = buffer
        b.withUnsafeBufferPointer { internWord($0.baseAddress!, $0.count) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Appends the document's terms (every n-gram, as `TextTokenizer.terms` lists them) to `ids`.
    mutating func appendTerms(of doc: String, into ids: inout [Int32]) {
        docWords.removeAll(keepingCapacity: true)
        var text = doc
        let ascii = text.withUTF8 { u in
            for b in u where b >= 0x80 { return false }
            return true
        }
        if ascii {
            let lower = tokenizer.config.lowercase
            text.withUTF8 { u in
                let n = u.count
                var i = 0
                while i < n {
                    var b = u[i]
                    if Self.isAlphanumeric(b) {
                        if lower && b >= 0x41 && b <= 0x5A { b |= 0x20 }
                        buffer.append(b)
                    } else if b == 0x27, !buffer.isEmpty, i + 1 < n, Self.isAlphanumeric(u[i + 1]) {
                        buffer.append(b)
                    } else {
                        flushWord()
                    }
                    i += 1
                }
            }
            flushWord()
        } else {
            // `words` has already dropped the stop words; the flags agree for the ones that remain.
            for w in tokenizer.words(doc) {
                var w = w
                w.withUTF8 { internWord($0.baseAddress!, $0.count) }
            }
        }
        let lo = tokenizer.config.wordNgrams[0], hi = tokenizer.config.wordNgrams[1]
        let count = docWords.count
        // By length then start, the order of `terms` (counts do not depend on it, but ids stay reproducible).
        for n in lo...hi where n <= count {
            for start in 0...(count - n) {
                var node: Int32 = -1
                for w in docWords[start..<(start + n)] { node = child(node, w) }
                ids.append(node)
            }
        }
    }

    /// The term `node` + " " + word `w` (node −1: the word alone).
    mutating func child(_ node: Int32, _ w: Int32) -> Int32 {
        let key = UInt64(UInt32(bitPattern: node &+ 1)) << 32 | UInt64(UInt32(bitPattern: w))
        if let id = children[key] { return id }
        let id = Int32(parent.count)
        children[key] = id
        parent.append(node)
        word.append(w)
        return id
    }

    func finish() -> TermTable.Trie { TermTable.Trie(parent: parent, word: word, words: words) }

    static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }
}
