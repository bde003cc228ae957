import Foundation
import MLTool
import MLToolData
import MLToolTestSupport
import Testing

/// The bundled language identifier (models/language-id.bin, which `make models` trains on Debian's translated
/// package descriptions, datasets/debian-translations) through the library (`LanguageRecognizer`, found with no
/// path as a user's program finds it) and the command line, on the held-out packages.
@Suite struct LanguageIDTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let model = root + "/models/language-id.bin"
    static let testSet = root + "/datasets/debian-translations/test.csv"
    static var available: Bool {
        FileManager.default.fileExists(atPath: model) && FileManager.default.fileExists(atPath: testSet)
    }
    static let why = "models/language-id.bin or datasets/debian-translations/test.csv is missing (make models)"

    /// Held-out texts of one language (from the test split), longest first.
    static func texts(_ language: String) throws -> [String] {
        try TextDataset.load(testSet).items.filter { $0.label == language }.map(\.text)
            .sorted { $0.unicodeScalars.count > $1.unicodeScalars.count }
    }

    @Test func accurateOnHeldOutPackagesAtEveryLength() throws {
        guard Self.available else { return Oracles.missing(Self.why) }
        let recognizer = try LanguageRecognizer()   // the default lookup: this tree's models/
        #expect(recognizer.languages.count >= 20)
        #expect(recognizer.languages.contains("zh-Hans") && recognizer.languages.contains("uk"))

        let outcome = try Evaluator(modelPaths: [Self.model], dataPath: Self.testSet).run()
        let report = outcome.reports[0]
        #expect(report.count > 15_000)
        #expect(report.accuracy >= 0.97, "accuracy \(report.accuracy)")
        let buckets = try #require(report.byLength)
        #expect(buckets.map(\.maxCharacters) == [20, 50, nil])
        #expect(buckets.reduce(0) { $0 + $1.count } == report.count)
        #expect(buckets.allSatisfy { $0.count >= 1_000 }, "\(buckets)")
        #expect(buckets[0].accuracy >= 0.88 && buckets[1].accuracy >= 0.96 && buckets[2].accuracy >= 0.99, "\(buckets)")

        // The recognizer answers what the evaluation scored: the same argmax on every held-out text.
        let texts = try Evaluation.documents(outcome.items)
        let ranked = try recognizer.ranked(texts, maximum: 1)
        let labels = recognizer.languages, k = labels.count
        var same = 0, undetermined = 0
        for i in texts.indices {
            guard let top = ranked[i].first else { undetermined += 1; continue }
            let row = Array(outcome.probabilities[0][(i * k)..<((i + 1) * k)])
            if top.language == labels[Metrics.argmax(row)] { same += 1 }
        }
        #expect(same + undetermined == texts.count && undetermined <= texts.count / 1000, "\(undetermined) undetermined")
    }

    @Test func hypothesesConstraintsHintsAndTextsWithoutLetters() throws {
        guard Self.available else { return Oracles.missing(Self.why) }
        var recognizer = try LanguageRecognizer(contentsOf: URL(fileURLWithPath: Self.model))
        let slovak = try #require(try Self.texts("sk").first)
        #expect(try recognizer.dominantLanguage(for: slovak) == "sk")
        let three = try recognizer.languageHypotheses(for: slovak, withMaximum: 3)
        #expect(three.count == 3 && three["sk"] == three.values.max())
        #expect(three.values.reduce(0, +) <= 1 + 1e-9)
        let all = try recognizer.languageHypotheses(for: slovak, withMaximum: .max)
        #expect(abs(all.values.reduce(0, +) - 1) < 1e-6 && all.count <= recognizer.languages.count)

        // Constraints: only the languages allowed, renormalised over them; unknown codes are ignored.
        recognizer.languageConstraints = ["cs", "pl", "xx"]
        let constrained = try recognizer.languageHypotheses(for: slovak, withMaximum: .max)
        #expect(Set(constrained.keys).isSubset(of: ["cs", "pl"]) && !constrained.isEmpty)
        #expect(abs(constrained.values.reduce(0, +) - 1) < 1e-6)
        #expect(try recognizer.dominantLanguage(for: slovak) == "cs")
        recognizer.languageConstraints = ["xx"]
        #expect(try recognizer.dominantLanguage(for: slovak) == nil)

        // Hints multiply the probabilities: a zero hint rules a language out, a negative one is an error.
        recognizer.languageConstraints = nil
        recognizer.languageHints = ["sk": 0]
        let second = try #require(try recognizer.dominantLanguage(for: slovak))
        #expect(second != "sk")
        recognizer.languageHints = ["sk": -1]
        #expect(throws: PipelineError.self) { try recognizer.dominantLanguage(for: slovak) }
        recognizer.languageHints = [:]

        // No letters, no language.
        for text in ["", "   ", "12345 67.89", "!!! ??? --- ***"] {
            #expect(try recognizer.dominantLanguage(for: text) == nil, "\(text)")
            #expect(try recognizer.languageHypotheses(for: text, withMaximum: 5).isEmpty)
        }
    }

    @Test func commandLinePredictAndEval() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        guard Self.available else { return Oracles.missing(Self.why) }
        let recognizer = try LanguageRecognizer(contentsOf: URL(fileURLWithPath: Self.model))
        for language in ["de", "uk", "ja"] {
            let text = try #require(try Self.texts(language).first)
            let r = try Tool.run(["predict", Self.model, "--text", text, "--json", "--top", "1"])
            #expect(r.status == 0, "\(r.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let top = try #require((json["top"] as? [[String: Any]])?.first?["label"] as? String)
            let library = try recognizer.dominantLanguage(for: text)
            #expect(top == language && top == library)
        }
        let e = try Tool.run(["eval", Self.model, Self.testSet])
        #expect(e.status == 0, "\(e.stderr)")
        #expect(e.stdout.contains("length (characters)") && e.stdout.contains("≤ 20") && e.stdout.contains("> 50"),
                "\(e.stdout)")
    }
}
