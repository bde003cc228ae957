import Foundation
import Testing
import MLToolCore
import MLToolFormat
import MLToolTestSupport

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
        // Calibration on the training images the model records (never a holdout or validation image); the gate
        // scores all 4 holdout images.
        let recorded = try #require(model.metadata.split?.calibration)
        let split = try #require(model.metadata.split)
        #expect(recorded.count == split.trainCount)
        #expect(Set(recorded.map(\.path)).isDisjoint(with: split.holdout.map(\.path)))
        #expect(q.stdout.contains("accuracy on 4 items: float 1.0000, quantized 1.0000"), "\(q.stdout)")
        #expect(q.stdout.contains("calibration on \(split.trainCount) training images: "), "\(q.stdout)")
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
    /// Every path a test could leak — the scratch folder, the temporary directory, the home directory — with what
    /// surrounds it (to see which field leaked it). `absoluteOnly`: only where it starts a path (not after "..").
    static func leaks(_ bytes: Data, _ dir: TempDir, absoluteOnly: Bool = false) -> [String] {
        let text = String(decoding: bytes, as: UTF8.self)
        let home = NSHomeDirectory()
        return [dir.path, RecordedPath.absolute(NSTemporaryDirectory()) + "/", home.count > 1 ? home + "/" : nil]
            .compactMap { $0 }.flatMap { path in
                text.ranges(of: path).filter { r in !absoluteOnly || r.lowerBound == text.startIndex || text[text.index(before: r.lowerBound)] != "." }
                    .map { r in String(text[(text.index(r.lowerBound, offsetBy: -40, limitedBy: text.startIndex) ?? text.startIndex)..<r.upperBound]) }
            }
    }

    /// The text classifier, the word tagger, the tabular model and the sound classifier (trained on absolute paths
    /// with `--test`, which they record as their holdout root): the native files record no absolute path, and every
    /// export format either writes a file with no path of this machine or refuses the task by name (exit 65,
    /// "cannot export to …" or "not yet supported") without writing one.
    @Test(arguments: ["text", "tagger", "tabular", "sound"])
    func otherTasksModelsAndExportsCarryNoPathOfTheTrainingMachine(task: String) throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try FileManager.default.createDirectory(atPath: dir.file("data"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.file("models"), withIntermediateDirectories: true)
        let words = [("good", "great", "fine"), ("bad", "awful", "poor")]
        var train = "", test = "", ext = "", flags: [String] = []
        if task == "sound" {
            guard let fsdd = SharedDatasets.fsdd else { return Oracles.missing("FSDD not found: ../shared/datasets/fsdd or $FSDD_DIR") }
            for (split, speaker, count) in [("train", "jackson", 8), ("test", "theo", 3)] {
                for digit in ["0", "1"] {
                    let folder = dir.file("data/\(split)/\(digit)")
                    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                    for i in 0..<count {
                        try FileManager.default.copyItem(atPath: "\(fsdd)/recordings/\(digit)_\(speaker)_\(i).wav", toPath: "\(folder)/\(i).wav")
                    }
                }
            }
            flags = ["--pad-to", "0", "--overlap", "0.5", "--cache", dir.file("cache")]
        } else if task == "tabular" {
            // Two numeric columns; the label says which is larger.
            func rows(_ n: Int, _ seed: Int) -> String {
                "a,b,label\n" + (0..<n).map { i in
                    let a = (i * 37 + seed) % 101, b = (i * 53 + 2 * seed) % 97
                    return "\(a),\(b),\(a > b ? "a" : "b")"
                }.joined(separator: "\n") + "\n"
            }
            (train, test, ext, flags) = (rows(200, 1), rows(50, 7), "csv", ["--target", "label"])
        } else if task == "text" {
            func rows(_ n: Int) -> String {
                "text,label\n" + (0..<n).map { i in
                    let w = words[i % 2]
                    return "\([w.0, w.1, w.2][i % 3]) \([w.0, w.1, w.2][(i + 1) % 3]) day,\(i % 2 == 0 ? "pos" : "neg")"
                }.joined(separator: "\n") + "\n"
            }
            (train, test, ext) = (rows(40), rows(10), "csv")
        } else {
            func sentences(_ n: Int) -> String {
                (0..<n).map { i in "From\tO\nthe\tO\n\(["Paris", "London", "Rome"][i % 3])\tB-NAME\nto\tO\n\(["Kim", "Lee"][i % 2])\tB-NAME\n" }
                    .joined(separator: "\n")
            }
            (train, test, ext) = (sentences(30), sentences(6), "bio")
        }
        let (trainData, testData) = ext.isEmpty ? (dir.file("data/train"), dir.file("data/test"))
            : (dir.file("data/train.\(ext)"), dir.file("data/test.\(ext)"))
        if !ext.isEmpty {
            try train.write(toFile: trainData, atomically: true, encoding: .utf8)
            try test.write(toFile: testData, atomically: true, encoding: .utf8)
        }
        let t = try Tool.run(["train", trainData, "--test", testData, "-o", dir.file("models/model.bin"), "--quiet"] + flags)
        try #require(t.status == 0, "\(task): \(t.stderr)")
        let raw = try Data(contentsOf: URL(fileURLWithPath: dir.file("models/model.bin")))
        #expect(Self.leaks(raw, dir, absoluteOnly: true).isEmpty, "\(task) model.bin records \(Self.leaks(raw, dir, absoluteOnly: true))")
        for (format, file) in [("onnx", "model.onnx"), ("coreml", "Model.mlmodel"), ("tflite", "model.tflite")] {
            let e = try Tool.run(["export", dir.file("models/model.bin"), "--to", format, "-o", dir.file(file)])
            if e.status == 0 {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: dir.file(file)))
                #expect(Self.leaks(bytes, dir).isEmpty, "\(task) \(file) records \(Self.leaks(bytes, dir))")
            } else {
                #expect(e.status == 65 && (e.stderr.contains("cannot export to") || e.stderr.contains("not yet supported")),
                        "\(task) → \(format): exit \(e.status): \(e.stderr)")
                #expect(!FileManager.default.fileExists(atPath: dir.file(file)), "\(task) → \(format): refused but wrote \(file)")
            }
        }
    }

    @Test func modelsAndExportsCarryNoPathOfTheTrainingMachine() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("data/images"), perClass: 10)
        try Make.colourFolders(in: dir.file("data/test"), perClass: 3)
        try FileManager.default.createDirectory(atPath: dir.file("models"), withIntermediateDirectories: true)
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let env = ["MLTOOL_CACHE": dir.file("cache"), "MLTOOL_EXTRACTOR": dir.file("tiny.bin")]
        let train = try Tool.run(["train", dir.file("data/images"), "--test", dir.file("data/test"), "-o", dir.file("models/model.bin")],
                                 env: env)
        #expect(train.status == 0, "\(train.stderr)")
        // The native file records paths relative to its own folder; reading resolves them.
        let raw = try Data(contentsOf: URL(fileURLWithPath: dir.file("models/model.bin")))
        #expect(Self.leaks(raw, dir, absoluteOnly: true).isEmpty, "model.bin records \(Self.leaks(raw, dir, absoluteOnly: true))")
        let model = try ModelFile.read(path: dir.file("models/model.bin"))
        #expect(model.metadata.provenance.sources.map(\.path) == [RecordedPath.absolute(dir.file("tiny.bin"))])
        #expect(model.metadata.split?.root == RecordedPath.absolute(dir.file("data/test")))

        // A model moved together with its data still finds its holdout, from any working directory.
        let moved = dir.path + "-moved"
        try FileManager.default.moveItem(atPath: dir.path, toPath: moved)
        defer { try? FileManager.default.moveItem(atPath: moved, toPath: dir.path) }
        let eval = try Tool.run(["eval", moved + "/models/model.bin"], in: NSTemporaryDirectory(), env: env)
        #expect(eval.status == 0, "\(eval.stderr)")
        #expect(eval.stdout.contains("accuracy"), "\(eval.stdout)")
        try FileManager.default.moveItem(atPath: moved, toPath: dir.path)

        var checked = 0
        for (format, file) in [("onnx", "model.onnx"), ("coreml", "Model.mlmodel"), ("tflite", "model.tflite")] {
            let e = try Tool.run(["export", dir.file("models/model.bin"), "--to", format, "-o", dir.file(file)], env: env)
            #expect(e.status == 0, "\(e.stderr)")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dir.file(file)))
            #expect(Self.leaks(bytes, dir).isEmpty, "\(file) records \(Self.leaks(bytes, dir))")
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.contains("tiny.bin"), "\(file) no longer names its extractor")
            #expect(text.contains(model.metadata.provenance.sources[0].sha256), "\(file) lost the extractor's hash")
            checked += 1
        }
        #expect(checked == 3)
    }

    @Test func noProvenanceRecordsNoSourceCommandOrRoot() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 10)
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let env = ["MLTOOL_CACHE": dir.file("cache"), "MLTOOL_EXTRACTOR": dir.file("tiny.bin")]
        let train = try Tool.run(["train", dir.file("images"), "-o", dir.file("model.bin"), "--no-provenance"], env: env)
        #expect(train.status == 0, "\(train.stderr)")
        let md = try ModelFile.read(path: dir.file("model.bin")).metadata
        #expect(md.provenance.sources.isEmpty && md.provenance.command == nil && md.split?.root == nil)
        #expect(md.split.map { !$0.holdout.isEmpty && $0.holdout.allSatisfy { !$0.path.hasPrefix("/") } } == true)
        let raw = try Data(contentsOf: URL(fileURLWithPath: dir.file("model.bin")))
        #expect(!String(decoding: raw, as: UTF8.self).contains("tiny.bin"))
        // The holdout's paths are relative to the data folder: evaluating from there still works.
        let eval = try Tool.run(["eval", dir.file("model.bin")], in: dir.file("images"), env: env)
        #expect(eval.status == 0, "\(eval.stderr)")

        // Export of a model that has provenance, with --no-provenance: sources and command dropped there too.
        #expect(try Tool.run(["train", dir.file("images"), "-o", dir.file("full.bin")], env: env).status == 0)
        let e = try Tool.run(["export", dir.file("full.bin"), "--to", "onnx", "-o", dir.file("full.onnx"), "--no-provenance"], env: env)
        #expect(e.status == 0, "\(e.stderr)")
        let onnx = String(decoding: try Data(contentsOf: URL(fileURLWithPath: dir.file("full.onnx"))), as: UTF8.self)
        #expect(onnx.contains("\"sources\":[]") && !onnx.contains("tiny.bin") && !onnx.contains("mltool train"))
    }
}
