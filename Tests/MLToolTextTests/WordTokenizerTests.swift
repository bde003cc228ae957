import Foundation
import MLToolCore
import Testing
@testable import MLToolData

@Suite struct WordTokenizerTests {
    static let english = WordTokenizerConfig(splitHyphens: true, clitics: ["'d", "'ll", "'m", "'re", "'s", "'ve", "n't"],
                                             splits: ["cannot": [3, 3]], keep: ["e.g.", "mr."])

    @Test func englishRules() throws {
        let t = try WordTokenizer(config: Self.english)
        #expect(t.words("Mr. Smith can't go to the U.S. today, e.g. on Jan. 3rd (10:30-11:00)!")
                == ["Mr.", "Smith", "ca", "n't", "go", "to", "the", "U.S.", "today", ",", "e.g.", "on", "Jan", ".",
                    "3rd", "(", "10:30-11:00", ")", "!"])
        #expect(t.words("I CANNOT see well-known J. Doe's 3.5% 'quotes'... and/or 'll") ==
                ["I", "CAN", "NOT", "see", "well", "-", "known", "J.", "Doe", "'s", "3.5", "%", "'", "quotes", "'",
                 "...", "and", "/", "or", "'ll"])
        #expect(t.words("  \n\t ") == [])
        var keepHyphens = Self.english
        keepHyphens.splitHyphens = false
        #expect(try WordTokenizer(config: keepHyphens).words("well-known 713-853-3989") == ["well-known", "713-853-3989"])
        #expect(t.words("713-853-3989 e-mail") == ["713-853-3989", "e", "-", "mail"])
    }

    @Test func offsetsAreUTF8AndScalars() throws {
        let t = try WordTokenizer(config: Self.english)
        let text = "Café’s naïve—test"
        let spans = t.tokenize(text)
        #expect(spans.map(\.text) == ["Café", "’s", "naïve", "—", "test"])
        #expect(spans.map(\.scalars) == [0..<4, 4..<6, 7..<12, 12..<13, 13..<17])
        #expect(spans.map(\.utf8) == [0..<5, 5..<9, 10..<16, 16..<19, 19..<23])
        let bytes = Array(text.utf8)
        for s in spans { #expect(String(decoding: bytes[s.utf8], as: UTF8.self) == s.text) }
    }

    @Test func settingsAreChecked() {
        var c = Self.english
        c.rules = "other"
        #expect(message { try WordTokenizer(config: c) } == "text settings: tokenizer rules: other, expected mltool-words-1")
        c = Self.english
        c.splits = ["gonna": [3, 3]]
        #expect(message { try WordTokenizer(config: c) }
                == "text settings: tokenizer splits['gonna']: [3, 3], expected 2 or more lengths ≥ 1 adding up to 5")
    }

    @Test func learnsCliticsSplitsAndKeptWords() throws {
        func s(_ words: [String], mwt: [MultiwordToken] = []) -> TaggedSentence {
            TaggedSentence(tokens: words, tags: words.map { _ in "X" }, multiwordTokens: mwt)
        }
        let corpus = TaggedCorpus(source: "c", format: .conllu, sentences: [
            s(["I", "ca", "n't", "-", "go", "Sept.", "U.S."], mwt: [MultiwordToken(form: "can't", words: 1..<3)]),
            s(["we", "ca", "n't", "-", "Sept.", "e.g.", "Bob", "'s"], mwt: [MultiwordToken(form: "can't", words: 1..<3)]),
            s(["gon", "na", "well-known", "'s"], mwt: [MultiwordToken(form: "gonna", words: 0..<2)]),
            s(["gon", "na"], mwt: [MultiwordToken(form: "gonna", words: 0..<2)]),
        ])
        let c = WordTokenizer.learn(from: corpus)
        #expect(c.clitics == ["'s", "n't"])
        #expect(c.splitHyphens)   // two lone hyphens against one hyphenated word
        #expect(c.splits == ["gonna": [3, 2]])   // "can't" is already split by the clitic rule
        #expect(c.keep == ["sept."])   // "e.g." and "u.s." stay whole by the rules anyway
        #expect(try WordTokenizer(config: c).words("Gonna go, Sept. e.g. now")
                == ["Gon", "na", "go", ",", "Sept.", "e.g.", "now"])
    }
}
