import Foundation
import MLToolCore
import Testing
@testable import MLToolData

/// `TextTokenizer.normalize` maps mostly-ASCII text piece by piece; it must equal NFKC then `lowercased()` of the
/// whole string (`normalizeReference`).
@Suite struct TextNormalizationTests {
    static let tricky = [
        "plain ASCII, UPPER and lower", "Café naïve", "e\u{301}t\u{E9} e\u{308}\u{301}", "ﬁle ＡＢＣ ①②", "ΑΣ ΟΔΥΣΣΕΥΣ.",
        "İstanbul ß Å \u{212B}", "한국어 \u{1100}\u{1161}\u{11A8} x", "ｶﾞｷﾞ ﾊﾟ", "क\u{93C} ख", "’quoted’ don’t",
        "\u{301}leading mark", "A\u{327}\u{301}B", "trailing é", "ǅ ǈ Ǌ", "x\u{1E9B}\u{323}y", "",
    ]

    @Test(arguments: [(true, true), (true, false), (false, true)])
    func piecewiseEqualsWholeString(nfkc: Bool, lowercase: Bool) {
        var config = TextConfig()
        config.normalization = nfkc ? "nfkc" : "none"
        config.lowercase = lowercase
        // Random strings over ASCII letters, spaces and characters that compose, decompose or change case.
        let alphabet = ["a", "E", "Z", " ", ".", "'", "e", "\u{301}", "\u{308}", "\u{327}", "\u{323}", "é", "ﬁ", "Ａ",
                        "Σ", "İ", "ß", "\u{212B}", "\u{1100}", "\u{1161}", "\u{11A8}", "한", "ｶ", "ﾞ", "क", "\u{93C}",
                        "’", "ǅ", "①", "\u{1E9B}"]
        var state: UInt64 = 12345
        var samples = Self.tricky
        for _ in 0..<2000 {
            var s = ""
            state = state &* 6364136223846793005 &+ 1442695040888963407
            for _ in 0..<(Int(state >> 60) + 1) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                s += alphabet[Int(state >> 33) % alphabet.count]
            }
            samples.append(s)
        }
        for s in samples {
            let fast = TextTokenizer.normalize(s, config: config)
            let reference = TextTokenizer.normalizeReference(s, nfkc: nfkc, lowercase: lowercase)
            #expect(Array(fast.unicodeScalars) == Array(reference.unicodeScalars),
                    "\(s.unicodeScalars.map { String($0.value, radix: 16) }): \(fast) vs \(reference)")
        }
    }

    @Test func asciiWordTestMatchesGeneralCategories() {
        for v in UInt32(0)..<0x80 {
            let s = Unicode.Scalar(v)!
            #expect(TextTokenizer.isWordScalar(s) == TextTokenizer.isWordScalarReference(s), "U+\(String(v, radix: 16))")
        }
        #expect(TextTokenizer.isWordScalar("é") && TextTokenizer.isWordScalar("\u{301}") && !TextTokenizer.isWordScalar("’"))
    }
}
