import Foundation
import Testing
import MLToolTestSupport
@testable import MLToolCore

/// The WordPiece tokenizer against Hugging Face's `tokenizers` (Tests/Fixtures/minilm/tokenizer_oracle.py) on real
/// text, and hostile tokenizer.json files refused with their place.
@Suite struct WordPieceTokenizerTests {
    static let minilm = SharedDatasets.repository.appendingPathComponent(".build/minilm").path
    static let translations = SharedDatasets.repository.appendingPathComponent("datasets/language-id/test.csv").path

    /// A small BERT tokenizer.json: the fields a real one has, a 12-token vocabulary.
    static func json(vocab: String = ###"{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"[MASK]":4,"un":5,"##aff":6,"##able":7,"the":8,",":9,"cafe":10,"中":11}"###,
                     normalizer: String = #"{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}"#,
                     post: String = #"{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}}],"pair":[],"special_tokens":{"[CLS]":{"id":"[CLS]","ids":[2],"tokens":["[CLS]"]},"[SEP]":{"id":"[SEP]","ids":[3],"tokens":["[SEP]"]}}}"#,
                     added: String = #"[{"id":4,"content":"[MASK]","special":true,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false}]"#,
                     truncation: String = #"{"max_length":6,"strategy":"LongestFirst","stride":0}"#) -> [UInt8] {
        Array(("{\"version\":\"1.0\",\"truncation\":\(truncation),\"padding\":null,\"added_tokens\":\(added),"
            + "\"normalizer\":\(normalizer),\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"post_processor\":\(post),"
            + "\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},"
            + "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
            + "\"max_input_chars_per_word\":100,\"vocab\":\(vocab)}}").utf8)
    }

    @Test func smallTokenizerSplitsAsBERTDoes() throws {
        let t = try WordPieceTokenizer(tokenizerJSON: Self.json(), file: "small.json")
        #expect(t.ids("UnAffable") == [2, 5, 6, 7, 3])
        #expect(t.ids("Café,中") == [2, 10, 9, 11, 3])          // accents stripped, punctuation and CJK split
        #expect(t.ids("the [MASK] xyz") == [2, 8, 4, 1, 3])      // a special token as written; an unknown word
        #expect(t.ids("the the the the the the") == [2, 8, 8, 8, 8, 3])   // truncated to max_length 6
        #expect(t.ids("") == [2, 3])
        // Stored and read back (the model file keeps the tokenizer as JSON).
        let back = try JSONDecoder().decode(WordPieceTokenizer.self, from: JSONEncoder().encode(t))
        #expect(back == t && back.ids("UnAffable") == t.ids("UnAffable"))
    }

    /// Token ids equal the `tokenizers` library's on 10,624 real texts: Debian package synopses and descriptions of
    /// the pinned language-ID test set (72 languages, at most 300 per language and kind: 8,623) and the sentences of
    /// UD English EWT's dev set (2,001).
    @Test func idsEqualTheTokenizersLibrary() throws {
        let tokenizer = Self.minilm + "/tokenizer.json"
        guard FileManager.default.fileExists(atPath: tokenizer) else {
            return Oracles.missing("\(tokenizer) (python3 Tests/Fixtures/minilm/fetch_minilm.py)")
        }
        guard FileManager.default.fileExists(atPath: Self.translations) else {
            return Oracles.missing("\(Self.translations) (bash datasets/language-id.sh)")
        }
        guard let ewt = SharedDatasets.udEWT("en_ewt-ud-dev.conllu") else {
            return Oracles.missing("UD English EWT (bash datasets/ud-english-ewt.sh)")
        }
        guard let answer = try JSONOracle.call("Tests/Fixtures/minilm/tokenizer_oracle.py",
                                               ["tokenizer": tokenizer, "translations": Self.translations, "ewt": ewt,
                                                "per_language": 300],
                                               missing: "tokenizers (pip install tokenizers==0.23.3)"),
              let texts = answer["texts"] as? [String], let ids = answer["ids"] as? [[Int]] else { return }
        let t = try WordPieceTokenizer(tokenizerJSON: tokenizer)
        #expect(texts.count >= 10_000 && texts.count == ids.count)
        var differ: [String] = []
        for (text, want) in zip(texts, ids) {
            let got = t.ids(text)
            if got != want {
                differ.append("\(text.prefix(80).debugDescription): \(t.tokens(got).prefix(40)) vs \(t.tokens(want).prefix(40))")
            }
        }
        #expect(differ.isEmpty, "\(differ.count) of \(texts.count) texts differ:\n\(differ.prefix(10).joined(separator: "\n"))")
    }

    /// Hostile or foreign tokenizer.json files are refused with a `CoreError` naming the byte and the field.
    @Test(arguments: [
        ("deep nesting", Array("{\"a\":".utf8) + [UInt8](repeating: UInt8(ascii: "["), count: 100_000), "byte 20: JSON"),
        ("not JSON", Array("{\"model\": tru".utf8), "byte 0: JSON"),
        ("an array", Array("[1]".utf8), "byte 0: top level"),
        ("another normalizer", json(normalizer: #"{"type":"NFKC"}"#), "normalizer.type"),
        ("a flag of the wrong type", json(normalizer: #"{"type":"BertNormalizer","lowercase":"yes"}"#), "normalizer.lowercase"),
        ("an id outside the vocabulary", json(vocab: #"{"[UNK]":0,"[CLS]":1,"[SEP]":7}"#), "model.vocab[\"[SEP]\"]"),
        ("two tokens with one id", json(vocab: #"{"[UNK]":0,"[CLS]":1,"[SEP]":1}"#), "model.vocab"),
        ("a fractional id", json(vocab: #"{"[UNK]":0.5}"#), "model.vocab[\"[UNK]\"]"),
        ("an empty vocabulary", json(vocab: "{}"), "model.vocab"),
        ("no unknown token", json(vocab: #"{"[PAD]":0,"[CLS]":1,"[SEP]":2}"#), "model.unk_token"),
        ("a normalized added token", json(added: #"[{"id":4,"content":"[MASK]","normalized":true}]"#), "added_tokens[0].normalized"),
        ("an added token past the vocabulary", json(added: #"[{"id":400,"content":"[X]"}]"#), "added_tokens[0].id"),
        ("a template without [SEP]", json(post: #"{"type":"TemplateProcessing","single":[{"Sequence":{"id":"A"}}]}"#), "post_processor.single"),
        ("a RoBERTa post-processor", json(post: #"{"type":"RobertaProcessing"}"#), "post_processor.type"),
        ("a truncation below 2", json(truncation: #"{"max_length":1}"#), "truncation.max_length"),
    ] as [(String, [UInt8], String)])
    func hostileFileIsRefused(_ name: String, _ bytes: [UInt8], _ place: String) {
        do {
            _ = try WordPieceTokenizer(tokenizerJSON: bytes, file: "hostile.json")
            Issue.record("\(name): accepted")
        } catch let e as CoreError {
            #expect(e.exitStatus == .dataError, "\(name)")
            #expect(e.description.hasPrefix("hostile.json at byte ") && e.description.contains(place), "\(name): \(e)")
        } catch {
            Issue.record("\(name): \(type(of: error)): \(error)")
        }
    }
}
