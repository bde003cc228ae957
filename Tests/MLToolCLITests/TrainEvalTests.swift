import Foundation
import Testing
import MLToolCore
import MLToolFormat

/// `mltool train` → `eval` → `quantize` → `eval`, exactly as typed by a user, on a small data set made here.
@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct TrainEvalTests {
    @Test func trainEvalQuantizeAsTyped() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 10)
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let env = ["MLTOOL_CACHE": dir.file("cache"), "MLTOOL_EXTRACTOR": dir.file("tiny.bin")]

        let train = try Tool.run(["train", "images/"], in: dir.path, env: env)
        #expect(train.status == 0, "\(train.stderr)")
        #expect(train.stdout.contains("trained 2 classes"))
        #expect(train.stdout.contains("wrote      model.bin"))
        #expect(FileManager.default.fileExists(atPath: dir.file("model.bin")))
        let model = try ModelFile.read(path: dir.file("model.bin"))
        #expect(model.metadata.labels == ["blue", "red"])
        #expect(model.metadata.split?.holdout.count == 4)   // 20% of 10 per class, stratified
        #expect((model.metadata.metrics["holdout.accuracy"] ?? 0) == 1)

        // Warm cache: the same command again extracts nothing and writes a byte-identical model.
        let first = try Data(contentsOf: URL(fileURLWithPath: dir.file("model.bin")))
        let again = try Tool.run(["train", "images/"], in: dir.path, env: env)
        #expect(again.stdout.contains("(0 extracted)"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("model.bin"))) == first)

        // A partly warm cache (some entries gone) still gives the same bytes: rows keep data set order.
        let entries = FileManager.default.enumerator(atPath: dir.file("cache"))?.compactMap { $0 as? String }
            .filter { !$0.hasSuffix("/") && FileManager.default.fileExists(atPath: dir.file("cache/" + $0)) && !$0.contains("tmp") }
            .sorted() ?? []
        let files = entries.filter { var d: ObjCBool = false; _ = FileManager.default.fileExists(atPath: dir.file("cache/" + $0), isDirectory: &d); return !d.boolValue }
        #expect(files.count == 20)
        for f in files.enumerated() where f.offset % 3 == 0 { try FileManager.default.removeItem(atPath: dir.file("cache/" + f.element)) }
        let partial = try Tool.run(["train", "images/"], in: dir.path, env: env)
        #expect(partial.stdout.contains("(7 extracted)"), "\(partial.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("model.bin"))) == first)

        let eval = try Tool.run(["eval"], in: dir.path, env: env)
        #expect(eval.status == 0, "\(eval.stderr)")
        #expect(eval.stdout.contains("model.bin on recorded holdout: 4 items"))
        #expect(eval.stdout.contains("accuracy      1.0000"))

        let q = try Tool.run(["quantize", "model.bin", "--bits", "8", "--min-elements", "1"], in: dir.path, env: env)
        #expect(q.status == 0, "\(q.stderr)")
        #expect(q.stdout.contains("model.bin → model.int8.bin (linear, 8 bits)"))
        // Half of the 4 holdout images calibrate; the gate scores the other two.
        #expect(q.stdout.contains("accuracy on 2 items (2 calibration images left out): float 1.0000, quantized 1.0000"), "\(q.stdout)")
        #expect(q.stdout.contains("calibration on 2 holdout images: "), "\(q.stdout)")
        let e8 = try Tool.run(["eval", "model.int8.bin"], in: dir.path, env: env)
        #expect(e8.status == 0 && e8.stdout.contains("accuracy      1.0000"))
        let q8 = try ModelFile.read(path: dir.file("model.int8.bin"))
        #expect(q8.tensor(named: "head.weights")?.dtype == .int8)

        // A holdout file moved away is named, and nothing is silently evaluated without it.
        let holdout = try #require(model.metadata.split?.holdout.first)
        let moved = dir.file("images/" + holdout.path)
        try FileManager.default.moveItem(atPath: moved, toPath: dir.file("moved.png"))
        let gone = try Tool.run(["eval"], in: dir.path, env: env)
        #expect(gone.status == 66)
        #expect(gone.stderr.contains("missing: \(moved)"), "\(gone.stderr)")
    }

    @Test func preflightNamesTheProblemClass() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 3)
        try FileManager.default.createDirectory(atPath: dir.file("images/green"), withIntermediateDirectories: true)
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let r = try Tool.run(["train", "images", "--extractor", "tiny.bin"], in: dir.path,
                             env: ["MLTOOL_CACHE": dir.file("cache")])
        #expect(r.status == 65)
        #expect(r.stderr.contains("green (0 images)"))
        #expect(!FileManager.default.fileExists(atPath: dir.file("model.bin")))
    }

    @Test func missingExtractorSaysHowToGetIt() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 3)
        let r = try Tool.run(["train", "images", "--extractor", "nope.bin"], in: dir.path)
        #expect(r.status == 66)
        #expect(r.stderr.contains("nope.bin: no such extractor model"))
    }
}

/// Exports leave the machine: no path of it may travel with them (issue 19, item 7). A model trained on absolute
/// paths (data, `--test`, extractor, output all under a temporary folder) is exported to ONNX and Core ML; neither
/// file contains that folder, the home directory or any absolute path the model recorded, while the model itself
/// still finds its holdout.
@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct ExportPathLeakTests {
    @Test func exportsCarryNoPathOfTheTrainingMachine() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 10)
        try Make.colourFolders(in: dir.file("test"), perClass: 3)
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let env = ["MLTOOL_CACHE": dir.file("cache"), "MLTOOL_EXTRACTOR": dir.file("tiny.bin")]
        let train = try Tool.run(["train", dir.file("images"), "--test", dir.file("test"), "-o", dir.file("model.bin")],
                                 env: env)
        #expect(train.status == 0, "\(train.stderr)")
        let model = try ModelFile.read(path: dir.file("model.bin"))
        let recorded = (model.metadata.provenance.sources.map(\.path) + [model.metadata.provenance.command ?? ""])
            .joined(separator: " ")
        #expect(recorded.contains(dir.path), "the native model records where it was trained: \(recorded)")

        var checked = 0
        for (format, file) in [("onnx", "model.onnx"), ("coreml", "Model.mlmodel")] {
            let e = try Tool.run(["export", dir.file("model.bin"), "--to", format, "-o", dir.file(file)], env: env)
            #expect(e.status == 0, "\(e.stderr)")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dir.file(file)))
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(!text.contains(dir.path), "\(file) contains \(dir.path)")
            #expect(!text.contains(NSTemporaryDirectory()), "\(file) contains \(NSTemporaryDirectory())")
            let home = NSHomeDirectory()
            #expect(home.count < 2 || !text.contains(home + "/"), "\(file) contains the home directory \(home)")
            #expect(text.contains("tiny.bin"), "\(file) no longer names its extractor")
            #expect(text.contains(model.metadata.provenance.sources[0].sha256), "\(file) lost the extractor's hash")
            checked += 1
        }
        #expect(checked == 2)
    }
}
