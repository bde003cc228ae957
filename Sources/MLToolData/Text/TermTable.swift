import Foundation
import MLToolCore

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
