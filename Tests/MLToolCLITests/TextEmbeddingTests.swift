import Foundation
import Testing
import MLTool
import MLToolCore
import MLToolFormat
import MLToolTestSupport

/// Text classification on TF-IDF plus sentence embeddings (`--embedding models/minilm.bin`, issue 57 item 2) on real
/// short texts: Debian's fortunes (datasets/fortunes.sh). Embeddings are cached in .build/text-embedding-cache, so only
/// the first run encodes (15,163 fortunes: ~2 CPU-minutes of MiniLM). The Debian synopses with the embedding (28,353
/// texts to encode: 0.8050 against 0.7933 without, session 50) are measured by `make bench` (part 4), not here.
@Suite(.serialized) struct TextEmbeddingTests {
    static let root = SharedDatasets.repository.path
    static let encoder = root + "/models/minilm.bin"
    static let cache = root + "/.build/text-embedding-cache"

    /// train.csv and test.csv of a data set under datasets/, or nil (said, and a failure under MLTOOL_REQUIRE_ORACLES).
    static func dataSet(_ name: String, script: String) -> (train: String, test: String)? {
        let folder = root + "/datasets/" + name
        guard FileManager.default.fileExists(atPath: folder + "/test.csv"),
              FileManager.default.fileExists(atPath: encoder) else {
            Oracles.missing("\(folder)/test.csv or \(encoder) (bash \(script); make models)")
            return nil
        }
        return (folder + "/train.csv", folder + "/test.csv")
    }

    static func train(_ data: (train: String, test: String?), embedding: Bool,
                      cache: String = TextEmbeddingTests.cache) throws -> TrainingResult {
        var p = TextClassifierParameters()
        p.cacheDirectory = cache
        if embedding { p.embedding = .model(encoder) }
        return try TextClassifierTrainer(data: .path(data.train), testData: data.test.map { .path($0) }, parameters: p).train()
    }

    /// Fortunes (39 files, 12,128 + 3,035 quotations): test accuracy 0.5703 with the embedding against 0.4853 without
    /// (measured 2026-12-06; issue bar ≥ 0.55). The saved model predicts through the CLI as the library
    /// does, and gives the encoder's own embedding.
    @Test func fortunes() throws {
        guard let data = Self.dataSet("fortunes", script: "datasets/fortunes.sh") else { return }
        let plain = try Self.train(data, embedding: false), embedded = try Self.train(data, embedding: true)
        let without = try #require(plain.metrics["holdout.accuracy"]), with = try #require(embedded.metrics["holdout.accuracy"])
        print("TextEmbeddingTests: fortunes test accuracy \(with) with the embedding, \(without) without")
        #expect(with >= 0.565)
        #expect(with - without >= 0.08)

        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.file("fortunes.bin")
        try embedded.write(to: path)
        let classifier = try TextClassifier(contentsOf: URL(fileURLWithPath: path))
        let sentence = "The Enterprise answered the distress call from the Klingon ship."
        let direct = try SentenceEncoder(path: Self.encoder).embedding(for: sentence)
        assertClose(try #require(try classifier.embedding(for: sentence)), direct, atol: 1e-6, "embedding(for:)")
        #expect(try TextClassifier(model: plain.model).embedding(for: sentence) == nil)
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        for text in [sentence, "Real programmers don't comment their code.", "A penny saved is a penny earned."] {
            let r = try Tool.run(["predict", path, "--text", text, "--json", "--top", "1"])
            #expect(r.status == 0, "\(r.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let top = try #require((json["top"] as? [[String: Any]])?.first)
            let library = try #require(try classifier.classify(text, options: .init(maximumCount: 1)).first)
            #expect(top["label"] as? String == library.identifier)
            #expect(abs((top["probability"] as? Double ?? -1) - Double(library.confidence)) < 1e-4, "\(top)")
        }
    }

    /// 312 fortunes (8 of each file; 20% held out) through an empty cache: the first training encodes every
    /// text, the second none, and both give the same weights.
    @Test func secondRunEncodesNothing() throws {
        guard let data = Self.dataSet("fortunes", script: "datasets/fortunes.sh") else { return }
        let dir = try TempDir()
        defer { dir.cleanup() }
        let small = try Self.smallSet(data, in: dir)
        let first = try Self.train(small, embedding: true, cache: dir.file("cache"))
        let second = try Self.train(small, embedding: true, cache: dir.file("cache"))
        #expect(first.extractedCount == 312)
        #expect(second.extractedCount == 0)
        #expect(try first.model.tensor(named: "text.weights")?.floats() == second.model.tensor(named: "text.weights")?.floats())
    }

    /// `--embedding auto` on short texts finds the bundled encoder ($MLTOOL_SENTENCE_ENCODER here) and lets the
    /// validation split choose among the feature sets with and without it, saying so; `none` never loads it.
    @Test func autoChoosesOnTheValidationSplit() throws {
        guard let data = Self.dataSet("fortunes", script: "datasets/fortunes.sh") else { return }
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        let small = try Self.smallSet(data, in: dir, maximumWords: 20).train   // 304 quotations, median 13 words
        let env = ["MLTOOL_SENTENCE_ENCODER": Self.encoder, "MLTOOL_CACHE": dir.file("cache")]
        let auto = try Tool.run(["train", small, "-o", dir.file("auto.bin"), "--embedding", "auto", "--validation", "0.25"], env: env)
        #expect(auto.status == 0, "\(auto.stderr)")
        let note = auto.stderr.split(separator: "\n").first { $0.contains("chosen on the validation split") } ?? ""
        #expect(note.components(separatedBy: "+ sentence embeddings").count == 3, "\(note)")   // 2 of the 4 candidates
        #expect(auto.stderr.contains("304 of 304 documents encoded"), "\(auto.stderr)")
        let none = try Tool.run(["train", small, "-o", dir.file("none.bin"), "--validation", "0.25"], env: env)
        #expect(none.status == 0 && !none.stderr.contains("sentence embeddings"), "\(none.stderr)")
    }

    /// A model whose encoder is truncated or lies about its tensors is refused with the file and the place, exit 65.
    @Test func damagedEncoderIsRefused() throws {
        guard let data = Self.dataSet("fortunes", script: "datasets/fortunes.sh") else { return }
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        let model = try Self.train(try Self.smallSet(data, in: dir), embedding: true).model
        let good = dir.file("good.bin")
        try ModelFile.write(model, to: good)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: good)))

        let truncated = dir.file("truncated.bin")
        try Data(bytes.prefix(bytes.count - 1_000_000)).write(to: URL(fileURLWithPath: truncated))
        let t = try Tool.run(["predict", truncated, "--text", "hello"])
        #expect(t.status == 65 && t.stderr.contains("truncated.bin"), "\(t.stderr)")

        var lying = model
        let name = "encoder.layer.0.attention.self.query.weight"
        let index = try #require(lying.tensors.firstIndex { $0.name == name })
        lying.tensors[index] = StoredTensor(name: name, tensor: Tensor(shape: [384, 383], data: [Float](repeating: 0, count: 384 * 383)))
        let lie = dir.file("lying.bin")
        try ModelFile.write(lying, to: lie)
        let l = try Tool.run(["predict", lie, "--text", "hello"])
        #expect(l.status == 65 && l.stderr.contains("lying.bin") && l.stderr.contains("query"), "\(l.status) \(l.stdout) \(l.stderr)")

        var narrow = model
        narrow.metadata.sentenceEncoder?.dimension = 383
        let n = dir.file("narrow.bin")
        try ModelFile.write(narrow, to: n)
        let r = try Tool.run(["predict", n, "--text", "hello"])
        #expect(r.status == 65 && r.stderr.contains("narrow.bin") && r.stderr.contains("text.embedding.mean"), "\(r.stderr)")
    }

    /// The first 8 training quotations of each of the 39 files (312) as a CSV file in `dir`, with no test file; with
    /// `maximumWords`, of the quotations that have at most that many words.
    static func smallSet(_ data: (train: String, test: String), in dir: TempDir,
                         maximumWords: Int = .max) throws -> (train: String, test: String?) {
        let lines = try String(contentsOfFile: data.train, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true)
        var taken = [Substring: Int]()
        let rows = lines.dropFirst().filter { line in
            guard line.split(separator: " ").count <= maximumWords else { return false }
            let label = line[(line.lastIndex(of: ",").map { line.index(after: $0) } ?? line.endIndex)...]
            taken[label, default: 0] += 1
            return taken[label, default: 0] <= 8
        }
        try (([lines[0]] + rows).joined(separator: "\n") + "\n").write(toFile: dir.file("small.csv"), atomically: true, encoding: .utf8)
        return (dir.file("small.csv"), nil)
    }
}
