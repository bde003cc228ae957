import Foundation
import MLToolCore
import MLToolData

/// Identifies the language of a text, like NaturalLanguage's `NLLanguageRecognizer`: the dominant language, or the
/// languages with their probabilities. The model is a text classifier whose labels are BCP 47 language codes
/// (`models/language-id.bin`, which `make models` trains on pinned Debian text, datasets/language-id: hashed
/// character 1–4-grams and words, max-entropy); any text classifier trained the same way on other languages works.
///
///     let recognizer = try LanguageRecognizer()              // the bundled models/language-id.bin
///     recognizer.dominantLanguage(for: "Bibliothek zum Lesen von JSON-Dateien")   // "de"
///     recognizer.languageHypotheses(for: "Biblioteca para leer JSON", withMaximum: 2)   // ["es": 0.97, "pt": 0.02]
///
/// A text without language signal has no language (nil and no hypotheses; NaturalLanguage's `und`): one with no
/// letter outside URLs, e-mail addresses, paths, numbers, options and identifiers, one that is mostly code
/// (`hasLanguageSignal`), and one whose most probable language scores below `minimumConfidence`.
public struct LanguageRecognizer: Sendable {
    /// The default `minimumConfidence`, chosen on the validation split of datasets/language-id (never its test
    /// split): the highest multiple of 0.05 that refuses at most 1% of its texts (recipes/language_id_floor.py; the
    /// model of December 2026: 1% quantile of the top probability 0.307, 0.5% 0.214, 2% 0.432).
    public static let defaultMinimumConfidence = 0.30

    public let classifier: TextClassifier
    /// Below this probability of its most probable language (after constraints and hints) a text has no language.
    public var minimumConfidence = LanguageRecognizer.defaultMinimumConfidence
    /// Restricts the answers to these codes (nil: every language of the model); probabilities are renormalised over
    /// the ones allowed, and codes the model does not know are ignored (`NLLanguageRecognizer.languageConstraints`).
    public var languageConstraints: [String]?
    /// Prior weights by code (`NLLanguageRecognizer.languageHints`): each language's probability is multiplied by
    /// its hint (1 when it has none) and the result renormalised. A hint must be finite and ≥ 0.
    public var languageHints: [String: Double] = [:]

    /// The language codes the model knows, in its output order.
    public var languages: [String] { classifier.labels }

    /// The bundled language identifier (`BundledModel.languageIdentifier`: $MLTOOL_LANGUAGE_MODEL, models/,
    /// ../share/mltool/ beside the binary, …).
    public init() throws {
        let model = BundledModel.languageIdentifier
        let list = model.candidates(explicit: nil)
        guard let path = model.locate() else {
            throw PipelineError.missingInput(
                file: "models/" + model.fileName,
                reason: "no language identifier found (looked in: \(list.joined(separator: ", "))).\n"
                    + "Build it with `make models` in the mltool source tree, or set \(model.environmentVariable) to a text "
                    + "classifier whose labels are language codes.")
        }
        try self.init(contentsOf: URL(fileURLWithPath: path))
    }

    /// The language identifier at `url` (any text classifier; its labels are taken as language codes).
    public init(contentsOf url: URL) throws {
        classifier = try TextClassifier(contentsOf: url)
    }

    /// A recognizer over a text classifier already loaded.
    public init(classifier: TextClassifier) {
        self.classifier = classifier
    }

    /// The most probable language of `text`, or nil when it has none (`NLLanguageRecognizer.dominantLanguage`).
    public func dominantLanguage(for text: String) throws -> String? {
        try ranked([text], maximum: 1)[0].first?.language
    }

    /// At most `maximum` languages of `text` with their probabilities
    /// (`NLLanguageRecognizer.languageHypotheses(withMaximum:)`).
    public func languageHypotheses(for text: String, withMaximum maximum: Int) throws -> [String: Double] {
        var out = [String: Double]()
        for h in try ranked([text], maximum: maximum)[0] { out[h.language] = h.probability }
        return out
    }

    /// For each text, at most `maximum` languages, most probable first (ties by code); one vectorizer pass and one
    /// sparse product for the whole batch.
    public func ranked(_ texts: [String], maximum: Int = .max) throws -> [[(language: String, probability: Double)]] {
        for (code, hint) in languageHints where !(hint.isFinite && hint >= 0) {
            throw PipelineError.invalidParameter(name: "languageHints[\(code)]", reason: "must be finite and ≥ 0, got \(hint)")
        }
        guard !texts.isEmpty else { return [] }
        let allowed = languageConstraints.map(Set.init)
        let codes = languages, k = codes.count
        let weight = codes.map { code -> Double in
            if let allowed, !allowed.contains(code) { return 0 }
            return languageHints[code] ?? 1
        }
        let p = try classifier.probabilities(texts)
        return texts.indices.map { i -> [(language: String, probability: Double)] in
            guard maximum > 0, Self.hasLanguageSignal(texts[i]) else { return [] }
            var scores = (0..<k).map { Double(p[i &* k &+ $0]) * weight[$0] }
            let total = scores.reduce(0, +)
            guard total > 0, total.isFinite else { return [] }
            for j in 0..<k { scores[j] /= total }
            let order = (0..<k).filter { scores[$0] > 0 }
                .sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && codes[$0] < codes[$1]) }
            guard let top = order.first, scores[top] >= minimumConfidence else { return [] }
            return order.prefix(maximum).map { (codes[$0], scores[$0]) }
        }
    }

    /// Whether `text` has language signal: some whitespace-separated token with a letter that is not code, and at
    /// most a third of the tokens that are words or code are code (`isCode`: URLs, e-mail addresses, paths,
    /// options, identifiers, operators). Numbers and punctuation count for neither.
    public static func hasLanguageSignal(_ text: String) -> Bool {
        var words = 0, code = 0
        for token in text.split(whereSeparator: \.isWhitespace) {
            if isCode(token) {
                code += 1
            } else if token.unicodeScalars.contains(where: { $0.properties.isAlphabetic }) {
                words += 1
            }
        }
        return words > 0 && code * 3 <= words + code
    }

    /// A token no language writes: with one of `/ \\ @ _ = < > { } [ ] | ; $ # * + ^ ~` and the backquote, `://`,
    /// an option's leading `-` (`-l`, `--all`), a bracket right after a letter as in `f(x)`, or ASCII digits and
    /// letters together (`x86`, `utf8`).
    static func isCode(_ token: Substring) -> Bool {
        if token.contains("://") { return true }
        let scalars = Array(token.unicodeScalars)
        if scalars.first == "-", let next = scalars.dropFirst().first(where: { $0 != "-" }), next.properties.isAlphabetic {
            return true
        }
        var previousIsLetter = false, digit = false, letter = false
        for scalar in scalars {
            switch scalar {
            case "/", "\\", "@", "_", "=", "<", ">", "{", "}", "[", "]", "|", ";", "$", "#", "*", "+", "^", "~", "`":
                return true
            case "(" where previousIsLetter:
                return true
            default:
                break
            }
            previousIsLetter = scalar.properties.isAlphabetic
            digit = digit || ("0"..."9").contains(scalar)
            letter = letter || (scalar.isASCII && previousIsLetter)
        }
        return digit && letter
    }
}
