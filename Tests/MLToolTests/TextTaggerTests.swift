import Foundation
import MLTool
import MLToolTestSupport
import Testing

/// The built-in English taggers (models/pos-en.bin on UD English EWT, models/ner-en.bin on UNER English EWT's dev
/// split, which `make models` trains) through `TextTagger`, found with no path as a user's program finds them, and
/// scored on the test splits of their data sets.
@Suite struct TextTaggerTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let models = ["pos-en.bin", "ner-en.bin", "language-id.bin"].map { root + "/models/" + $0 }
    static var available: Bool { models.allSatisfy { FileManager.default.fileExists(atPath: $0) } }
    static let why = "models/pos-en.bin, ner-en.bin or language-id.bin is missing (make models)"
    static let ewt = ProcessInfo.processInfo.environment["UD_EWT_DIR"] ?? root + "/../shared/datasets/ud-english-ewt"
    static let uner = ProcessInfo.processInfo.environment["UNER_EWT_DIR"] ?? root + "/../shared/datasets/uner-english-ewt"

    static let text = "Barack Obama met Angela Merkel in Berlin on Monday to talk about the weather.  Das ist ein schönes Haus!"

    /// The tags and the text of each range.
    static func pieces(_ tagger: TextTagger, unit: TagUnit = .word, _ scheme: TagScheme,
                       options: TaggerOptions = []) -> [(String, String?)] {
        let s = tagger.string
        return tagger.tags(in: s.startIndex..<s.endIndex, unit: unit, scheme: scheme, options: options)
            .map { (String(s[$0.range]), $0.tag) }
    }

    // Measured (Zen 4, December 2026): UPOS accuracy 0.9534 on EWT test (the floor, 0.953); entity F1 0.6159
    // on UNER test (precision 0.6989, recall 0.5506; gazetteer, feature set "mltool-tagger-3"; 0.6111 with "-2") — the
    // issue asks 0.68, not met yet.
    @Test func bundledTaggersScoreOnTheirTestSplits() throws {
        guard Self.available else { return Oracles.missing(Self.why) }
        let pos = try ModelLoader.load(Self.models[0])
        let upos = try WordTagging.evaluate(model: pos, path: Self.models[0], data: Self.ewt + "/en_ewt-ud-test.conllu")
        #expect(upos.report.accuracy >= 0.953, "UPOS accuracy \(upos.report.accuracy)")
        let ner = try ModelLoader.load(Self.models[1])
        let names = try WordTagging.evaluate(model: ner, path: Self.models[1], data: Self.uner + "/en_ewt-ud-test.iob2")
        let f1 = try #require(names.report.entities).f1
        #expect(f1 >= 0.6059, "entity F1 \(f1)")
    }

    @Test func wordRangesCoverTheStringAndCarryNLTagNames() throws {
        guard Self.available else { return Oracles.missing(Self.why) }
        var tagger = try TextTagger(tagSchemes: [.lexicalClass, .universalPOS, .tokenType])
        tagger.string = Self.text
        let all = Self.pieces(tagger, .lexicalClass)
        #expect(all.map(\.0).joined() == Self.text, "every byte in exactly one range, in order")
        #expect(all.filter { $0.0.allSatisfy(\.isWhitespace) }.allSatisfy { $0.1 == "Whitespace" })
        let words = Self.pieces(tagger, .lexicalClass, options: .omitWhitespace)
        let tagOf = Dictionary(words.map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
        #expect(tagOf["met"] == "Verb" && tagOf["Berlin"] == "Noun" && tagOf["in"] == "Preposition")
        #expect(tagOf["."] == "SentenceTerminator" && tagOf["!"] == "SentenceTerminator")
        #expect(Self.pieces(tagger, .universalPOS, options: .omitWhitespace).first! == ("Barack", "PROPN"))
        let noPunctuation = Self.pieces(tagger, .tokenType, options: [.omitWhitespace, .omitPunctuation])
        #expect(noPunctuation.allSatisfy { $0.1 == "Word" } && noPunctuation.count == words.count - 2)
    }

    @Test func namesJoinAndSentencesGetTheirLanguage() throws {
        guard Self.available else { return Oracles.missing(Self.why) }
        var tagger = try TextTagger(tagSchemes: [.nameType, .language])
        tagger.string = Self.text
        let joined = Self.pieces(tagger, .nameType, options: [.omitWhitespace, .joinNames]).filter { $0.1 != "OtherWord" }
        let names = joined.filter { $0.1?.hasSuffix("Name") == true }
        #expect(names.map(\.0) == ["Barack Obama", "Angela Merkel", "Berlin"], "\(joined)")
        // The model's types: Barack Obama a person, Berlin a place. (Since the tagger trains on every dev sentence for
        // 10 epochs, entity F1 0.6111 against 0.5958, it calls Angela Merkel a place here: a known miss, the F1 bar
        // above is the quality check; this test is about joining.)
        #expect(names.first?.1 == "PersonalName" && names.last?.1 == "PlaceName", "\(names)")
        // Unjoined: the same names word by word, each word with its name's type.
        let single = Self.pieces(tagger, .nameType, options: .omitWhitespace).filter { $0.1?.hasSuffix("Name") == true }
        #expect(single.map(\.0) == ["Barack", "Obama", "Angela", "Merkel", "Berlin"])
        #expect(single.map(\.1) == [names[0].1, names[0].1, names[1].1, names[1].1, names[2].1])
        let sentences = Self.pieces(tagger, unit: .sentence, .language)
        #expect(sentences.map(\.0) == ["Barack Obama met Angela Merkel in Berlin on Monday to talk about the weather.",
                                        "Das ist ein schönes Haus!"])
        #expect(sentences.map(\.1) == ["en", "de"])
        #expect(Self.pieces(tagger, .language, options: .omitWhitespace).last! == ("!", "de"))
    }

    @Test func aSubrangeAndAStopAreHonoured() throws {
        guard Self.available else { return Oracles.missing(Self.why) }
        var tagger = try TextTagger(tagSchemes: [.tokenType])
        tagger.string = "¿Qué? Tim Cook, 2011."
        let s = tagger.string
        let from = try #require(s.range(of: "Tim"))
        var seen: [String] = []
        tagger.enumerateTags(in: from.lowerBound..<s.endIndex, unit: .word, scheme: .tokenType, options: .omitWhitespace) {
            tag, range in
            #expect(range.lowerBound >= from.lowerBound)
            seen.append(String(s[range]) + "/" + (tag ?? "-"))
            return seen.count < 3
        }
        #expect(seen == ["Tim/Word", "Cook/Word", ",/Punctuation"])
    }
}
