import Foundation
import MLToolCore

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
