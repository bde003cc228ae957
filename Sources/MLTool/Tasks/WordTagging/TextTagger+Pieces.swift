import Foundation
import MLToolCore
import MLToolData
import MLToolNL

extension TextTagger {
    /// A tag and a range of UTF-8 offsets in the text enumerated.
    typealias Piece = (tag: String?, utf8: Range<Int>)

    /// The `NLTag` name of each universal part of speech (punctuation and symbols by their text: `punctuationClass`).
    static let lexicalClasses: [String: String] = [
        "NOUN": "Noun", "PROPN": "Noun", "VERB": "Verb", "AUX": "Verb", "ADJ": "Adjective", "ADV": "Adverb",
        "PRON": "Pronoun", "DET": "Determiner", "PART": "Particle", "ADP": "Preposition", "NUM": "Number",
        "CCONJ": "Conjunction", "SCONJ": "Conjunction", "INTJ": "Interjection", "X": "OtherWord",
    ]

    /// The `NLTag` name of a punctuation token.
    static let punctuationClasses: [String: String] = [
        ".": "SentenceTerminator", "!": "SentenceTerminator", "?": "SentenceTerminator", "…": "SentenceTerminator",
        "(": "OpenParenthesis", "[": "OpenParenthesis", "{": "OpenParenthesis",
        ")": "CloseParenthesis", "]": "CloseParenthesis", "}": "CloseParenthesis",
        "“": "OpenQuote", "‘": "OpenQuote", "«": "OpenQuote", "”": "CloseQuote", "’": "CloseQuote", "»": "CloseQuote",
        "-": "Dash", "–": "Dash", "—": "Dash",
    ]

    /// The `NLTag` name of each entity type.
    static let nameTypes: [String: String] = ["PER": "PersonalName", "LOC": "PlaceName", "ORG": "OrganizationName"]

    /// Whether every scalar of `token` is punctuation or a symbol.
    static func isPunctuation(_ token: String) -> Bool {
        !token.isEmpty && token.unicodeScalars.allSatisfy {
            CharacterSet.punctuationCharacters.contains($0) || CharacterSet.symbols.contains($0)
        }
    }

    /// The words of `text` with their tags, and the whitespace between them.
    func wordPieces(_ text: String, scheme: TagScheme, options: TaggerOptions) -> [Piece] {
        let spans = tokenizer?.tokenize(text) ?? []
        var words: [Piece] = zip(spans, wordTags(spans, text, scheme: scheme)).map { ($1, $0.utf8) }
        if scheme == .nameType && options.contains(.joinNames) {
            words = Self.joined(words, bio: names?.tag(spans.map(\.text)) ?? [])
        }
        if options.contains(.omitPunctuation) {
            let bytes = Array(text.utf8)
            words = words.filter { w in !Self.isPunctuation(String(decoding: bytes[w.utf8], as: UTF8.self)) }
        }
        return options.contains(.omitWhitespace) ? words : Self.withGaps(words, in: text)
    }

    /// One tag per token.
    func wordTags(_ spans: [TokenSpan], _ text: String, scheme: TagScheme) -> [String?] {
        let tokens = spans.map(\.text)
        switch scheme {
        case .universalPOS: return partOfSpeech?.tag(tokens) ?? []
        case .lexicalClass:
            return zip(tokens, partOfSpeech?.tag(tokens) ?? []).map { token, pos in
                Self.punctuationClasses[token] ?? Self.lexicalClasses[pos]
                    ?? (Self.isPunctuation(token) ? "OtherPunctuation" : "OtherWord")
            }
        case .nameType:
            return zip(tokens, names?.tag(tokens) ?? []).map { token, bio in
                Self.nameTypes[Self.entityType(bio) ?? ""] ?? (Self.isPunctuation(token) ? "Punctuation" : "OtherWord")
            }
        case .tokenType: return tokens.map { Self.isPunctuation($0) ? "Punctuation" : "Word" }
        case .language:
            let sentences = sentencePieces(text, scheme: .language)
            return spans.map { span in sentences.first { $0.utf8.contains(span.utf8.lowerBound) }?.tag ?? nil }
        }
    }

    /// "PER" of "B-PER" (any one-letter prefix and a hyphen), nil for "O".
    static func entityType(_ tag: String) -> String? {
        let parts = tag.split(separator: "-", maxSplits: 1)
        return parts.count == 2 && parts[0].count == 1 ? String(parts[1]) : nil
    }

    /// Names of several tokens as one piece: a name token continues the name before it when they are of one type and
    /// its own tag (`bio`) does not begin a name (B-, S-, U-).
    static func joined(_ words: [Piece], bio: [String]) -> [Piece] {
        var out: [Piece] = []
        for (w, tag) in zip(words, bio) {
            if let last = out.last, w.tag == last.tag, nameTypes.values.contains(w.tag ?? ""),
               !["B", "S", "U"].contains(tag.prefix(1)) {
                out[out.count - 1].utf8 = last.utf8.lowerBound..<w.utf8.upperBound
            } else {
                out.append(w)
            }
        }
        return out
    }

    /// `words` with the stretches of text between them as Whitespace pieces.
    static func withGaps(_ words: [Piece], in text: String) -> [Piece] {
        var out: [Piece] = [], at = 0
        for w in words {
            if w.utf8.lowerBound > at { out.append(("Whitespace", at..<w.utf8.lowerBound)) }
            out.append(w)
            at = w.utf8.upperBound
        }
        if text.utf8.count > at { out.append(("Whitespace", at..<text.utf8.count)) }
        return out
    }

    /// The sentences of `text` (a run of . ! ? … and closing quotes or brackets before whitespace ends one, so does a
    /// line break), without the whitespace around them; tagged with their language under `.language`.
    func sentencePieces(_ text: String, scheme: TagScheme) -> [Piece] {
        let bytes = Array(text.utf8)
        var out: [Piece] = [], start = 0, i = 0
        func close(_ end: Int) {
            var lo = start, hi = end
            while lo < hi, Self.isSpace(bytes[lo]) { lo += 1 }
            while hi > lo, Self.isSpace(bytes[hi - 1]) { hi -= 1 }
            if lo < hi {
                let sentence = String(decoding: bytes[lo..<hi], as: UTF8.self)
                out.append((scheme == .language ? (try? languages?.dominantLanguage(for: sentence)) ?? nil : nil, lo..<hi))
            }
            start = end
        }
        while i < bytes.count {
            if bytes[i] == 0x0A { close(i + 1) } else if Self.endsSentence(bytes, at: i) { close(i + 1) }
            i += 1
        }
        close(bytes.count)
        return out
    }

    static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    /// Whether the byte at `i` ends a sentence: . ! ? (or the last byte of …, ” or ») followed by whitespace or the end,
    /// after a run of terminators and closers.
    static func endsSentence(_ bytes: [UInt8], at i: Int) -> Bool {
        guard i + 1 == bytes.count || isSpace(bytes[i + 1]) else { return false }
        var j = i
        while j >= 0 {
            let b = bytes[j]
            if b == UInt8(ascii: ".") || b == UInt8(ascii: "!") || b == UInt8(ascii: "?") { return true }
            guard b == UInt8(ascii: "\"") || b == UInt8(ascii: "'") || b == UInt8(ascii: ")") || b >= 0x80 else { return false }
            if b >= 0x80 {
                // … (E2 80 A6), ” (E2 80 9D), » (C2 BB): a terminator or a closer ending here.
                if j >= 2, bytes[j - 2] == 0xE2, bytes[j - 1] == 0x80, bytes[j] == 0xA6 { return true }
                if j >= 2, bytes[j - 2] == 0xE2, bytes[j - 1] == 0x80, bytes[j] == 0x9D { j -= 3; continue }
                if j >= 1, bytes[j - 1] == 0xC2, bytes[j] == 0xBB { j -= 2; continue }
                return false
            }
            j -= 1
        }
        return false
    }
}
