import Foundation
import MLToolCore
import Testing
@testable import MLToolData

/// `TermCorpus` (tokenize once, term ids) against the reference `TextVectorizer.fit` + `transform` on the same texts:
/// same vocabulary and idf, bit-identical rows.
@Suite struct TermCorpusTests {
    /// Seeded documents mixing ASCII and non-ASCII text, case, apostrophes, digits and punctuation; `count` ≥ 2000
    /// makes `TermCorpus` tokenize in two halves and merge them.
    static func documents(_ count: Int, seed: UInt64) -> [String] {
        let words = ["the", "Cat", "don't", "library", "JSON", "parser", "C++", "x86-64", "naïve", "Straße", "ΣΊΣΥΦΟΣ",
                     "über", "fast", "it’s", "ﬁle", "日本語", "emoji🙂", "2024", "v1.2", "o'", "'quoted'", "tab\there",
                     "rock'n'roll", "ÉCOLE", "école", "résumé", "e\u{301}cole", "Kelvin\u{212A}"]
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { i in
            let n = 1 + Int(rng.next() % 12)
            let picked = (0..<n).map { _ in words[Int(rng.next() % UInt64(words.count))] }
            // Every third document is pure ASCII, taking the byte-level path.
            return i % 3 == 0 ? picked.filter { $0.allSatisfy(\.isASCII) }.joined(separator: " ")
                : picked.joined(separator: i % 2 == 0 ? " " : ", ")
        }
    }

    func check(_ config: TextConfig, documents: [String], split: Int,
               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let corpus = try TermCorpus(documents: documents, config: config)
        #expect(corpus.documentCount == documents.count)
        let trainIDs = Array(0..<split), testIDs = Array(split..<documents.count)
        let fitted = corpus.vectorizer(fittedOn: trainIDs)
        let made = fitted.makeVectorizer()
        #expect(fitted.vocabularyBytes() == made.vocabularyBytes(), sourceLocation: sourceLocation)
        let reference = try TextVectorizer.fit(documents: Array(documents[..<split]), config: config)
        #expect(made.vocabulary == reference.vocabulary, sourceLocation: sourceLocation)
        #expect(fitted.idf.map(\.bitPattern) == reference.idf.map(\.bitPattern), sourceLocation: sourceLocation)
        #expect(made.idf.map(\.bitPattern) == reference.idf.map(\.bitPattern), sourceLocation: sourceLocation)
        #expect(fitted.featureCount == reference.featureCount, sourceLocation: sourceLocation)
        for (ids, texts) in [(trainIDs, Array(documents[..<split])), (testIDs, Array(documents[split...]))] {
            let fast = corpus.rows(ids, fitted), slow = try reference.transform(texts)
            #expect(fast.rowOffsets == slow.rowOffsets, sourceLocation: sourceLocation)
            #expect(fast.columns == slow.columns, sourceLocation: sourceLocation)
            #expect(fast.values.map(\.bitPattern) == slow.values.map(\.bitPattern), sourceLocation: sourceLocation)
        }
    }

    @Test func defaultConfigMatchesTheReferenceAcrossTheMergedHalves() throws {
        let docs = Self.documents(2400, seed: 3)
        try check(TextConfig(minCount: 2), documents: docs, split: 2000)
        // Two word streams and two n-gram parts with stop words and longer n-grams, with and without unigrams.
        var c = TextConfig(wordNgrams: [1, 3], minCount: 2)
        c.stopWords = ["the", "IT’S", "über", "fast"]
        try check(c, documents: docs, split: 2100)
        c.wordNgrams = [2, 4]
        try check(c, documents: docs, split: 2100)
    }

    /// 4096+ documents: `rows` builds two halves side by side and joins them.
    @Test func rowsBuiltInHalvesMatchTheReference() throws {
        let docs = Self.documents(5300, seed: 8)
        try check(TextConfig(minCount: 2), documents: docs, split: 4400)
    }

    /// The radix sort of a row's columns against the standard library's sort: short and long rows, and limits that
    /// need one to four digit passes.
    @Test func sortColumnsMatchesSorted() {
        var rng = SplitMix64(seed: 9)
        let scratch = UnsafeMutablePointer<Int32>.allocate(capacity: 4096)
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: 256)
        defer { scratch.deallocate(); counts.deallocate() }
        for limit in [2, 200, 255, 256, 70_000, 152_204, 1 << 24, Int(Int32.max)] {
            for n in [0, 1, 2, 31, 32, 33, 150, 1000] where n <= limit {
                var set = Set<Int32>()
                while set.count < n { set.insert(Int32(truncatingIfNeeded: rng.next() % UInt64(limit))) }
                var values = Array(set)
                values.withUnsafeMutableBufferPointer {
                    sortColumns($0.baseAddress!, n, limit: limit, scratch: scratch, counts: counts)
                }
                #expect(values == set.sorted(), "limit \(limit), \(n) values")
            }
        }
    }

    @Test func contiguousRowsOfAMatrix() throws {
        let m = try CSRMatrix(rows: 4, cols: 5, rowOffsets: [0, 2, 2, 5, 6], columns: [0, 3, 1, 2, 4, 0],
                              values: [1, 2, 3, 4, 5, 6])
        let middle = m.rows(1..<3)
        #expect(middle == (try CSRMatrix(rows: 2, cols: 5, rowOffsets: [0, 0, 3], columns: [1, 2, 4], values: [3, 4, 5])))
        #expect(m.rows(0..<4) == m)
        #expect(m.rows(3..<9).rowOffsets == [0, 1])
        #expect(m.rows(2..<2).rows == 0)
    }

    @Test func longerNgramsStopWordsAndMinCountMatch() throws {
        var c = TextConfig(wordNgrams: [1, 3], minCount: 3)
        c.stopWords = ["the", "IT’S", "über"]
        try check(c, documents: Self.documents(600, seed: 4), split: 500)
        c.wordNgrams = [2, 3]
        c.lowercase = false
        try check(c, documents: Self.documents(600, seed: 5), split: 450)
    }

    @Test func weightingsAndHashingMatch() throws {
        let docs = Self.documents(300, seed: 6)
        try check(TextConfig(weighting: "count", l2Normalize: false), documents: docs, split: 250)
        try check(TextConfig(weighting: "binary"), documents: docs, split: 250)
        try check(TextConfig(sublinearTF: false), documents: docs, split: 250)
        try check(TextConfig(hashBits: 8, vocabularyTensor: nil), documents: docs, split: 250)
    }

    /// Character n-grams and normalisation "none" take the String-keyed path; it must agree too.
    @Test func generalPathMatches() throws {
        let docs = Self.documents(300, seed: 7)
        try check(TextConfig(charNgrams: [2, 4], minCount: 2), documents: docs, split: 240)
        try check(TextConfig(normalization: "none", minCount: 1), documents: docs, split: 240)
    }

    @Test func emptyAndWordlessDocumentsGiveEmptyRows() throws {
        let docs = ["", "!!! ...", "one two", "two three"]
        let corpus = try TermCorpus(documents: docs, config: TextConfig())
        let fitted = corpus.vectorizer(fittedOn: [0, 1, 2, 3])
        let rows = corpus.rows([0, 1, 2, 3], fitted)
        #expect(rows.rowOffsets == [0, 0, 0, 3, 6])
        #expect(fitted.makeVectorizer().vocabulary == ["one", "one two", "three", "two", "two three"])
        #expect(fitted.vocabularyBytes() == Array("one\none two\nthree\ntwo\ntwo three".utf8))
    }
}
