import Foundation
import MLTool
import MLToolTestSupport
import Testing
@testable import MLToolCLI

/// The short-text rule (`TextClassifierParameters.shortTexts`): which documents get character n-grams and min
/// count 1, and that those features are what lets a model read words it never saw whole.
@Suite struct ShortTextRuleTests {
    /// Three topics named by word stems; a line is one stem with a suffix and a little shared filler, like a package
    /// synopsis ("audiokit library for the desktop"). The test lines use suffixes the training lines never have, so
    /// their topic words are unseen as words: only the pieces they share with the training words can tell the topic.
    static let stems: [(label: String, stems: [String])] = [
        ("sound", ["audio", "music", "sound", "synth"]),
        ("network", ["network", "socket", "proxy", "router"]),
        ("graphics", ["image", "photo", "pixel", "bitmap"]),
    ]
    static let fillers = ["library for the desktop", "command line tool", "daemon and utilities", "shared files",
                          "development headers", "plugin for the desktop"]

    static func lines(suffixes: [String]) -> [(text: String, label: String)] {
        var out: [(text: String, label: String)] = []
        for (t, topic) in stems.enumerated() {
            for (s, stem) in topic.stems.enumerated() {
                for (k, suffix) in suffixes.enumerated() {
                    out.append(("\(stem)\(suffix) \(fillers[(t + s + k) % fillers.count])", topic.label))
                }
            }
        }
        return out
    }

    static let train = lines(suffixes: ["", "kit", "lib", "tool", "d", "s"])
    static let test = lines(suffixes: ["ctl", "er", "mgr"])

    func fit(_ rule: TextClassifierParameters.ShortTextRule, train: [(text: String, label: String)] = Self.train,
             notes: Notes? = nil) throws -> TrainingResult {
        var p = TextClassifierParameters()
        p.shortTexts = rule
        p.validation = .none
        return try TextClassifierTrainer(data: .labeledTexts(train), testData: .labeledTexts(Self.test), parameters: p)
            .train(progress: { if case .note(let s) = $0 { notes?.append(s) } })
    }

    final class Notes: @unchecked Sendable {
        var all: [String] = []
        func append(_ s: String) { all.append(s) }
    }

    @Test func autoKeepsCharacterNgramsTheCallerSet() {
        var p = TextClassifierParameters()
        p.charNgrams = [1, 4]
        let kept = p.resolvingShortTexts(Self.train.map(\.text))
        #expect(!kept.short && kept.parameters.charNgrams == [1, 4] && kept.parameters.minCount == p.minCount)
        p.charNgrams = nil
        let applied = p.resolvingShortTexts(Self.train.map(\.text))
        #expect(applied.short && applied.parameters.charNgrams == p.shortTextCharNgrams
                && applied.parameters.minCount == p.shortTextMinCount)
    }

    @Test func medianWordCountSplitsOnWhitespace() {
        #expect(TextClassifierParameters.medianWordCount(["a b", "  a  b c ", "", "x\ty\nz w"]) == 3)
        #expect(TextClassifierParameters.medianWordCount(["one"]) == 1)
        #expect(TextClassifierParameters.medianWordCount([]) == 0)
    }

    @Test func shortLinesGetCharacterNgramsAndMinCountOne() throws {
        let notes = Notes()
        let r = try fit(.auto, notes: notes)
        let text = try #require(r.model.metadata.text)
        let p = TextClassifierParameters()
        #expect(text.charNgrams == p.shortTextCharNgrams)
        #expect(text.minCount == p.shortTextMinCount)
        #expect(notes.all.contains { $0.hasPrefix("short texts (median ") }, "\(notes.all)")
        // The recorded command reproduces the training: auto is the default, so no feature flag is recorded.
        #expect(r.model.metadata.provenance.command?.contains("--char-ngrams") == false)
    }

    @Test func shortTextFeaturesReadUnseenWordForms() throws {
        let short = try #require(try fit(.auto).metrics["holdout.accuracy"])
        let words = try #require(try fit(.never).metrics["holdout.accuracy"])
        // Every test line's topic word is unseen as a word: word features see only the filler, shared by all topics.
        #expect(short >= 0.9, "short-text features: holdout \(short)")
        #expect(words <= 0.6, "word features: holdout \(words)")
    }

    /// With a validation split, `.auto` trains both feature sets on short texts and keeps the one the validation
    /// split scores higher (the short-text features on a tie): the same features and weights as the winner's own
    /// run, and a note naming both accuracies. (`bench/short_texts.py` measures the choice on real data.)
    @Test func validationSplitChoosesTheFeatureSet() throws {
        func fit(_ rule: TextClassifierParameters.ShortTextRule, notes: Notes? = nil) throws -> TrainingResult {
            var p = TextClassifierParameters()
            p.shortTexts = rule
            p.validation = .fraction(0.25)
            return try TextClassifierTrainer(data: .labeledTexts(Self.train), testData: .labeledTexts(Self.test), parameters: p)
                .train(progress: { if case .note(let s) = $0 { notes?.append(s) } })
        }
        let notes = Notes()
        let auto = try fit(.auto, notes: notes), short = try fit(.always), words = try fit(.never)
        let vs = try #require(short.metrics["validation.accuracy"]), vw = try #require(words.metrics["validation.accuracy"])
        let winner = vw > vs ? words : short
        let config = try #require(auto.model.metadata.text)
        #expect(config.charNgrams == winner.model.metadata.text?.charNgrams && config.minCount == winner.model.metadata.text?.minCount)
        #expect(try auto.model.tensor(named: config.weightsTensor)?.floats() == winner.model.tensor(named: config.weightsTensor)?.floats())
        #expect(auto.metrics["validation.accuracy"] == max(vs, vw))
        let note = try #require(notes.all.first { $0.hasPrefix("short texts (median ") })
        #expect(note.contains("chosen on the validation split (accuracy \(String(format: "%.4f", max(vs, vw)))"), "\(note)")
        #expect(note.contains(String(format: "%.4f", min(vs, vw))), "\(note)")
    }

    @Test func longDocumentsKeepWordFeatures() throws {
        // The same lines with a long shared body: the median document has far more than shortTextMedianWords words.
        let body = Array(repeating: "this package is part of a larger suite and is installed by default", count: 4)
            .joined(separator: " ")
        let long = Self.train.map { (text: "\($0.text). \(body)", label: $0.label) }
        let notes = Notes()
        let r = try fit(.auto, train: long, notes: notes)
        let text = try #require(r.model.metadata.text)
        #expect(text.charNgrams == nil)
        #expect(text.minCount == TextClassifierParameters().minCount)
        #expect(!notes.all.contains { $0.hasPrefix("short texts") })
        // The rule can be forced either way.
        #expect(try fit(.always, train: long).model.metadata.text?.charNgrams == TextClassifierParameters().shortTextCharNgrams)
        #expect(try fit(.never).model.metadata.text?.charNgrams == nil)
    }

    @Test func explicitFeatureFlagsTurnTheRuleOff() throws {
        let s = try Scratch(); defer { s.remove() }
        var csv = "text,label\n"
        for (text, label) in Self.train { csv += "\(text),\(label)\n" }
        try csv.write(toFile: s.path + "/lines.csv", atomically: true, encoding: .utf8)
        func trained(_ name: String, _ flags: [String]) throws -> TextConfig? {
            let out = s.path + "/\(name).bin"
            #expect(CLI.run(arguments: ["train", s.path + "/lines.csv", "-o", out, "--quiet"] + flags) == .ok)
            return try ModelFile.read(path: out).metadata.text
        }
        #expect(try trained("auto", [])?.charNgrams == [3, 5])
        let off = try trained("off", ["--min-count", "2"])
        #expect(off?.charNgrams == nil && off?.minCount == 2)
        let own = try trained("own", ["--char-ngrams", "2-4"])
        #expect(own?.charNgrams == [2, 4] && own?.minCount == 2)
        // The recorded command keeps the rule off when it is run again.
        let m = try ModelFile.read(path: s.path + "/off.bin")
        #expect(m.metadata.provenance.command?.hasSuffix("--min-count 2") == true, "\(m.metadata.provenance.command ?? "")")
    }
}
