import Foundation
import MLToolCore
import Testing
@testable import MLToolData

/// The three tagged-data readers: what they keep, and the exact message for each kind of bad input.
@Suite struct TaggedCorpusTests {
    func conllu(_ text: String, column: TagColumn = .upos) throws -> TaggedCorpus {
        try TaggedCorpus.conllu(bytes: Array(text.utf8), file: "t.conllu", tagColumn: column)
    }
    func conll(_ text: String) throws -> TaggedCorpus { try TaggedCorpus.conll(bytes: Array(text.utf8), file: "t.bio") }
    func json(_ text: String) throws -> TaggedCorpus { try TaggedCorpus.json(bytes: Array(text.utf8), file: "t.json") }

    /// Ten tab-separated fields.
    static func word(_ id: String, _ form: String, _ upos: String, _ xpos: String = "_", misc: String = "_") -> String {
        [id, form, form.lowercased(), upos, xpos, "_", "0", "root", "_", misc].joined(separator: "\t")
    }

    static let sample = """
        # sent_id = 1
        # text = I don't know.
        \(word("1", "I", "PRON", "PRP"))
        \(word("2-3", "don't", "_"))
        \(word("2", "do", "AUX", "VBP"))
        \(word("3", "n't", "PART", "RB"))
        \(word("4", "know", "VERB", "VB", misc: "SpaceAfter=No|NE=O"))
        \(word("4.1", "knows", "VERB", "VBZ"))
        \(word("5", ".", "PUNCT", "."))

        # sent_id = 2
        \(word("1", "Paris", "PROPN", "NNP", misc: "NE=B-LOC"))

        """

    @Test func conlluKeepsWordsTextAndMultiwordTokens() throws {
        let c = try conllu(Self.sample)
        #expect(c.sentences.count == 2)
        let s = c.sentences[0]
        #expect(s.tokens == ["I", "do", "n't", "know", "."])
        #expect(s.tags == ["PRON", "AUX", "PART", "VERB", "PUNCT"])
        #expect(s.text == "I don't know.")
        #expect(s.line == 1)
        #expect(s.multiwordTokens == [MultiwordToken(form: "don't", words: 1..<3)])
        #expect(c.sentences[1].line == 11)
        #expect(c.tags == ["AUX", "PART", "PRON", "PROPN", "PUNCT", "VERB"])
        #expect(try conllu(Self.sample, column: .xpos).sentences[0].tags == ["PRP", "VBP", "RB", "VB", "."])
    }

    @Test func conlluMiscKeyAndMissingTags() throws {
        let text = "\(Self.word("1", "Paris", "PROPN", misc: "NE=B-LOC"))\n\(Self.word("2", "rocks", "VERB", misc: "NE=O"))\n"
        #expect(try conllu(text, column: .misc("NE")).sentences[0].tags == ["B-LOC", "O"])
        #expect(message { try conllu(Self.sample, column: .misc("NE")) } == "t.conllu:3: token 'I' has no MISC key NE tag")
        #expect(message { try conllu("\(Self.word("1", "x", "_"))\n") } == "t.conllu:1: token 'x' has no UPOS tag")
        #expect(message { try TagColumn(parsing: "lemma") } == "text settings: tag column: lemma, expected upos, xpos or misc:KEY")
        #expect(try TagColumn(parsing: "misc:NE") == .misc("NE"))
    }

    @Test func conlluBadInputsNameTheLine() {
        #expect(message { try conllu("1\tx\tx\tNOUN\t_\t_\t0\troot\t_\n") }
                == "t.conllu:1: 9 tab-separated fields, expected 10")
        #expect(message { try conllu("# sent_id = 1\n# text = nothing\n\n\(Self.word("1", "a", "DET"))\n") }
                == "t.conllu:1: a sentence with no tokens")
        #expect(message { try conllu("\(Self.word("1", "a", "DET"))\n\(Self.word("3", "b", "NOUN"))\n") }
                == "t.conllu:2: ID '3', expected word id 2")
        #expect(message { try conllu("\(Self.word("1-x", "ab", "_"))\n") }
                == "t.conllu:1: ID '1-x', expected a range 1-M with M > 1")
        #expect(message { try conllu("\(Self.word("1-2", "ab", "_"))\n\(Self.word("1", "a", "DET"))\n") }
                == "t.conllu:1: multiword token 'ab', expected words 1-2 in a sentence of 1 words")
        #expect(message { try conllu("\(Self.word("1.x", "a", "DET"))\n") }
                == "t.conllu:1: ID '1.x', expected a word id, a range N-M or an empty node N.M")
        #expect(message { try conllu("# only a comment\n") } == "t.conllu:1: a sentence with no tokens")
        #expect(message { try conllu("\n\n") } == "t.conllu: no documents: no sentences")
    }

    @Test func conllReadsTokensAndLastColumn() throws {
        let c = try conll("-DOCSTART- -X- O O\n\nEU NNP B-ORG\nrejects\tVBZ O\n\n\n  German JJ B-MISC\r\ncall NN O\n")
        #expect(c.sentences.map(\.tokens) == [["EU", "rejects"], ["German", "call"]])
        #expect(c.sentences.map(\.tags) == [["B-ORG", "O"], ["B-MISC", "O"]])
        #expect(c.sentences.map(\.line) == [3, 7])
    }

    /// UNER's `.iob2` layout (its release files: comments, a numbering column, the tag third, then two more columns,
    /// the last an annotator's name) reads as tokens and entity tags, where the last column would give a tag per
    /// annotator and the numbers as words (which trained a 4,000-tag model for minutes on UNER's dev file).
    @Test func conllReadsUNERsNumberedColumnsAndComments() throws {
        let text = "# newdoc id = a\n# sent_id = a-1\n# text = where in tampa bay\n1\twhere\tO\t-\t-\n"
            + "2\tin\tO\t-\t-\n3\ttampa\tB-LOC\t-\tstephen\n4\tbay\tI-LOC\t-\tstephen\n\n"
            + "# sent_id = a-2\n# text = Tim\n1\tTim\tB-PER\t-\tstephen\n"
        let c = try conll(text)
        #expect(c.sentences.map(\.tokens) == [["where", "in", "tampa", "bay"], ["Tim"]])
        #expect(c.sentences.map(\.tags) == [["O", "O", "B-LOC", "I-LOC"], ["B-PER"]])
        #expect(c.sentences.map(\.line) == [4, 11])
        // CoNLL-2003's four columns keep the last (the chunk column is entity-shaped too); a "#" token with a tab is
        // a token; a first column that does not number the tokens is the token.
        let conll2003 = try conll("EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n#\tSYM\tO\tO\n")
        #expect(conll2003.sentences[0].tokens == ["EU", "rejects", "#"])
        #expect(conll2003.sentences[0].tags == ["B-ORG", "O", "O"])
        let counted = try conll("2 CD O\n1 CD O\n")
        #expect(counted.sentences[0].tokens == ["2", "1"])
    }

    @Test func conllTokenWithoutTag() {
        #expect(message { try conll("Paris B-LOC\nrocks\n") }
                == "t.bio:2: token 'rocks' has no tag (expected: token, whitespace, tag)")
        #expect(message { try conll("\n \n") } == "t.bio: no documents: no sentences")
    }

    @Test func jsonReadsCreateMLShape() throws {
        let c = try json(#"[{"tokens": ["Tim", "Cook"], "labels": ["B-PER", "I-PER"]}, {"labels": ["O"], "tokens": ["hi"]}]"#)
        #expect(c.sentences.map(\.tokens) == [["Tim", "Cook"], ["hi"]])
        #expect(c.sentences.map(\.line) == [1, 2])
        let keyed = try TaggedCorpus.json(bytes: Array(#"[{"words": ["a"], "tags": ["X"]}]"#.utf8), file: "k.json",
                                          tokensKey: "words", labelsKey: "tags")
        #expect(keyed.sentences[0].tags == ["X"])
    }

    @Test func jsonBadInputsNameTheSentence() {
        #expect(message { try json(#"[{"tokens": ["a", "b"], "labels": ["X"]}]"#) }
                == "t.json: sentence 1: 2 tokens but 1 label")
        #expect(message { try json(#"[{"tokens": ["a"], "labels": ["X"]}, {"tokens": [], "labels": []}]"#) }
                == "t.json: sentence 2: a sentence with no tokens")
        #expect(message { try json(#"[{"tokens": ["a"]}]"#) } == "t.json: sentence 1: no 'labels' array")
        #expect(message { try json(#"[{"tokens": ["a", 3], "labels": ["X", "Y"]}]"#) }
                == "t.json: sentence 1: tokens[1] is not a non-empty string")
        #expect(message { try json(#"{"tokens": ["a"]}"#) } == "t.json: top level: expected an array of sentences")
        #expect(message { try json("[1,") } == "t.json: byte 3 (the end of the file): invalid JSON")
        #expect(message { try json("[1, x]") } == "t.json: byte 4: invalid JSON")
        #expect(message { try json("[]") } == "t.json: no documents: an empty array")
    }

    @Test func loadDetectsTheFormatAndChecksUTF8() throws {
        let dir = try TextTempDir()
        defer { dir.remove() }
        let u = try dir.file("a.conllu", Self.sample)
        let b = try dir.file("a.bio", "Paris B-LOC\n")
        let j = try dir.file("a.json", #"  [{"tokens": ["x"], "labels": ["Y"]}]"#)
        let bad = try dir.file("bad.bio", [0x61, 0x20, 0x42, 0x0A, 0xFF, 0x0A])
        #expect(try TaggedCorpus.load(u).format == .conllu)
        #expect(try TaggedCorpus.load(b).format == .conll)
        #expect(try TaggedCorpus.load(j).format == .json)
        #expect(TaggedDataFormat.detect(path: dir.path + "/x.csv") == nil)
        #expect(TaggedDataFormat.detect(path: j) == .json)
        #expect(message { try TaggedCorpus.load(bad) } == "\(bad):2: invalid UTF-8 at byte offset 4")
    }
}
