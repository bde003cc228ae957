import Foundation
import MLTool
import MLToolTestSupport
import Testing
@testable import MLToolCLI

/// A tiny synthetic corpus: three topics with distinct vocabularies, eight documents each.
enum Corpus {
    static let topics: [(label: String, words: [String])] = [
        ("cooking", ["flour", "sugar", "oven", "bake", "bread", "butter", "recipe", "dough"]),
        ("football", ["goal", "match", "team", "striker", "referee", "league", "score", "pitch"]),
        ("weather", ["rain", "cloud", "storm", "forecast", "wind", "sunny", "snow", "humid"]),
    ]

    /// Document `i` of a topic: five of its words in a seeded order, plus shared filler.
    static func document(_ words: [String], _ i: Int) -> String {
        var rng = SplitMix64(seed: UInt64(i) &* 7919 &+ UInt64(words[0].utf8.count))
        let picked = (0..<5).map { _ in words[Int(rng.next() % UInt64(words.count))] }
        return "The " + picked.joined(separator: " and ") + " today, said the report."
    }

    /// label-named folders of .txt files under `root`.
    static func writeFolder(_ root: String) throws {
        for t in topics {
            try FileManager.default.createDirectory(atPath: "\(root)/\(t.label)", withIntermediateDirectories: true)
            for i in 0..<8 { try document(t.words, i).write(toFile: "\(root)/\(t.label)/\(i).txt", atomically: true, encoding: .utf8) }
        }
    }

    /// The same corpus as one CSV (quoted text with a comma and a newline in each).
    static func writeCSV(_ path: String) throws {
        var s = "label,text\r\n"
        for i in 0..<8 { for t in topics { s += "\(t.label),\"\(document(t.words, i))\nline two, \"\"quoted\"\"\"\r\n" } }
        try s.write(toFile: path, atomically: true, encoding: .utf8)
    }
}

struct Scratch {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "mltool-cli-text-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

@Suite struct TextCLITests {
    func train(_ args: [String]) -> MLToolCore.ExitStatus { CLI.run(arguments: ["train"] + args + ["--quiet"]) }

    @Test func trainPredictRoundTripOnAFolder() throws {
        let s = try Scratch(); defer { s.remove() }
        try Corpus.writeFolder(s.path + "/texts")
        let model = s.path + "/m.bin"
        #expect(train([s.path + "/texts", "-o", model, "--holdout", "0.25", "--min-count", "1"]) == .ok)
        let m = try ModelFile.read(path: model)
        #expect(m.metadata.task == .textClassifier)
        #expect(m.metadata.graph == nil)
        #expect(m.metadata.labels == ["cooking", "football", "weather"])
        #expect(m.metadata.split?.holdout.count == 6)
        #expect(m.metadata.split?.holdout.allSatisfy { $0.path.hasSuffix(".txt") } == true)
        #expect(m.tensor(named: "text.vocabulary")?.dtype == .u8)
        let texts = ["a storm and rain in the forecast", "bake bread with butter", "the striker scored a goal"]
        let p = try TextClassifier(model: m, path: model).probabilities(texts)
        for (i, want) in [2, 0, 1].enumerated() {
            let row = Array(p[(i * 3)..<(i * 3 + 3)])
            #expect(row.firstIndex(of: row.max()!) == want, "\(texts[i]): \(row)")
            #expect(abs(row.reduce(0, +) - 1) < 1e-5)
        }
        #expect(CLI.run(arguments: ["predict", model, "--text", "rain", "--json"]) == .ok)
        #expect(CLI.run(arguments: ["predict", model, s.path + "/texts/cooking/0.txt", "--top", "2"]) == .ok)
        #expect(CLI.run(arguments: ["eval", model, "--quiet"]) == .ok)
        #expect(CLI.run(arguments: ["eval", model, s.path + "/texts", "--quiet"]) == .ok)
        #expect(CLI.run(arguments: ["info", model]) == .ok)
        let summary = ModelSummary(model: m, layout: nil)
        #expect(summary.strongestFeatures?["weather"]?.count == 5)
    }

    /// `--l2 auto` ranks 0.1/n and 0.01/n on the validation split (n training documents); with no validation split
    /// it takes 0.1/n.
    @Test func automaticL2ForText() throws {
        let s = try Scratch(); defer { s.remove() }
        try Corpus.writeCSV(s.path + "/data.csv")
        let out = s.path + "/m.bin"
        #expect(train([s.path + "/data.csv", "-o", out, "--validation", "none"]) == .ok)
        var m = try ModelFile.read(path: out)
        let n = try #require(m.metadata.split?.trainCount)
        #expect(m.metadata.split?.validationCount == 0)
        #expect(m.metadata.metrics["l2"] == 0.1 / Double(n))
        #expect(train([s.path + "/data.csv", "-o", out, "--validation", "0.25"]) == .ok)
        m = try ModelFile.read(path: out)
        let split = try #require(m.metadata.split)
        let searched = Double(split.trainCount - split.validationCount)
        #expect(split.validationCount > 0)
        #expect([0.1 / searched, 0.01 / searched].contains(try #require(m.metadata.metrics["l2"])))
    }

    @Test func sameSeedGivesAByteIdenticalModel() throws {
        let s = try Scratch(); defer { s.remove() }
        try Corpus.writeCSV(s.path + "/data.csv")
        // The model's name and recorded command come from the arguments, so both runs write the same path.
        let out = s.path + "/m.bin"
        func bytes(seed: String) throws -> Data {
            #expect(train([s.path + "/data.csv", "-o", out, "--seed", seed, "--ngrams", "1-3"]) == .ok)
            return try Data(contentsOf: URL(fileURLWithPath: out))
        }
        let a = try bytes(seed: "7"), b = try bytes(seed: "7"), c = try bytes(seed: "8")
        #expect(a == b)
        #expect(a != c)  // another seed holds out other rows
    }

    @Test func csvHoldoutRowsAreFoundAgainAndChangesReported() throws {
        let s = try Scratch(); defer { s.remove() }
        let csv = s.path + "/data.csv"
        try Corpus.writeCSV(csv)
        let model = s.path + "/m.bin"
        #expect(train([csv, "-o", model, "--min-count", "1", "--char-ngrams", "3-4", "--weighting", "binary"]) == .ok)
        let m = try ModelFile.read(path: model)
        let split = try #require(m.metadata.split)
        #expect(split.root == s.path)
        #expect(split.holdout.count == 6)
        #expect(split.holdout.allSatisfy { $0.path.hasPrefix("data.csv#row=") })
        let items = try Evaluation.recordedHoldout(m, modelPath: model, skipMissing: false).items
        #expect(items.count == 6)
        #expect(items.allSatisfy { $0.text?.contains("line two") == true })
        #expect(CLI.run(arguments: ["eval", model, "--quiet", "--json"]) == .ok)

        // Edit one held-out row: eval must say which one changed.
        let first = split.holdout[0]
        let row = Int(first.path.split(separator: "=").last!)!
        var table = try TextDataset.table(csv)
        let original = table.items[row - 1].text
        let firstLine = try #require(original.components(separatedBy: "\n").first)
        var text = try String(contentsOfFile: csv, encoding: .utf8)
        text = text.replacingOccurrences(of: firstLine, with: firstLine.replacingOccurrences(of: "The ", with: "A "))
        try text.write(toFile: csv, atomically: true, encoding: .utf8)
        table = try TextDataset.table(csv)
        #expect(table.items[row - 1].text != original)
        let error = message { try Evaluation.recordedHoldout(m, modelPath: model, skipMissing: false) }
        #expect(error.contains("changed since training"))
        #expect(error.contains("\(s.path)/data.csv#row=\(row)"))
    }

    /// The int8 text model evaluates like the float one: `eval` runs, and on every corpus document (and a new text)
    /// it gives the float model's label with probabilities within 0.02.
    @Test func quantizedTextModelEvaluates() throws {
        let s = try Scratch(); defer { s.remove() }
        try Corpus.writeFolder(s.path + "/texts")
        let model = s.path + "/m.bin"
        #expect(train([s.path + "/texts", "-o", model, "--min-count", "1", "--hash-bits", "10"]) == .ok)
        #expect(CLI.run(arguments: ["quantize", model, "--bits", "8", "--min-elements", "16", "--quiet"]) == .ok)
        let q = try ModelFile.read(path: s.path + "/m.int8.bin")
        #expect(q.tensor(named: "text.weights")?.dtype == .int8)
        #expect(q.tensor(named: "text.vocabulary") == nil)
        #expect(CLI.run(arguments: ["eval", s.path + "/m.int8.bin", "--quiet"]) == .ok)
        let texts = Corpus.topics.flatMap { t in (0..<8).map { Corpus.document(t.words, $0) } } + ["bake bread with butter"]
        let k = Corpus.topics.count
        let pq = try TextClassifier(model: q, path: "q").probabilities(texts)
        let pf = try TextClassifier(model: try ModelFile.read(path: model), path: model).probabilities(texts)
        assertClose(pq, pf, atol: 0.02, "int8 vs float probabilities")
        func labels(_ p: [Float]) -> [Int] {
            (0..<(p.count / k)).map { i in (0..<k).max { p[i * k + $0] < p[i * k + $1] }! }
        }
        #expect(labels(pq) == labels(pf) && labels(pq).count == texts.count)
        #expect(labels(pq).last == 0, "bake bread with butter is cooking")
    }

    @Test func usageAndDataErrors() throws {
        let s = try Scratch(); defer { s.remove() }
        try Corpus.writeFolder(s.path + "/texts")
        #expect(train([s.path + "/texts", "-o", s.path + "/m.bin", "--ngrams", "3-1"]) == .usage)
        #expect(train([s.path + "/texts", "-o", s.path + "/m.bin", "--augment", "flip"]) == .usage)
        #expect(train([s.path + "/texts", "--task", "speech"]) == .usage)
        try "label,text\na,one\na,two\nb,three\n".write(toFile: s.path + "/small.csv", atomically: true, encoding: .utf8)
        #expect(train([s.path + "/small.csv", "-o", s.path + "/m.bin"]) == .dataError)
    }
}

func message(_ body: () throws -> Any) -> String {
    do { _ = try body(); return "no error" } catch let e as MLToolError { return e.description } catch { return "\(error)" }
}
