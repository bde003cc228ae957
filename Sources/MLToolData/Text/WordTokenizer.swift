import MLToolCore

/// Splits raw text into word tokens with their places in the text, for taggers (rule set "mltool-words-1"):
///
/// 1. Chunks are maximal runs of non-white-space characters.
/// 2. A chunk whose lower-case form is in `keep` is one token ("e.g.", "mr.", ":)"); so is a web or mail address
///    (it holds "://", starts with "www." or "mailto:", or has "@" between two letters or digits) once the
///    punctuation around it is peeled off (rule 3).
/// 3. Punctuation and symbols (Unicode P* and S*) are peeled off both ends, a run of one repeated character as one
///    token ("...", "!!"); a final "." stays on a single letter ("J.") and on a word with an inner "." ("U.S.").
///    A leading apostrophe stays when the rest is a clitic or a kept word ("'s"), or a digit follows ("'90s").
/// 4. Inside, the word is split before and after punctuation, except: ".", ",", ":", "/", "-" between two digits
///    ("3.5", "10:30", "713-853"); "." and apostrophes between letters or digits ("file.txt", "don't"); "-" between
///    letters or digits unless `splitHyphens` (and then still after one of `hyphenPrefixes`: "anti-war"); and "&",
///    "_", "@", "+", "=", "#", "*" between letters or digits.
/// 5. Each piece whose lower-case form is in `splits` is cut into pieces of those lengths ("cannot" → "can" "not");
///    otherwise a piece ending in one of `clitics` (longest first) loses it as a separate token ("don't" → "do"
///    "n't", "Bob's" → "Bob" "'s"), unless the piece is in `keep`.
///
/// The lists are learned from training data (`learn(from:)`) and stored with the model.
public struct WordTokenizer: Sendable {
    public let config: WordTokenizerConfig
    private let keep: Set<String>
    private let hyphenPrefixes: Set<String>
    private let clitics: [[Unicode.Scalar]]
    private let cliticSet: Set<String>

    public static let ruleSet = "mltool-words-1"

    public init(config: WordTokenizerConfig) throws {
        guard config.rules == Self.ruleSet else {
            throw TextError.invalidConfig(field: "tokenizer rules", value: config.rules, expected: Self.ruleSet)
        }
        for (surface, lengths) in config.splits {
            guard lengths.count >= 2, lengths.allSatisfy({ $0 >= 1 }),
                  lengths.reduce(0, +) == surface.unicodeScalars.count else {
                throw TextError.invalidConfig(field: "tokenizer splits['\(surface)']", value: "\(lengths)",
                                              expected: "2 or more lengths ≥ 1 adding up to \(surface.unicodeScalars.count)")
            }
        }
        self.config = config
        keep = Set(config.keep)
        hyphenPrefixes = Set(config.hyphenPrefixes)
        clitics = config.clitics.map { Array($0.unicodeScalars) }.sorted { $0.count > $1.count }
        cliticSet = Set(config.clitics)
    }

    /// The tokens of `text`, in order.
    public func tokenize(_ text: String) -> [TokenSpan] {
        let scalars = Array(text.unicodeScalars)
        var utf8 = [Int](repeating: 0, count: scalars.count + 1)
        for (i, s) in scalars.enumerated() { utf8[i + 1] = utf8[i] + UTF8.width(s) }
        var out: [TokenSpan] = []
        var i = 0
        while i < scalars.count {
            if scalars[i].properties.isWhitespace { i += 1; continue }
            var j = i
            while j < scalars.count && !scalars[j].properties.isWhitespace { j += 1 }
            chunk(scalars, i, j) { a, b in
                var s = String.UnicodeScalarView()
                s.append(contentsOf: scalars[a..<b])
                out.append(TokenSpan(text: String(s), utf8: utf8[a]..<utf8[b], scalars: a..<b))
            }
            i = j
        }
        return out
    }

    /// The tokens of `text` as strings.
    public func words(_ text: String) -> [String] { tokenize(text).map(\.text) }

    static func isPunctuation(_ s: Unicode.Scalar) -> Bool {
        if s.isASCII {
            let v = s.value
            return (v >= 0x21 && v <= 0x2F) || (v >= 0x3A && v <= 0x40) || (v >= 0x5B && v <= 0x60) || (v >= 0x7B && v <= 0x7E)
        }
        switch s.properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
             .finalPunctuation, .otherPunctuation, .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
            return true
        default:
            return false
        }
    }

    static func isAlphanumeric(_ s: Unicode.Scalar) -> Bool {
        if s.isASCII {
            let v = s.value | 0x20
            return (v >= 0x61 && v <= 0x7A) || (s.value >= 0x30 && s.value <= 0x39)
        }
        return s.properties.isAlphabetic || s.properties.numericType != nil
    }

    static func isDigit(_ s: Unicode.Scalar) -> Bool { s.value >= 0x30 && s.value <= 0x39 }
    static func isApostrophe(_ s: Unicode.Scalar) -> Bool { s == "'" || s == "\u{2019}" }

    static func lower(_ s: ArraySlice<Unicode.Scalar>) -> String {
        var v = String.UnicodeScalarView()
        v.append(contentsOf: s)
        return String(v).lowercased()
    }

    /// Emits the tokens of the chunk `s[a..<b]` (no white space) as scalar ranges.
    private func chunk(_ s: [Unicode.Scalar], _ a0: Int, _ b0: Int, _ emit: (Int, Int) -> Void) {
        var a = a0, b = b0
        if keep.contains(Self.lower(s[a..<b])) { emit(a, b); return }
        var leadingApostrophe = false   // an apostrophe before a digit that rule 3 leaves on the word ("'90s")
        // A run of one repeated punctuation character starting at `i` (forward) or ending at `i` (backward).
        func runForward(_ i: Int) -> Int { var j = i + 1; while j < b && s[j] == s[i] { j += 1 }; return j }
        func runBackward(_ i: Int) -> Int { var j = i - 1; while j > a && s[j - 1] == s[i - 1] { j -= 1 }; return j }
        while a < b && Self.isPunctuation(s[a]) {
            if keep.contains(Self.lower(s[a..<b])) { break }
            if Self.isApostrophe(s[a]), a + 1 < b, Self.isAlphanumeric(s[a + 1]) {
                if Self.isDigit(s[a + 1]) { leadingApostrophe = true; break }
                let rest = Self.lower(s[a..<b])
                if cliticSet.contains(rest) || keep.contains(rest) { break }
            }
            let end = runForward(a)
            emit(a, end)
            a = end
        }
        var trailing: [(Int, Int)] = []
        var finalPeriod = false   // a final "." that rule 3 leaves on the word
        while b > a && Self.isPunctuation(s[b - 1]) {
            if keep.contains(Self.lower(s[a..<b])) { break }
            if s[b - 1] == ".", b - 1 > a {
                let core = s[a..<(b - 1)]
                let singleLetter = core.count == 1 && s[a].properties.isAlphabetic
                let innerPeriod = core.dropFirst().dropLast().contains(".") && core.allSatisfy { $0 == "." || Self.isAlphanumeric($0) }
                if singleLetter || innerPeriod { finalPeriod = true; break }
            }
            let start = runBackward(b)
            trailing.append((start, b))
            b = start
        }
        let core = Self.lower(s[a..<b])
        if keep.contains(core) || cliticSet.contains(core) || Self.isAddress(s[a..<b]) {
            if a < b { emit(a, b) }
            for (x, y) in trailing.reversed() { emit(x, y) }
            return
        }
        // Inside: split at punctuation that is not between two word characters of the kinds the rules allow.
        var pieceStart = a, i = a
        while i < b {
            let c = s[i]
            let protected = (finalPeriod && i == b - 1) || (leadingApostrophe && i == a)
            if Self.isPunctuation(c) && !protected && !innerKept(s, i, a, b) {
                if pieceStart < i { piece(s, pieceStart, i, emit) }
                let end = min(runForward(i), b)
                emit(i, end)
                i = end
                pieceStart = i
                continue
            }
            i += 1
        }
        if pieceStart < b { piece(s, pieceStart, b, emit) }
        for (x, y) in trailing.reversed() { emit(x, y) }
    }

    /// Whether punctuation `s[i]` stays inside the word `s[a..<b]` (rule 4).
    private func innerKept(_ s: [Unicode.Scalar], _ i: Int, _ a: Int, _ b: Int) -> Bool {
        guard i > a, i + 1 < b else { return false }
        let l = s[i - 1], r = s[i + 1], c = s[i]
        if Self.isDigit(l) && Self.isDigit(r) && (c == "." || c == "," || c == ":" || c == "/" || c == "-") { return true }
        guard Self.isAlphanumeric(l) && Self.isAlphanumeric(r) else { return false }
        switch c {
        case ".", "'", "\u{2019}", "&", "_", "@", "+", "=", "#", "*": return true
        case "-":
            guard config.splitHyphens else { return true }
            var start = i - 1
            while start > a && Self.isAlphanumeric(s[start - 1]) { start -= 1 }
            return hyphenPrefixes.contains(Self.lower(s[start..<i]))
        default: return false
        }
    }

    /// A web or mail address (rule 2).
    static func isAddress(_ w: ArraySlice<Unicode.Scalar>) -> Bool {
        let text = String(String.UnicodeScalarView(w)).lowercased()
        if text.contains("://") || text.hasPrefix("www.") || text.hasPrefix("mailto:") { return true }
        guard let at = w.firstIndex(of: "@"), at > w.startIndex, at + 1 < w.endIndex else { return false }
        return isAlphanumeric(w[at - 1]) && isAlphanumeric(w[at + 1])
    }

    /// Emits one piece of a word, cut by `splits` or a clitic (rule 5).
    private func piece(_ s: [Unicode.Scalar], _ a: Int, _ b: Int, _ emit: (Int, Int) -> Void) {
        let lower = Self.lower(s[a..<b])
        if keep.contains(lower) { emit(a, b); return }
        if let lengths = config.splits[lower] {
            var x = a
            for n in lengths { emit(x, x + n); x += n }
            return
        }
        let n = b - a
        for c in clitics where c.count < n {
            var matches = true
            for k in 0..<c.count {
                let x = s[b - c.count + k], y = c[k]
                let same = x == y || (Self.isApostrophe(x) && Self.isApostrophe(y))
                    || (x.properties.lowercaseMapping == String(y))
                if !same { matches = false; break }
            }
            if matches {
                emit(a, b - c.count)
                emit(b - c.count, b)
                return
            }
        }
        emit(a, b)
    }
}

/// One token of raw text: its text and where it is, as UTF-8 byte offsets and as Unicode scalar (code point)
/// offsets into the original string.
public struct TokenSpan: Sendable, Equatable {
    public var text: String
    public var utf8: Range<Int>
    public var scalars: Range<Int>

    public init(text: String, utf8: Range<Int>, scalars: Range<Int>) {
        self.text = text; self.utf8 = utf8; self.scalars = scalars
    }
}
