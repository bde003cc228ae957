import Foundation
import MLToolTestSupport
import MLTool
import Testing

/// `mltool train DATA` with no options and the library's trainers with default parameters make the same model,
/// byte for byte: the CLI reads its defaults from the parameters structs and adds nothing of its own.
@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct LibraryParityTests {
    /// Images, with the default extractor (models/efficientnet-lite0.bin, found from the build folder by both the
    /// tool and this test process, which `make test` builds first).
    @Test(.enabled(if: FeatureExtractor.candidates(explicit: nil).contains { FileManager.default.fileExists(atPath: $0) },
                   "the default extractor is missing: run `make models`"))
    func imageClassifierMatchesTheCLI() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 8)
        let cache = dir.file("cache")
        let cli = try Tool.run(["train", dir.file("images")], in: dir.path, env: ["MLTOOL_CACHE": cache])
        #expect(cli.status == 0, "\(cli.stderr)")

        var parameters = ImageClassifierParameters()
        parameters.cacheDirectory = cache
        let trainer = ImageClassifierTrainer(data: .labeledDirectories(at: URL(fileURLWithPath: dir.file("images"))),
                                             parameters: parameters)
        let result = try trainer.train()
        try result.write(to: dir.file("library.bin"))

        let a = try Data(contentsOf: URL(fileURLWithPath: dir.file("model.bin")))
        let b = try Data(contentsOf: URL(fileURLWithPath: dir.file("library.bin")))
        #expect(a.count > 1000)
        #expect(a == b, "the CLI's model (\(a.count) B) and the library's (\(b.count) B) differ")
        // Both recorded the same provenance, and the model works: the holdout of red/blue is classified.
        #expect(result.model.metadata.provenance.command == "mltool train \(dir.file("images"))")
        #expect(result.metrics["holdout.accuracy"] == 1)
    }

    @Test func textClassifierMatchesTheCLI() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        var csv = "label,text\n"
        let topics = [("cooking", ["flour", "oven", "bake", "bread", "dough"]),
                      ("weather", ["rain", "cloud", "storm", "wind", "snow"])]
        for i in 0..<15 {
            for (label, words) in topics {
                csv += "\(label),\"Today \(words[i % 5]) and \(words[(i * 3 + 1) % 5]), then \(words[(i + 2) % 5]).\"\n"
            }
        }
        try csv.write(toFile: dir.file("texts.csv"), atomically: true, encoding: .utf8)
        let cli = try Tool.run(["train", dir.file("texts.csv")], in: dir.path)
        #expect(cli.status == 0, "\(cli.stderr)")

        let result = try TextClassifierTrainer(data: .path(dir.file("texts.csv"))).train()
        try result.write(to: dir.file("library.bin"))

        let a = try Data(contentsOf: URL(fileURLWithPath: dir.file("model.bin")))
        let b = try Data(contentsOf: URL(fileURLWithPath: dir.file("library.bin")))
        #expect(a.count > 500)
        #expect(a == b, "the CLI's model (\(a.count) B) and the library's (\(b.count) B) differ")
        let classifier = try TextClassifier(model: result.model)
        #expect(try classifier.predictedLabel(for: "rain and snow and wind") == "weather")
    }

    /// `try await trainer.train(progress:)` (every classifier trainer's, from `CancellableTrainer`) gives the
    /// synchronous call's model byte for byte, and a cancelled task stops it with `CancellationError`.
    @Test func asyncTrainingGivesTheSameModelAndStopsWhenCancelled() async throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        var csv = "label,text\n"
        for i in 0..<12 { csv += "cooking,\"bake the bread \(i)\"\nweather,\"rain and wind \(i)\"\n" }
        try csv.write(toFile: dir.file("texts.csv"), atomically: true, encoding: .utf8)
        let trainer = TextClassifierTrainer(data: .path(dir.file("texts.csv")))
        try trainer.train(progress: nil, cancellation: Cancellation()).write(to: dir.file("sync.bin"))
        try await trainer.train(progress: nil).write(to: dir.file("async.bin"))
        let a = try Data(contentsOf: URL(fileURLWithPath: dir.file("sync.bin")))
        let b = try Data(contentsOf: URL(fileURLWithPath: dir.file("async.bin")))
        #expect(a.count > 500 && a == b)
        let task = Task { () async throws -> TrainingResult in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await trainer.train(progress: nil)
        }
        await #expect(throws: CancellationError.self) { _ = try await task.value }
    }
}
