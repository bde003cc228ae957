import Foundation

/// BERT's tokenizer as Hugging Face's `tokenizers` runs it from a `tokenizer.json` (BertNormalizer,
/// BertPreTokenizer, WordPiece, [CLS] … [SEP]), giving the same token ids:
///
/// 1. special tokens (`added_tokens`, e.g. "[MASK]") written in the text are matched first, longest first, as-is;
/// 2. the rest is normalised: NUL, U+FFFD and control/format/unassigned characters removed, whitespace → " "
///    (`cleanText`); spaces around CJK ideographs (`handleChineseChars`); NFD and nonspacing marks removed
///    (`stripAccents`, which follows `lowercase` when the file says null); Unicode lower-casing per character;
/// 3. split on whitespace, and each punctuation character (Unicode P*, and ASCII's symbols) a word of its own;
/// 4. each word greedily, longest match first, into vocabulary pieces ("##" before pieces inside a word); a word
///    longer than `maxInputCharsPerWord` or with no match becomes `unknown`;
/// 5. truncated to `maxLength` − 2 ids, then `cls` before and `sep` after.
public struct WordPieceTokenizer: Codable, Sendable, Equatable {
    /// The vocabulary: token → id is its position.
    public var vocabulary: [String]
    public var unknown: Int
    public var cls: Int
    public var sep: Int
    public var pad: Int
    /// The special tokens matched in raw text before normalisation, with their ids.
    public var specials: [String: Int]
    public var continuingPrefix: String
    public var maxInputCharsPerWord: Int
    /// The most ids of one text, [CLS] and [SEP] included.
    public var maxLength: Int
    public var cleanText: Bool
    public var handleChineseChars: Bool
    public var stripAccents: Bool
    public var lowercase: Bool

    private var lookup: Lookup

    private enum CodingKeys: String, CodingKey {
        case vocabulary, unknown, cls, sep, pad, specials, continuingPrefix, maxInputCharsPerWord, maxLength
        case cleanText, handleChineseChars, stripAccents, lowercase
    }

    public init(vocabulary: [String], unknown: Int, cls: Int, sep: Int, pad: Int, specials: [String: Int],
                continuingPrefix: String = "##", maxInputCharsPerWord: Int = 100, maxLength: Int = 128,
                cleanText: Bool = true, handleChineseChars: Bool = true, stripAccents: Bool = true,
                lowercase: Bool = true) {
        self.vocabulary = vocabulary; self.unknown = unknown; self.cls = cls; self.sep = sep; self.pad = pad
        self.specials = specials; self.continuingPrefix = continuingPrefix
        self.maxInputCharsPerWord = maxInputCharsPerWord; self.maxLength = maxLength; self.cleanText = cleanText
        self.handleChineseChars = handleChineseChars; self.stripAccents = stripAccents; self.lowercase = lowercase
        lookup = Lookup(vocabulary: vocabulary, prefix: continuingPrefix, specials: specials)
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(vocabulary: try c.decode([String].self, forKey: .vocabulary), unknown: try c.decode(Int.self, forKey: .unknown),
                  cls: try c.decode(Int.self, forKey: .cls), sep: try c.decode(Int.self, forKey: .sep),
                  pad: try c.decode(Int.self, forKey: .pad), specials: try c.decode([String: Int].self, forKey: .specials),
                  continuingPrefix: try c.decode(String.self, forKey: .continuingPrefix),
                  maxInputCharsPerWord: try c.decode(Int.self, forKey: .maxInputCharsPerWord),
                  maxLength: try c.decode(Int.self, forKey: .maxLength), cleanText: try c.decode(Bool.self, forKey: .cleanText),
                  handleChineseChars: try c.decode(Bool.self, forKey: .handleChineseChars),
                  stripAccents: try c.decode(Bool.self, forKey: .stripAccents), lowercase: try c.decode(Bool.self, forKey: .lowercase))
        let ids = [unknown, cls, sep, pad] + Array(specials.values)
        guard ids.allSatisfy({ vocabulary.indices.contains($0) }), maxLength >= 2, maxInputCharsPerWord >= 1 else {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath,
                                                    debugDescription: "a special id outside the vocabulary, or a length below its minimum"))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(vocabulary, forKey: .vocabulary); try c.encode(unknown, forKey: .unknown)
        try c.encode(cls, forKey: .cls); try c.encode(sep, forKey: .sep); try c.encode(pad, forKey: .pad)
        try c.encode(specials, forKey: .specials); try c.encode(continuingPrefix, forKey: .continuingPrefix)
        try c.encode(maxInputCharsPerWord, forKey: .maxInputCharsPerWord); try c.encode(maxLength, forKey: .maxLength)
        try c.encode(cleanText, forKey: .cleanText); try c.encode(handleChineseChars, forKey: .handleChineseChars)
        try c.encode(stripAccents, forKey: .stripAccents); try c.encode(lowercase, forKey: .lowercase)
    }

    public static func == (a: Self, b: Self) -> Bool {
        (a.vocabulary, a.unknown, a.cls, a.sep, a.pad) == (b.vocabulary, b.unknown, b.cls, b.sep, b.pad)
            && (a.continuingPrefix, a.maxInputCharsPerWord, a.maxLength) == (b.continuingPrefix, b.maxInputCharsPerWord, b.maxLength)
            && a.specials == b.specials
            && (a.cleanText, a.handleChineseChars, a.stripAccents, a.lowercase)
            == (b.cleanText, b.handleChineseChars, b.stripAccents, b.lowercase)
    }

    // MARK: - Tokenizing

    /// The ids of `text`: [CLS], at most `maxLength` − 2 pieces, [SEP].
    public func ids(_ text: String) -> [Int] {
        var out: [Int] = []
        let budget = maxLength - 2
        for part in splitOnSpecials(Array(text.unicodeScalars)) {
            switch part {
            case let .special(id):
                out.append(id)
            case let .text(scalars):
                for word in words(normalized(scalars)) {
                    wordPieces(word, into: &out)
                    if out.count >= budget { break }
                }
            }
            if out.count >= budget { break }
        }
        if out.count > budget { out.removeLast(out.count - budget) }
        return [cls] + out + [sep]
    }

    /// The token strings of `ids` (for messages and tests).
    public func tokens(_ ids: [Int]) -> [String] { ids.map { vocabulary.indices.contains($0) ? vocabulary[$0] : "?" } }

    private enum Part { case special(Int), text([Unicode.Scalar]) }

    /// The text cut at the special tokens written in it (leftmost, longest first).
    private func splitOnSpecials(_ s: [Unicode.Scalar]) -> [Part] {
        guard !lookup.specials.isEmpty else { return [.text(s)] }
        var parts: [Part] = [], start = 0, i = 0
        while i < s.count {
            if let match = lookup.special(at: i, in: s) {
                if start < i { parts.append(.text(Array(s[start..<i]))) }
                parts.append(.special(match.id))
                i += match.length
                start = i
            } else {
                i += 1
            }
        }
        if start < s.count { parts.append(.text(Array(s[start...]))) }
        return parts
    }

    /// BertNormalizer: clean, CJK spacing, accents, lower case (in the library's order).
    func normalized(_ input: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var s: [Unicode.Scalar] = []
        s.reserveCapacity(input.count)
        for c in input {
            if cleanText {
                if c.value == 0 || c.value == 0xFFFD || Self.isControl(c) { continue }
                if Self.isWhitespace(c) { s.append(" "); continue }
            }
            if handleChineseChars && Self.isChinese(c) {
                s.append(" "); s.append(c); s.append(" ")
            } else {
                s.append(c)
            }
        }
        if stripAccents {
            var text = String.UnicodeScalarView()
            text.append(contentsOf: s)
            s = String(text).decomposedStringWithCanonicalMapping.unicodeScalars
                .filter { $0.properties.generalCategory != .nonspacingMark }
        }
        if lowercase {
            var lower: [Unicode.Scalar] = []
            lower.reserveCapacity(s.count)
            for c in s {
                if c.isASCII {
                    let v = UInt8(truncatingIfNeeded: c.value)
                    lower.append(Unicode.Scalar((65...90).contains(v) ? v + 32 : v))
                } else {
                    lower.append(contentsOf: c.properties.lowercaseMapping.unicodeScalars)
                }
            }
            s = lower
        }
        return s
    }

    /// BertPreTokenizer: words split at whitespace, each punctuation character a word of its own.
    func words(_ s: [Unicode.Scalar]) -> [ArraySlice<Unicode.Scalar>] {
        var out: [ArraySlice<Unicode.Scalar>] = [], start = 0
        for (i, c) in s.enumerated() {
            if c.properties.isWhitespace {
                if start < i { out.append(s[start..<i]) }
                start = i + 1
            } else if Self.isPunctuation(c) {
                if start < i { out.append(s[start..<i]) }
                out.append(s[i...i])
                start = i + 1
            }
        }
        if start < s.count { out.append(s[start...]) }
        return out
    }

    /// WordPiece: longest match first; the whole word is `unknown` when a part matches nothing.
    private func wordPieces(_ word: ArraySlice<Unicode.Scalar>, into out: inout [Int]) {
        guard word.count <= maxInputCharsPerWord else { out.append(unknown); return }
        var pieces: [Int] = [], start = word.startIndex
        while start < word.endIndex {
            var end = word.endIndex, found: Int?
            while start < end {
                var piece = String.UnicodeScalarView()
                piece.append(contentsOf: word[start..<end])
                if let id = (start == word.startIndex ? lookup.words : lookup.continuations)[String(piece)] {
                    found = id
                    break
                }
                end -= 1
            }
            guard let id = found else { out.append(unknown); return }
            pieces.append(id)
            start = end
        }
        out.append(contentsOf: pieces)
    }

    // MARK: - Character classes (as the `tokenizers` library defines them)

    static func isWhitespace(_ c: Unicode.Scalar) -> Bool {
        c == "\t" || c == "\n" || c == "\r" || c.properties.isWhitespace
    }

    static func isControl(_ c: Unicode.Scalar) -> Bool {
        if c == "\t" || c == "\n" || c == "\r" { return false }
        switch c.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned: return true
        default: return false
        }
    }

    static func isPunctuation(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 33...47, 58...64, 91...96, 123...126: return true
        default: break
        }
        switch c.properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
             .finalPunctuation, .otherPunctuation: return true
        default: return false
        }
    }

    static func isChinese(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x4E00...0x9FFF, 0x3400...0x4DBF, 0x20000...0x2A6DF, 0x2A700...0x2B73F, 0x2B740...0x2B81F,
             0x2B920...0x2CEAF, 0xF900...0xFAFF, 0x2F800...0x2FA1F: return true
        default: return false
        }
    }

    /// The dictionaries built from the vocabulary (not stored).
    private struct Lookup: Sendable {
        var words: [String: Int] = [:]
        var continuations: [String: Int] = [:]
        var specials: [[Unicode.Scalar]: Int] = [:]
        var specialFirst: Set<Unicode.Scalar> = []
        var longestSpecial = 0

        init(vocabulary: [String], prefix: String, specials: [String: Int]) {
            words.reserveCapacity(vocabulary.count)
            for (id, token) in vocabulary.enumerated() {
                if words[token] == nil { words[token] = id }
                if !prefix.isEmpty, token.hasPrefix(prefix) {
                    let rest = String(token.dropFirst(prefix.count))
                    if continuations[rest] == nil { continuations[rest] = id }
                }
            }
            if prefix.isEmpty { continuations = words }
            for (token, id) in specials where !token.isEmpty {
                let s = Array(token.unicodeScalars)
                self.specials[s] = id
                if let f = s.first { specialFirst.insert(f) }
                longestSpecial = max(longestSpecial, s.count)
            }
        }

        /// The longest special token starting at `i`, with its length.
        func special(at i: Int, in s: [Unicode.Scalar]) -> (length: Int, id: Int)? {
            guard specialFirst.contains(s[i]) else { return nil }
            for length in stride(from: min(longestSpecial, s.count - i), through: 1, by: -1) {
                if let id = specials[Array(s[i..<(i + length)])] { return (length, id) }
            }
            return nil
        }
    }
}
