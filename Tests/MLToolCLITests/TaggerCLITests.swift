import Foundation
import MLToolTestSupport
import Testing

/// Word tagging through the command line on UD English EWT (`datasets/ud-english-ewt`, which `make test` builds):
/// `mltool train FILE.conllu --test`, `predict --text`, `eval`, as a user runs them.
@Suite struct TaggerCLITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static func ewt(_ name: String) -> String { root + "/datasets/ud-english-ewt/" + name }
    static var haveEWT: Bool { FileManager.default.fileExists(atPath: ewt(".complete")) }

    /// The number after `key` in `text` ("test 0.9534" → 0.9534).
    static func number(after key: String, in text: String) -> Double? {
        guard let r = text.range(of: key + " ") else { return nil }
        return Double(text[r.upperBound...].prefix { $0.isNumber || $0 == "." })
    }

    @Test func uposTaggerTrainsPredictsAndEvaluates() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        guard Self.haveEWT else { return Oracles.missing("datasets/ud-english-ewt (run datasets/ud-english-ewt.sh)") }
        let dir = try TempDir()
        defer { dir.cleanup() }
        let model = dir.file("upos.bin")
        let t = try Tool.run(["train", Self.ewt("en_ewt-ud-train.conllu"), "--test", Self.ewt("en_ewt-ud-test.conllu"),
                              "-o", model, "--quiet"])
        #expect(t.status == 0, "\(t.stderr)")
        #expect(t.stdout.contains("trained a word tagger for 17 tags on 11917 sentences (627 validation, 2077 test)"), "\(t.stdout)")
        let printed = try #require(Self.number(after: "test", in: t.stdout), "\(t.stdout)")
        #expect(printed >= 0.95)

        // eval on the same file: the same accuracy, per-tag scores and a confusion matrix that agree with it.
        let e = try Tool.run(["eval", model, Self.ewt("en_ewt-ud-test.conllu"), "--json"])
        #expect(e.status == 0, "\(e.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(e.stdout.utf8)) as? [String: Any])
        let accuracy = try #require(report["accuracy"] as? Double)
        #expect(abs(accuracy - printed) < 5e-5)
        #expect(report["tokens"] as? Int == 25094 && report["sentences"] as? Int == 2077)
        let confusion = try #require(report["confusion"] as? [[Int]])
        #expect(abs(Double(confusion.indices.reduce(0) { $0 + confusion[$1][$1] }) / 25094 - accuracy) < 1e-12)
        let text = try Tool.run(["eval", model, Self.ewt("en_ewt-ud-test.conllu")])
        #expect(text.stdout.contains(String(format: "  accuracy   %.4f", accuracy)) && text.stdout.contains("  confused   "))

        // predict: raw text through the model's own tokenizer, offsets that point back into the text.
        let sentence = "Tim Cook visited Paris last week, didn't he?"
        let p = try Tool.run(["predict", model, "--text", sentence, "--json"])
        #expect(p.status == 0, "\(p.stderr)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(p.stdout.utf8)) as? [String: Any])
        let tokens = try #require(line["tokens"] as? [[String: Any]])
        let scalars = Array(sentence.unicodeScalars)
        for token in tokens {
            let (start, end) = (try #require(token["start"] as? Int), try #require(token["end"] as? Int))
            var s = String.UnicodeScalarView()
            s.append(contentsOf: scalars[start..<end])
            #expect(String(s) == token["token"] as? String)
        }
        let tags = Dictionary(tokens.map { ($0["token"] as? String ?? "", $0["tag"] as? String ?? "") }) { a, _ in a }
        #expect(tags["visited"] == "VERB" && tags["Paris"] == "PROPN" && tags["Tim"] == "PROPN" && tags["?"] == "PUNCT")
        // A .txt file works as well, and the plain output is token/TAG pairs.
        try (sentence + "\n").write(toFile: dir.file("s.txt"), atomically: true, encoding: .utf8)
        let f = try Tool.run(["predict", model, dir.file("s.txt")])
        #expect(f.status == 0 && f.stdout.contains("visited/VERB Paris/PROPN"), "\(f.stdout)\(f.stderr)")

        // Quantized like a classifier, gated on token accuracy over tagged --data; the result still tags.
        let q = try Tool.run(["quantize", model, "--bits", "8", "-o", dir.file("q.bin"), "--data", Self.ewt("en_ewt-ud-test.conllu"), "--json"])
        #expect(q.status == 0, "\(q.stderr)")
        let qr = try #require(try JSONSerialization.jsonObject(with: Data(q.stdout.utf8)) as? [String: Any])
        let gate = try #require(qr["gate"] as? [String: Any])
        #expect(gate["metric"] as? String == "token accuracy" && gate["items"] as? Int == 25094)
        #expect(abs((gate["floatAccuracy"] as? Double ?? 0) - accuracy) < 1e-12)
        #expect((gate["quantizedAccuracy"] as? Double ?? 0) >= accuracy - 0.002)
        let qe = try Tool.run(["eval", dir.file("q.bin"), Self.ewt("en_ewt-ud-test.conllu"), "--json"])
        let qa = try #require(try JSONSerialization.jsonObject(with: Data(qe.stdout.utf8)) as? [String: Any])
        #expect(qa["accuracy"] as? Double == gate["quantizedAccuracy"] as? Double)
        #expect((qr["fileBytesAfter"] as? Int ?? .max) * 2 < (qr["fileBytesBefore"] as? Int ?? 0))
        // The report's size is the written file's (it once left out the paths the file records).
        #expect(qr["fileBytesAfter"] as? Int == (try FileManager.default.attributesOfItem(atPath: dir.file("q.bin"))[.size] as? Int))

        // The HTML report: scores, the confusion matrix, the sentences with wrong tags highlighted (true tag beside).
        let html = try Tool.run(["eval", model, Self.ewt("en_ewt-ud-test.conllu"), "--report", dir.file("r.html")])
        #expect(html.status == 0, "\(html.stderr)")
        let page = try String(contentsOfFile: dir.file("r.html"), encoding: .utf8)
        #expect(page.contains("<h1>Word tagging report</h1>") && page.contains(String(format: "%.4f", accuracy)))
        #expect(page.contains("<svg") && page.contains("class=\"w bad\"") && page.contains(" → "))
        #expect(!page.contains("<script"))
        // A tagger needs data to be evaluated on.
        let bare = try Tool.run(["eval", model])
        #expect(bare.status == 64 && bare.stderr.contains("a word tagger is evaluated on tagged DATA"), "\(bare.stderr)")
    }

    @Test func entityTaggerReportsTheSameEntityScoresInTrainAndEval() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        guard Self.haveEWT else { return Oracles.missing("datasets/ud-english-ewt (run datasets/ud-english-ewt.sh)") }
        let dir = try TempDir()
        defer { dir.cleanup() }
        let model = dir.file("names.bin")
        let t = try Tool.run(["train", Self.ewt("entities-train.bioes"), "--test", Self.ewt("entities-test.bioes"),
                              "-o", model, "--quiet", "--epochs", "4"])
        #expect(t.status == 0, "\(t.stderr)")
        let f1 = try #require(Self.number(after: "F1", in: t.stdout), "\(t.stdout)")
        // Measured entity F1 0.8624 on a 2-core AVX2 machine (December 2026); bar 0.02 below.
        #expect(f1 >= 0.8424, "entity F1 \(f1), measured 0.8624, bar 0.8424")
        let e = try Tool.run(["eval", model, Self.ewt("entities-test.bioes"), "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(e.stdout.utf8)) as? [String: Any])
        let entities = try #require(report["entities"] as? [String: Any])
        #expect(abs((entities["f1"] as? Double ?? -1) - f1) < 5e-5)
        // Training on a held-out share instead of a test file names it so.
        let h = try Tool.run(["train", Self.ewt("entities-dev.bio"), "-o", dir.file("h.bin"), "--quiet", "--holdout", "0.25"])
        #expect(h.status == 0 && h.stdout.contains("500 holdout)") && h.stdout.contains(", holdout 0."), "\(h.stdout)\(h.stderr)")
        // The same data and seed give the same bytes (the model records no timings). From two folders at the same
        // depth, since the recorded command names the data relative to where it ran.
        for run in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: dir.file(run), withIntermediateDirectories: true)
            let r = try Tool.run(["train", Self.ewt("entities-dev.bio"), "-o", "h.bin", "--quiet", "--holdout", "0.25"], in: dir.file(run))
            #expect(r.status == 0, "\(r.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("a/h.bin"))) == Data(contentsOf: URL(fileURLWithPath: dir.file("b/h.bin"))))
    }
}
