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
/// take the general path: `TextTokenizer.terms`, interned as Strings (Unicode canonical equality, like the reference);
/// a word's character n-grams are interned once per distinct word (by its bytes) and their ids reused.
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
            func intern(_ term: String) -> Int32 {
                if let id = index[term] { return id }
                let id = Int32(strings.count)
                index[term] = id
                strings.append(term)
                return id
            }
            // Most words repeat, and a word's character n-grams depend on the word alone: `terms` in the same order.
            var charIDs: [[UInt8]: [Int32]] = [:], grams: [String] = []
            for doc in documents {
                let words = tokenizer.words(doc)
                for term in tokenizer.wordNgrams(words) { ids.append(intern(term)) }
                if let cn = config.charNgrams {
                    for word in words {
                        let key = Array(word.utf8)
                        if let known = charIDs[key] { ids += known; continue }
                        grams.removeAll(keepingCapacity: true)
                        TextTokenizer.appendCharNgrams(of: word, min: cn[0], max: cn[1], into: &grams)
                        let new = grams.map(intern)
                        charIDs[key] = new
                        ids += new
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
            guard let start = out.baseAddress else { count = 0; return }  // total == 0
            let shared = SharedPointer(p: start)
            DispatchQueue.concurrentPerform(iterations: parts) { r in
                let out = shared.p
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
}
