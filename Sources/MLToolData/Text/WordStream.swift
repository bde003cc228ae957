import Foundation
import MLToolCore

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
