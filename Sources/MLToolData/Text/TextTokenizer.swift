import Foundation
import MLToolCore

/// Turns raw text into the terms a text model counts, with no language-specific rules.
///
/// 1. Unicode NFKC (`precomposedStringWithCompatibilityMapping`) when `normalization` is "nfkc", then full Unicode
///    lower-casing when `lowercase` is set.
/// 2. Words are maximal runs of letters, combining marks and digits (Unicode general categories L*, M*, N*); an
///    apostrophe (' or ’, stored as ') between two such characters stays inside the word ("don't"). Everything
///    else separates words. Stop words are then dropped.
/// 3. Terms: word n-grams for n in `wordNgrams` joined by one space (as scikit-learn), then, when `charNgrams` is
///    set, character n-grams of each word padded with a space on both sides (scikit-learn's "char_wb"), prefixed
///    with "#" so they never collide with words (words cannot contain "#").
public struct TextTokenizer: Sendable {
    public let config: TextConfig
    private let stopWords: Set<String>

    public init(config: TextConfig) throws {
        try Self.validate(config)
        self.config = config
        self.stopWords = Set(config.stopWords.map { Self.normalize($0, config: config) })
    }

    /// Whether `word` (already normalised) is one of the stop words.
    func isStopWord(_ word: String) -> Bool { !stopWords.isEmpty && stopWords.contains(word) }

    /// The words of `text`, normalised, without stop words.
    public func words(_ text: String) -> [String] {
        let scalars = Array(Self.normalize(text, config: config).unicodeScalars)
        var words: [String] = []
        var current = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            let s = scalars[i]
            if Self.isWordScalar(s) {
                current.append(s)
            } else if Self.isApostrophe(s), !current.isEmpty, i + 1 < scalars.count, Self.isWordScalar(scalars[i + 1]) {
                current.append("'")
            } else if !current.isEmpty {
                words.append(String(current))
                current = String.UnicodeScalarView()
            }
            i += 1
        }
        if !current.isEmpty { words.append(String(current)) }
        return stopWords.isEmpty ? words : words.filter { !stopWords.contains($0) }
    }

    /// Every term of `text` in document order (repeats kept: they are the counts).
    public func terms(_ text: String) -> [String] {
        let words = words(text)
        var terms = wordNgrams(words)
        if let cn = config.charNgrams {
            for word in words { Self.appendCharNgrams(of: word, min: cn[0], max: cn[1], into: &terms) }
        }
        return terms
    }

    /// The word n-gram terms of `words` (the first part of `terms`).
    func wordNgrams(_ words: [String]) -> [String] {
        var terms: [String] = []
        let wn = config.wordNgrams
        for n in wn[0]...wn[1] where n <= words.count {
            for start in 0...(words.count - n) {
                terms.append(n == 1 ? words[start] : words[start..<(start + n)].joined(separator: " "))
            }
        }
        return terms
    }

    /// scikit-learn's `_char_wb_ngrams` on one word: grams of the space-padded word; a padded word shorter than n
    /// gives itself once and ends the word.
    static func appendCharNgrams(of word: String, min: Int, max: Int, into terms: inout [String]) {
        let padded = Array(" " + word + " ")
        for n in min...max {
            var offset = 0
            terms.append("#" + String(padded[offset..<Swift.min(offset + n, padded.count)]))
            while offset + n < padded.count {
                offset += 1
                terms.append("#" + String(padded[offset..<Swift.min(offset + n, padded.count)]))
            }
            if offset == 0 { break }
        }
    }

    static func normalize(_ text: String, config: TextConfig) -> String {
        let nfkc = config.normalization == "nfkc"
        guard nfkc || config.lowercase else { return text }
        var text = text
        return text.withUTF8 { normalizePieces($0, nfkc: nfkc, lowercase: config.lowercase) }
    }

    /// The whole-string mappings (`normalizeReference`) applied piece by piece, which is much cheaper on text that
    /// is mostly ASCII (Foundation's NFKC and `lowercased()` cost ~1,000 instructions per character once a string
    /// holds one non-ASCII character): ASCII bytes are copied (lower-cased byte by byte), and each run of non-ASCII
    /// characters is mapped together with the ASCII character before it (a combining mark may compose with it).
    /// The result is the same because an ASCII character is a normalization boundary (canonical combining class 0,
    /// NFKC quick check Yes, never the second character of a composition), and `lowercased()` maps scalar by scalar
    /// (no Final_Sigma context: "ΑΣ" → "ασ").
    static func normalizePieces(_ u: UnsafeBufferPointer<UInt8>, nfkc: Bool, lowercase: Bool) -> String {
        let n = u.count
        var out = [UInt8]()
        out.reserveCapacity(n)
        func appendASCII(_ r: Range<Int>) {
            for i in r {
                let b = u[i]
                out.append(lowercase && b >= 0x41 && b <= 0x5A ? b | 0x20 : b)
            }
        }
        var i = 0
        while i < n {
            var j = i
            while j < n && u[j] < 0x80 { j &+= 1 }
            guard j < n else { appendASCII(i..<n); break }
            let pieceStart = j > i ? j &- 1 : j
            appendASCII(i..<pieceStart)
            var k = j
            while k < n && u[k] >= 0x80 { k &+= 1 }
            // Both ends are ASCII bytes or the ends of the text: the piece is whole characters of valid UTF-8.
            let piece = String(decoding: UnsafeBufferPointer(rebasing: u[pieceStart..<k]), as: UTF8.self)
            out += normalizeReference(piece, nfkc: nfkc, lowercase: lowercase).utf8
            i = k
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// NFKC, then lower-casing, of the whole string: the definition `normalize` must match.
    static func normalizeReference(_ text: String, nfkc: Bool, lowercase: Bool) -> String {
        let n = nfkc ? text.precomposedStringWithCompatibilityMapping : text
        return lowercase ? n.lowercased() : n
    }

    static func isWordScalar(_ s: Unicode.Scalar) -> Bool {
        // ASCII: the letters and digits are exactly its L* and N* characters (and it has no M*).
        if s.isASCII {
            let v = s.value | 0x20
            return (v >= 0x61 && v <= 0x7A) || (s.value >= 0x30 && s.value <= 0x39)
        }
        return isWordScalarReference(s)
    }

    /// The general-category test `isWordScalar` shortcuts for ASCII.
    static func isWordScalarReference(_ s: Unicode.Scalar) -> Bool {
        switch s.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
             .nonspacingMark, .spacingMark, .enclosingMark,
             .decimalNumber, .letterNumber, .otherNumber:
            return true
        default:
            return false
        }
    }

    static func isApostrophe(_ s: Unicode.Scalar) -> Bool { s == "'" || s == "\u{2019}" }

    /// Throws unless every field of `config` is in its domain.
    public static func validate(_ c: TextConfig) throws {
        func range(_ r: [Int]?, _ field: String) throws {
            guard let r else { return }
            guard r.count == 2, r[0] >= 1, r[0] <= r[1], r[1] <= 32 else {
                throw TextError.invalidConfig(field: field, value: "\(r)", expected: "[min, max] with 1 ≤ min ≤ max ≤ 32")
            }
        }
        try range(c.wordNgrams, "wordNgrams")
        try range(c.charNgrams, "charNgrams")
        guard ["nfkc", "none"].contains(c.normalization) else {
            throw TextError.invalidConfig(field: "normalization", value: c.normalization, expected: "nfkc or none")
        }
        guard ["tfidf", "count", "binary"].contains(c.weighting) else {
            throw TextError.invalidConfig(field: "weighting", value: c.weighting, expected: "tfidf, count or binary")
        }
        guard c.minCount >= 1 else {
            throw TextError.invalidConfig(field: "minCount", value: "\(c.minCount)", expected: "≥ 1")
        }
        if let bits = c.hashBits, !(1...28).contains(bits) {
            throw TextError.invalidConfig(field: "hashBits", value: "\(bits)", expected: "1...28")
        }
    }
}
