import Foundation
import MLToolCore
import MLToolData
import MLToolNL

/// What a `TextTagger` tags (NaturalLanguage's `NLTagScheme`).
public enum TagScheme: String, Sendable, CaseIterable {
    /// Word classes as `NLTag` names (Noun, Verb, Adjective, …, SentenceTerminator, OtherPunctuation), from the
    /// universal part of speech of `models/pos-en.bin` (English).
    case lexicalClass
    /// The universal part-of-speech tag itself (NOUN, PROPN, AUX, …): what `lexicalClass` is made from.
    case universalPOS
    /// PersonalName, PlaceName, OrganizationName, else OtherWord (`NLTag` names), from `models/ner-en.bin` (English).
    case nameType
    /// The BCP 47 code of each sentence's language (`models/language-id.bin`; nil where it has none).
    case language
    /// Word, Punctuation or Whitespace.
    case tokenType
}

/// The pieces a `TextTagger` enumerates (`NLTokenUnit`).
public enum TagUnit: Sendable {
    case word, sentence
}

/// `NLTagger.Options`: ranges left out, names joined.
public struct TaggerOptions: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let omitWhitespace = TaggerOptions(rawValue: 1)
    public static let omitPunctuation = TaggerOptions(rawValue: 2)
    /// A name of several words is one range (with `nameType`).
    public static let joinNames = TaggerOptions(rawValue: 4)
}

/// Tags the words and sentences of a string with the built-in taggers, as NaturalLanguage's `NLTagger` does:
///
///     var tagger = try TextTagger(tagSchemes: [.lexicalClass, .nameType])
///     tagger.string = "Tim Cook visited Paris."
///     tagger.enumerateTags(in: tagger.string.startIndex..<tagger.string.endIndex, unit: .word,
///                          scheme: .nameType, options: [.omitWhitespace, .joinNames]) { tag, range in
///         print(tagger.string[range], tag ?? "-")       // "Tim Cook PersonalName", "visited OtherWord", …
///         return true
///     }
///
/// Ranges are in the original string; whitespace between tokens is a range of its own (tag "Whitespace" for the word
/// schemes) unless `.omitWhitespace`. The models are found as `BundledModel` says (`make models` builds them).
public struct TextTagger: Sendable {
    public let tagSchemes: [TagScheme]
    /// The text tagged.
    public var string = ""
    let partOfSpeech: WordTagger?
    let names: WordTagger?
    let languages: LanguageRecognizer?
    /// The tokenizer of the tagger models (the part-of-speech one's first), else the default rules.
    let tokenizer: WordTokenizer?

    /// The bundled models the schemes need (a missing one is an error naming where it was looked for).
    public init(tagSchemes: [TagScheme]) throws {
        let needs = Set(tagSchemes)
        try self.init(tagSchemes: tagSchemes,
                      partOfSpeech: needs.contains(.lexicalClass) || needs.contains(.universalPOS)
                          ? Self.bundled(.partOfSpeechTagger) : nil,
                      names: needs.contains(.nameType) ? Self.bundled(.nameTagger) : nil,
                      languages: needs.contains(.language) ? LanguageRecognizer() : nil)
    }

    /// Taggers of your own: a part-of-speech tagger whose tags are universal POS, a name tagger whose tags are BIO
    /// or BIOES with PER, LOC and ORG types, a language recognizer; each scheme needs its model.
    public init(tagSchemes: [TagScheme], partOfSpeech: WordTagger?, names: WordTagger?,
                languages: LanguageRecognizer?) throws {
        for scheme in tagSchemes {
            let missing = switch scheme {
            case .lexicalClass, .universalPOS: partOfSpeech == nil
            case .nameType: names == nil
            case .language: languages == nil
            case .tokenType: false
            }
            if missing { throw PipelineError.invalidParameter(name: "tagSchemes", reason: "no model given for \(scheme)") }
        }
        self.tagSchemes = tagSchemes
        self.partOfSpeech = partOfSpeech; self.names = names; self.languages = languages
        tokenizer = partOfSpeech?.tokenizer ?? names?.tokenizer ?? (try? WordTokenizer(config: WordTokenizerConfig()))
    }

    static func bundled(_ model: BundledModel) throws -> WordTagger {
        guard let path = model.locate() else {
            throw PipelineError.missingInput(
                file: "models/" + model.fileName,
                reason: "no tagger found (looked in: \(model.candidates(explicit: nil).joined(separator: ", "))).\n"
                    + "Build it with `make models` in the mltool source tree, or set \(model.environmentVariable).")
        }
        return try WordTagger(model: try ModelLoader.load(path), file: path)
    }

    /// Calls `block` with each unit's tag (nil: none) and range in `range` of `string`, in order, until it returns
    /// false (`NLTagger.enumerateTags(in:unit:scheme:options:using:)`).
    public func enumerateTags(in range: Range<String.Index>, unit: TagUnit, scheme: TagScheme,
                              options: TaggerOptions = [], using block: (String?, Range<String.Index>) -> Bool) {
        for (tag, r) in tags(in: range, unit: unit, scheme: scheme, options: options) where !block(tag, r) { return }
    }

    /// Every unit's tag and range in `range` of `string`.
    public func tags(in range: Range<String.Index>, unit: TagUnit, scheme: TagScheme,
                     options: TaggerOptions = []) -> [(tag: String?, range: Range<String.Index>)] {
        let text = String(string[range])
        let base = string.utf8.distance(from: string.startIndex, to: range.lowerBound)
        let pieces: [(tag: String?, utf8: Range<Int>)] = switch unit {
        case .sentence: sentencePieces(text, scheme: scheme)
        case .word: wordPieces(text, scheme: scheme, options: options)
        }
        return pieces.map { piece in
            let lo = string.utf8.index(string.startIndex, offsetBy: base + piece.utf8.lowerBound)
            let hi = string.utf8.index(string.startIndex, offsetBy: base + piece.utf8.upperBound)
            return (piece.tag, lo..<hi)
        }
    }
}
