import Foundation
import MLTool
import MLToolCore
import MLToolFormat
import MLToolTestSupport
import Testing

/// `mltool train --fine-tune N` on a 3-class × 30-image subset of Fashion-MNIST small: the extractor's last N
/// convolutions train with the head, their weights are written into the model in place of the extractor's, and the
/// model file gives, through the engine, the holdout accuracy the training measured through its trainable graph.
@Suite(.serialized, .enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct FineTuneCLITests {
    /// Without a validation split the last epoch is kept, so the trained layers always differ from the extractor's.
    @Test func fineTunedWeightsAreWrittenBackAndTheRunIsDeterministic() throws {
        guard ShardCLITests.ready else { return }
        let dir = try TempDir()
        defer { dir.cleanup() }
        for label in ["coat", "pullover", "shirt"] {   // the classes the frozen features confuse most
            let from = ShardCLITests.fashion + "/" + label, to = dir.path + "/data/" + label
            try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: true)
            for n in try FileManager.default.contentsOfDirectory(atPath: from).sorted().prefix(30) {
                try FileManager.default.copyItem(atPath: from + "/" + n, toPath: to + "/" + n)
            }
        }
        let flags = ["--fine-tune", "4", "--fine-tune-epochs", "2", "--holdout", "0.3", "--validation", "none",
                     "--cache", dir.path + "/cache"]
        // Two shards fill the cache at the cut (the activations fine-tuning reads), so training extracts nothing.
        for shard in ["0/2", "1/2"] {
            let r = try Tool.run(["train", dir.path + "/data", "--features-only", "--shard", shard] + flags)
            #expect(r.status == 0, "\(r.stderr)")
        }
        var models: [Data] = []
        for run in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: dir.file(run), withIntermediateDirectories: true)
            let r = try Tool.run(["train", dir.path + "/data", "-o", dir.file(run) + "/m.bin"] + flags)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("(0 extracted)"), "\(r.stdout)")
            models.append(try Data(contentsOf: URL(fileURLWithPath: dir.file(run) + "/m.bin")))
        }
        #expect(models[0] == models[1], "same data, seed and threads (both runs from the shards' cache): the same bytes")

        let model = try ModelFile.read(path: dir.file("a") + "/m.bin")
        let extractor = try ModelFile.read(path: try #require(FeatureExtractor.candidates(explicit: nil)
            .first { FileManager.default.fileExists(atPath: $0) }))
        #expect(model.metadata.provenance.command?.contains("--fine-tune 4 --fine-tune-epochs 2") == true)
        #expect(model.metadata.metrics["fineTune.layers"] == 4)
        // Block 15 and the head conv trained; block 14, below the cut, did not.
        for (name, trained) in [("_blocks.15._expand_conv.bnfold.weight", true), ("_conv_head.bnfold.bias", true),
                                ("_blocks.14._project_conv.bnfold.weight", false)] {
            let mine = try #require(model.tensor(named: name)).floats(), theirs = try #require(extractor.tensor(named: name)).floats()
            #expect((mine != theirs) == trained, "\(name) \(trained ? "trained" : "frozen")")
        }
        let recorded = try #require(model.metadata.metrics["holdout.accuracy"])
        #expect(model.metadata.metrics["fineTune.keptEpoch"] == 2)
        let eval = try Tool.run(["eval", dir.file("a") + "/m.bin", "--json"])
        let report = try JSONSerialization.jsonObject(with: Data(eval.stdout.utf8)) as? [String: Any]
        let first = (report?["reports"] as? [[String: Any]])?.first
        let measured = try #require(first?["accuracy"] as? Double, "\(eval.stdout) \(eval.stderr)")
        #expect(abs(measured - recorded) < 1e-9, "eval through the engine \(measured), training's own \(recorded)")
    }

    @Test func badLayerCountsAreRefused() throws {
        guard ShardCLITests.ready else { return }
        let dir = try TempDir()
        defer { dir.cleanup() }
        try ShardCLITests.subset(dir.path + "/data", perClass: 3)
        let negative = try Tool.run(["train", dir.path + "/data", "--fine-tune", "-1", "-o", dir.path + "/m.bin"])
        #expect(negative.status == 64 && negative.stderr.contains("--fine-tune must be 0 or more"), "\(negative.stderr)")
        let tooMany = try Tool.run(["train", dir.path + "/data", "--fine-tune", "500", "--cache", dir.path + "/cache",
                                    "-o", dir.path + "/m.bin"])
        #expect(tooMany.status != 0 && tooMany.stderr.contains("1...") && tooMany.stderr.contains("500"), "\(tooMany.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/m.bin"))
    }
}
