import Foundation
import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolData

/// The JSON written by Tests/Fixtures/text/make_fixtures.py.
struct VectorizerFixture: Decodable {
    struct Sparse: Decodable {
        var offsets: [Int]
        var columns: [Int32]
        var values: [Double]
    }
    struct Config: Decodable {
        var weighting: String
        var minCount: Int
        var l2Normalize: Bool
        var sublinearTF: Bool
        var wordNgrams: [Int]?
    }
    struct Case: Decodable {
        var name: String
        var config: Config
        var vocabulary: [String]
        var idf: [Double]?
        var train: Sparse
        var test: Sparse
    }
    var train: [String]
    var test: [String]
    var cases: [Case]

    static let shared: VectorizerFixture? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/text/vectorizer.json")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(VectorizerFixture.self, from: data)
    }()
}

@Suite struct TextVectorizerOracleTests {
    /// Vocabulary, idf and every value against scikit-learn's TfidfVectorizer / CountVectorizer.
    @Test(arguments: ["tfidf12", "tfidf12min2", "tfidf11plain", "count12", "binary12"])
    func matchesScikitLearn(caseName: String) throws {
        let f = try #require(VectorizerFixture.shared, "Tests/Fixtures/text/vectorizer.json is missing or unreadable")
        let c = try #require(f.cases.first { $0.name == caseName })
        let config = TextConfig(wordNgrams: c.config.wordNgrams ?? [1, 2], minCount: c.config.minCount,
                                weighting: c.config.weighting, sublinearTF: c.config.sublinearTF,
                                l2Normalize: c.config.l2Normalize)
        let v = try TextVectorizer.fit(documents: f.train, config: config)
        #expect(v.vocabulary == c.vocabulary)
        if let idf = c.idf {
            #expect(v.idf.count == idf.count)
            for (a, b) in zip(v.idf, idf) { #expect(abs(Double(a) - b) <= 1e-6 * b) }
        }
        for (docs, expected) in [(f.train, c.train), (f.test, c.test)] {
            let m = try v.transform(docs)
            #expect(m.rowOffsets == expected.offsets)
            #expect(m.columns == expected.columns)
            #expect(m.values.count == expected.values.count)
            for (a, b) in zip(m.values, expected.values) {
                #expect(abs(Double(a) - b) <= 1e-6 * max(1, abs(b)), "\(caseName): \(a) vs \(b)")
            }
        }
    }
}

@Suite struct TextTokenizerTests {
    let tokenizer = try! TextTokenizer(config: TextConfig())

    @Test(arguments: [
        ("Don't stop — it's 3.14!", ["don't", "stop", "it's", "3", "14"]),
        ("'quoted' rock'n'roll", ["quoted", "rock'n'roll"]),
        ("l’été arrive", ["l'été", "arrive"]),                        // typographic apostrophe kept as '
        ("ＦＵＬＬ　ｗｉｄｔｈ ﬁne", ["full", "width", "fine"]),        // NFKC: full-width forms, ligature
        ("ÉCOLE Straße", ["école", "straße"]),
        ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),                          // combining marks stay inside words
        ("東京タワーに行く", ["東京タワーに行く"]),                         // no spaces: one run of letters
        ("snake_case e-mail", ["snake", "case", "e", "mail"]),
        ("", []),
    ])
    func words(text: String, expected: [String]) {
        #expect(tokenizer.words(text) == expected)
    }

    @Test func bigramsAndStopWords() throws {
        let t = try TextTokenizer(config: TextConfig(wordNgrams: [1, 2], stopWords: ["THE"]))
        #expect(t.terms("The cat the hat") == ["cat", "hat", "cat hat"])
    }

    @Test func charNgramsFollowCharWB() throws {
        let t = try TextTokenizer(config: TextConfig(wordNgrams: [1, 1], charNgrams: [2, 3]))
        #expect(t.terms("ab") == ["ab", "# a", "#ab", "#b ", "# ab", "#ab "])
        // A padded word shorter than n gives itself once.
        let t2 = try TextTokenizer(config: TextConfig(wordNgrams: [1, 1], charNgrams: [4, 5]))
        #expect(t2.terms("é") == ["é", "# é "])
    }

    @Test func invalidConfigsThrow() {
        #expect(throws: TextError.invalidConfig(field: "wordNgrams", value: "[2, 1]",
                                                expected: "[min, max] with 1 ≤ min ≤ max ≤ 32")) {
            try TextTokenizer(config: TextConfig(wordNgrams: [2, 1]))
        }
        #expect(throws: TextError.invalidConfig(field: "weighting", value: "bm25", expected: "tfidf, count or binary")) {
            try TextTokenizer(config: TextConfig(weighting: "bm25"))
        }
    }
}

@Suite struct TextVectorizerTests {
    let docs = ["red apple", "green apple pie", "red red wine", "Ünïcode wörds ok"]

    @Test func storedVocabularyRoundTrips() throws {
        let v = try TextVectorizer.fit(documents: docs, config: TextConfig())
        let back = try TextVectorizer(config: v.config, vocabularyBytes: v.vocabularyBytes(), idf: v.idf)
        #expect(back == v)
        #expect(try back.transform(docs) == v.transform(docs))
        #expect(String(decoding: v.vocabularyBytes(), as: UTF8.self).split(separator: "\n").count
                == v.vocabulary.count)
    }

    @Test func damagedVocabularyThrows() throws {
        let config = TextConfig(weighting: "count")
        #expect(throws: TextError.invalidVocabulary(tensor: "text.vocabulary", offset: 4, reason: "invalid UTF-8")) {
            try TextVectorizer(config: config, vocabularyBytes: Array("abc\n".utf8) + [0xFF, 0x41], idf: nil)
        }
        #expect(throws: TextError.invalidVocabulary(tensor: "text.vocabulary", offset: 4,
                                                    reason: "duplicate entry 'abc'")) {
            try TextVectorizer(config: config, vocabularyBytes: Array("abc\nabc".utf8), idf: nil)
        }
        #expect(throws: TextError.invalidVocabulary(tensor: "text.vocabulary", offset: 2, reason: "empty entry")) {
            try TextVectorizer(config: config, vocabularyBytes: Array("a\n\nb".utf8), idf: nil)
        }
        #expect(throws: TextError.sizeMismatch(what: "tensor 'text.idf'", expected: 2, actual: 1)) {
            try TextVectorizer(config: TextConfig(), vocabularyBytes: Array("a\nb".utf8), idf: [1])
        }
    }

    @Test func hashingIsStableAndNormalised() throws {
        let config = TextConfig(hashBits: 10)
        let v = try TextVectorizer.fit(documents: docs, config: config)
        #expect(v.vocabulary.isEmpty && v.featureCount == 1024 && v.idf.count == 1024)
        let m = try v.transform(docs)
        for r in 0..<m.rows {
            let row = m.values[m.rowOffsets[r]..<m.rowOffsets[r + 1]]
            #expect(abs(row.reduce(0) { $0 + $1 * $1 } - 1) < 1e-5)
        }
        // FNV-1a-64 of "a" is 0xaf63dc4c8601ec8c: the column must never change between versions.
        #expect(TextVectorizer.hashColumn("a", bits: 16) == 0xec8c)
    }

    @Test func csrValidationNamesTheBadEntry() {
        #expect(throws: CoreError.invalidSparseMatrix(what: "columns", index: 1, expected: "in 3..<4 (row 0)",
                                                      actual: "1")) {
            try CSRMatrix(rows: 1, cols: 4, rowOffsets: [0, 2], columns: [2, 1], values: [1, 1])
        }
        #expect(throws: CoreError.invalidSparseMatrix(what: "rowOffsets", index: 0,
                                                      expected: "3 offsets starting at 0",
                                                      actual: "2 offsets starting at 0")) {
            try CSRMatrix(rows: 2, cols: 4, rowOffsets: [0, 0], columns: [], values: [])
        }
    }
}

/// The hashed fast path (`TextTokenizer.appendHashedTerms`, used by `transform`) against the term-by-term reference
/// (`transformReference`): identical matrices, bit for bit, on real text — UD English EWT's dev sentences
/// (`SharedDatasets.udEWT`) and every 19th held-out text of datasets/language-id in 72 languages and scripts (`make
/// models` builds them; without them the test says so through `Oracles.missing`) — plus strings whose characters are
/// several scalars (combining marks, emoji sequences, Hangul jamo).
@Suite struct HashedTransformTests {
    static let debian = SharedDatasets.repository.appendingPathComponent("datasets/language-id/test.csv").path
    static let debianTexts: [String]? = (try? TextDataset.load(debian)).map {
        $0.items.enumerated().filter { $0.offset % 19 == 0 }.map(\.element.text)
    }

    static let texts: [String] = {
        var out = [
            "", "   ", "a", "naïve café", "cafe\u{301} e\u{301}te\u{301}", "👩‍👩‍👧 family 🇩🇪 flag", "한국어 텍스트 한",
            "日本語のテキスト", "don't stop", "ΑΣ ΣΊΣΥΦΟΣ", "x y z w v u", "a\u{0}b", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
        ]
        if let ewt = SharedDatasets.udEWT("en_ewt-ud-dev.conllu"), let s = try? String(contentsOfFile: ewt, encoding: .utf8) {
            out += s.split(separator: "\n").filter { $0.hasPrefix("# text = ") }.prefix(1500).map { String($0.dropFirst(9)) }
        }
        return out + (debianTexts ?? [])
    }()

    @Test(arguments: [([1, 1], [1, 4] as [Int]?), ([1, 2], nil), ([1, 3], [3, 5]), ([2, 2], [2, 2]), ([1, 1], [1, 1])])
    func fastPathEqualsReference(words: [Int], chars: [Int]?) throws {
        #expect(Self.texts.count > 1000, "EWT's dev split should be in $UD_EWT_DIR, ../shared/datasets/ud-english-ewt or datasets/ud-english-ewt")
        if Self.debianTexts == nil {
            Oracles.missing("\(Self.debian) (datasets/language-id.sh, run by make models): the texts in 72 languages")
        }
        for weighting in ["tfidf", "count", "binary"] {
            var c = TextConfig()
            c.wordNgrams = words
            c.charNgrams = chars
            c.hashBits = 12
            c.vocabularyTensor = nil
            c.weighting = weighting
            let idf = (0..<(1 << 12)).map { Float(1 + ($0 % 17)) / 7 }
            let v = TextVectorizer(config: c, vocabulary: [], idf: weighting == "tfidf" ? idf : [])
            let fast = try v.transform(Self.texts), reference = try v.transformReference(Self.texts)
            #expect(fast.rowOffsets == reference.rowOffsets && fast.columns == reference.columns, "\(words) \(chars ?? []) \(weighting)")
            #expect(fast.values.map(\.bitPattern) == reference.values.map(\.bitPattern), "\(words) \(chars ?? []) \(weighting)")
        }
    }
}
