import Foundation
import MLTool
import MLToolTestSupport
import Testing

/// Sharded feature extraction (docs/SCALE.md): `ShardSpec`'s parsing and assignment rule, then `mltool train DATA
/// --features-only --shard I/N` run as separate processes into one cache, as a scheduler would run them.
struct ShardSpecTests {
    /// The parsed (index, count), or the refusal's text.
    static func outcome(_ text: String, _ env: [String: String]) -> String {
        do {
            let s = try ShardSpec.parse(text, environment: env)
            return "\(s.index)/\(s.count)"
        } catch PipelineError.invalidParameter(_, let reason) {
            return "error: " + reason
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test(arguments: [
        ("0/1", "0/1"), ("2/4", "2/4"), ("3/4", "3/4"),
        ("4/4", "error: --shard 4/4: the shard index must be in 0...3 (shards are numbered from 0)"),
        ("-1/3", "error: --shard -1/3: the shard index must be in 0...2 (shards are numbered from 0)"),
        ("1/0", "error: --shard '1/0': the shard count must be at least 1"),
        ("a/3", "error: --shard 'a/3': the index 'a' is not an integer"),
        ("1/x", "error: --shard '1/x': the count 'x' is not an integer"),
        ("3", "error: --shard '3': expected I/N (e.g. 0/4), auto or auto/N"),
        ("1/2/3", "error: --shard '1/2/3': expected I/N, auto or auto/N"),
    ])
    func flagForms(text: String, expected: String) {
        #expect(Self.outcome(text, [:]) == expected)
    }

    /// `auto`: Slurm first (index counted from SLURM_ARRAY_TASK_MIN; steps and gaps refused), then Kubernetes'
    /// JOB_COMPLETION_INDEX (count from MLTOOL_SHARD_COUNT or auto/N), then RANK/WORLD_SIZE.
    @Test(arguments: [
        ("auto", ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"], "2/4"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "4",
                  "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_STEP": "1"], "1/4"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1",
                  "SLURM_ARRAY_TASK_MAX": "4"], "0/4"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "RANK": "0", "WORLD_SIZE": "8",
                  "JOB_COMPLETION_INDEX": "3", "MLTOOL_SHARD_COUNT": "5"], "1/2"),
        ("auto/3", ["SLURM_ARRAY_TASK_ID": "2"], "2/3"),
        // One index resubmitted alone (sbatch --array=2): an array of one task; the given count makes it shard 2.
        ("auto/4", ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": "2",
                    "SLURM_ARRAY_TASK_MAX": "2"], "2/4"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": "2",
                  "SLURM_ARRAY_TASK_MAX": "2", "MLTOOL_SHARD_COUNT": "4"], "2/4"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": "2",
                  "SLURM_ARRAY_TASK_MAX": "2"], "0/1"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "2"],
         "error: SLURM_ARRAY_TASK_ID=2: SLURM_ARRAY_TASK_COUNT is not set; give --shard auto/N"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "5", "SLURM_ARRAY_TASK_MIN": "0",
                  "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "2"],
         "error: SLURM_ARRAY_TASK_STEP=2: the array has a step; submit a contiguous one (--array=0-4, not --array=0-8:2)"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1",
                  "SLURM_ARRAY_TASK_MAX": "7"],
         "error: SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_MAX=7, SLURM_ARRAY_TASK_COUNT=3: the array has gaps; submit a contiguous one (--array=0-2)"),
        ("auto", ["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"],
         "error: SLURM_ARRAY_TASK_ID=0 (SLURM_ARRAY_TASK_MIN=1, count 4): the shard index must be in 0...3 (shards are numbered from 0)"),
        ("auto/5", ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4"],
         "error: --shard auto/5: the count 5 contradicts SLURM_ARRAY_TASK_COUNT=4"),
        ("auto", ["JOB_COMPLETION_INDEX": "3", "MLTOOL_SHARD_COUNT": "4"], "3/4"),
        ("auto/5", ["JOB_COMPLETION_INDEX": "3"], "3/5"),
        ("auto", ["JOB_COMPLETION_INDEX": "3", "RANK": "1", "WORLD_SIZE": "2"],
         "error: JOB_COMPLETION_INDEX=3: the shard count is unknown; set MLTOOL_SHARD_COUNT (the Job's completions) or give --shard auto/N"),
        ("auto", ["JOB_COMPLETION_INDEX": "4", "MLTOOL_SHARD_COUNT": "4"],
         "error: JOB_COMPLETION_INDEX=4 (count 4): the shard index must be in 0...3 (shards are numbered from 0)"),
        ("auto", ["JOB_COMPLETION_INDEX": "x1", "MLTOOL_SHARD_COUNT": "4"], "error: JOB_COMPLETION_INDEX=x1: expected an integer ≥ 0"),
        ("auto", ["RANK": "2", "WORLD_SIZE": "3"], "2/3"),
        ("auto", ["RANK": "1"], "error: RANK=1: WORLD_SIZE is not set; give --shard auto/N"),
        ("auto", ["RANK": "0", "WORLD_SIZE": "-2"], "error: WORLD_SIZE=-2: expected an integer ≥ 0"),
        ("auto", ["RANK": "0", "WORLD_SIZE": "0"], "error: RANK=0 (WORLD_SIZE=0): the shard count must be at least 1"),
        ("auto", ["HOME": "/root"],
         "error: --shard auto: no shard in the environment: looked for SLURM_ARRAY_TASK_ID (with SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN); JOB_COMPLETION_INDEX (with MLTOOL_SHARD_COUNT or --shard auto/N); RANK (with WORLD_SIZE). Give --shard I/N instead"),
    ])
    func environment(text: String, env: [String: String], expected: String) {
        #expect(Self.outcome(text, env) == expected)
    }

    /// The documented rule, checked against Python's hashlib: int.from_bytes(sha256(path).digest()[:8], 'big') % N.
    @Test func assignmentMatchesTheDocumentedRule() {
        #expect(ShardSpec.shard(ofRelativePath: "bag/00001.png", count: 4) == 3)
        #expect(ShardSpec.shard(ofRelativePath: "trouser/00042.png", count: 3) == 1)
        #expect(ShardSpec.shard(ofRelativePath: "sneaker/00007.png", count: 7) == 2)
        #expect(ShardSpec.shard(ofRelativePath: "a", count: 2) == 0)
        #expect(ShardSpec.shard(ofRelativePath: "ünïcode/ß.png", count: 5) == 3)
        #expect(ShardSpec.shard(ofRelativePath: "anything", count: 1) == 0)
    }

    /// Every item is owned by exactly one of N shards, the shards are about equal, and adding files moves none of
    /// the files already there.
    @Test(arguments: [2, 3, 7, 16])
    func everyItemHasExactlyOneShard(count: Int) throws {
        let shards = try (0..<count).map { try ShardSpec(index: $0, count: count) }
        let paths = (0..<3000).map { "class\($0 % 5)/img_\($0).png" }
        var sizes = [Int](repeating: 0, count: count)
        for p in paths {
            let owners = shards.filter { $0.owns(relativePath: p) }
            #expect(owners.count == 1, "\(p) is owned by \(owners.count) shards")
            if let o = owners.first { sizes[o.index] += 1 }
        }
        let fair = Double(paths.count) / Double(count)
        #expect(sizes.allSatisfy { abs(Double($0) - fair) < 0.25 * fair }, "shard sizes \(sizes)")
        let before = paths.map { ShardSpec.shard(ofRelativePath: $0, count: count) }
        let grown = paths + (0..<1000).map { "class\($0 % 7)/new_\($0).png" }
        let after = grown.map { ShardSpec.shard(ofRelativePath: $0, count: count) }
        #expect(Array(after.prefix(paths.count)) == before)
    }
}

/// Where predict's shards and the manifests go.
struct ShardFilesTests {
    /// A folder argument's files are assigned by their path relative to it (trailing slashes ignored), a file given
    /// by itself by its path as given; the N shards partition the inputs and keep their order.
    @Test func filesOfAFolderArgumentGoByTheirRelativePath() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        var relative = [String]()
        for label in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: dir.file("data/" + label), withIntermediateDirectories: true)
            for i in 0..<12 {
                let name = "\(label)/\(i + 10).png"   // two digits: the walk's sorted order is this order
                try Data([1]).write(to: URL(fileURLWithPath: dir.file("data/" + name)))
                relative.append(name)
            }
        }
        let loose = dir.file("loose.png")
        try Data([1]).write(to: URL(fileURLWithPath: loose))
        let all = try ShardSpec.whole.files(expanding: [dir.file("data") + "//", loose])
        #expect(all.count == 25)
        var union = [String]()
        for i in 0..<3 {
            let shard = try ShardSpec(index: i, count: 3)
            let files = try shard.files(expanding: [dir.file("data") + "//", loose])
            let expected = relative.filter { ShardSpec.shard(ofRelativePath: $0, count: 3) == i }.map { dir.file("data/" + $0) }
                + (ShardSpec.shard(ofRelativePath: loose, count: 3) == i ? [loose] : [])
            #expect(files == expected)
            union += files
        }
        #expect(union.sorted() == all.sorted())
    }

    @Test func manifestPathAndRoundTrip() throws {
        let shard = try ShardSpec(index: 2, count: 5)
        #expect(ShardManifest.defaultPath(cache: "/shared/mltool/features", settings: "0123456789abcdef", shard: shard)
                == "/shared/mltool/shards/0123456789abcdef/shard-2-of-5.json")
        let dir = try TempDir(); defer { dir.cleanup() }
        let text = #"{"tool": "mltool x", "shard": 2, "shards": 5, "origin": "--shard 2/5", "data": "/d", "settings": "s", "cache": "/c", "host": "h", "itemsInData": 10, "itemsOwned": 3, "extracted": 2, "cached": 1, "failures": [{"path": "a/b.png", "reason": "why"}], "seconds": 1.5, "finished": "t", "complete": false}"#
        try Data(text.utf8).write(to: URL(fileURLWithPath: dir.file("given.json")))
        let m = try ShardManifest.read(dir.file("given.json"))
        #expect(m.failures.map(\.path) == ["a/b.png"] && m.itemsOwned == 3 && !m.complete)
        try m.write(to: dir.file("deep/er/m.json"))
        #expect(try ShardManifest.read(dir.file("deep/er/m.json")) == m)
        try Data("{".utf8).write(to: URL(fileURLWithPath: dir.file("bad.json")))
        #expect(throws: PipelineError.self) { try ShardManifest.read(dir.file("bad.json")) }
    }
}

/// The processes a scheduler would start, on a 3-class × 20-image subset of Fashion-MNIST small with the default
/// extractor (EfficientNet-Lite0).
@Suite(.serialized, .enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct ShardCLITests {
    static let fashion = SharedDatasets.repository.appendingPathComponent("datasets/fashion-mnist-small/train").path
    static var ready: Bool {
        guard FileManager.default.fileExists(atPath: fashion + "/bag") else {
            Oracles.missing("datasets/fashion-mnist-small (make test runs datasets/fashion-mnist.sh --small)")
            return false
        }
        guard FeatureExtractor.candidates(explicit: nil).contains(where: { FileManager.default.fileExists(atPath: $0) }) else {
            Oracles.missing("the default extractor models/efficientnet-lite0.bin (make models)")
            return false
        }
        return true
    }

    /// Copies the first `perClass` images of three classes into `folder`.
    static func subset(_ folder: String, perClass: Int = 20) throws {
        for label in ["bag", "sneaker", "trouser"] {
            try FileManager.default.createDirectory(atPath: folder + "/" + label, withIntermediateDirectories: true)
            let names = try FileManager.default.contentsOfDirectory(atPath: fashion + "/" + label).sorted().prefix(perClass)
            for n in names { try FileManager.default.copyItem(atPath: "\(fashion)/\(label)/\(n)", toPath: "\(folder)/\(label)/\(n)") }
        }
    }

    /// Starts `mltool args` in `directory` without waiting.
    static func start(_ args: [String], in directory: String, env: [String: String] = [:]) throws -> (Process, Pipe, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tool.path ?? "/nonexistent")
        p.arguments = args
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out; p.standardError = err
        try p.run()
        return (p, out, err)
    }

    static func finish(_ r: (Process, Pipe, Pipe)) -> Tool.Result {
        let o = r.1.fileHandleForReading.readDataToEndOfFile(), e = r.2.fileHandleForReading.readDataToEndOfFile()
        r.0.waitUntilExit()
        return Tool.Result(status: r.0.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    /// The entry files of a cache folder (relative paths, sorted), without temporaries.
    static func entries(_ cache: String) -> [String] {
        (FileManager.default.enumerator(atPath: cache + "/features")?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".f32") && !$0.contains("/.") }.sorted()
    }

    static func manifests(_ cache: String, count: Int) throws -> [ShardManifest] {
        let runs = try FileManager.default.contentsOfDirectory(atPath: cache + "/shards")
        try #require(runs.count == 1, "one run folder expected: \(runs)")
        return try (0..<count).map { try ShardManifest.read("\(cache)/shards/\(runs[0])/shard-\($0)-of-\(count).json") }
    }

    static func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// Three shards as three concurrent processes into one fresh cache, then `train` extracts nothing and writes the
    /// model a one-process `train` writes into another fresh cache, byte for byte. Both trains run in the same folder
    /// with the same flags and write model.bin in sibling folders, so the provenance they record (command, paths
    /// relative to the model's folder) is the same; the models are compared whole, as the warm-cache test does.
    @Test func threeShardsThenTrainEqualsOneProcess() throws {
        guard Self.ready else { return }
        let dir = try TempDir(); defer { dir.cleanup() }
        try Self.subset(dir.file("data"))
        let flags = ["--augment", "flip", "--seed", "7", "--quiet"]
        for d in ["a", "b"] { try FileManager.default.createDirectory(atPath: dir.file(d), withIntermediateDirectories: true) }
        let one = try Tool.run(["train", "data", "--cache", "one", "-o", "a/model.bin"] + flags, in: dir.path)
        try #require(one.status == 0, "\(one.stderr)")

        let runs = try (0..<3).map { try Self.start(["train", "data", "--features-only", "--shard", "\($0)/3", "--cache", "sharded"] + flags, in: dir.path) }
        let results = runs.map(Self.finish)
        for (i, r) in results.enumerated() {
            #expect(r.status == 0, "shard \(i): \(r.stderr)")
            #expect(r.stdout.hasPrefix("shard \(i)/3 (--shard \(i)/3): "), "\(r.stdout)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.file("model.bin")))
        let m = try Self.manifests(dir.file("sharded"), count: 3)
        let owned: [Int] = m.map(\.itemsOwned)
        #expect(owned.reduce(0, +) == 60)
        #expect(m.allSatisfy { $0.itemsInData == 60 && $0.complete && $0.failures.isEmpty && $0.cached == 0 && $0.itemsOwned > 5 })
        // 12 holdout images (20%, 4 per class) once; 48 training images (no validation under 50: Create ML's rule)
        // plain and flipped.
        let extracted: [Int] = m.map(\.extracted), expected: Int = 12 + 48 * 2
        #expect(extracted.reduce(0, +) == expected, "\(extracted)")
        #expect(Self.entries(dir.file("sharded")) == Self.entries(dir.file("one")))
        for e in Self.entries(dir.file("one")) {
            #expect(try Self.bytes(dir.file("one/features/" + e)) == Self.bytes(dir.file("sharded/features/" + e)), "entry \(e) differs")
        }

        let final = try Tool.run(["train", "data", "--cache", "sharded", "-o", "b/model.bin"] + flags, in: dir.path)
        try #require(final.status == 0, "\(final.stderr)")
        #expect(final.stdout.contains("(0 extracted)"), "\(final.stdout)")
        #expect(try Self.bytes(dir.file("a/model.bin")) == Self.bytes(dir.file("b/model.bin")))

        // Sharded prediction: the parts together are the one-machine output, line for line once sorted.
        let whole = try Tool.run(["predict", "a/model.bin", "data", "--json"], in: dir.path)
        try #require(whole.status == 0, "\(whole.stderr)")
        var parts = [String]()
        for i in 0..<3 {
            let part = try Tool.run(["predict", "a/model.bin", "data/", "--json", "--shard", "\(i)/3"], in: dir.path)
            #expect(part.status == 0, "\(part.stderr)")
            let lines = part.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == m[i].itemsOwned, "predict shard \(i) has \(lines.count) lines; train's shard owned \(m[i].itemsOwned)")
            parts += lines
        }
        let wholeLines = whole.stdout.split(separator: "\n").map(String.init)
        #expect(wholeLines.count == 60)
        #expect(parts.sorted() == wholeLines.sorted())

        // A rerun of a finished shard computes nothing.
        let again = try Tool.run(["train", "data", "--features-only", "--shard", "1/3", "--cache", "sharded"] + flags, in: dir.path)
        #expect(again.status == 0 && again.stdout.contains(" 0 entries extracted, \(m[1].extracted) cached"), "\(again.stdout)")
    }

    /// A shard killed in the middle of its writes (SIGKILL after 12 entries) leaves whole entries only; run again it
    /// computes just the rest, and `train` then extracts nothing.
    @Test func killedShardRerunCompletesTheCache() throws {
        guard Self.ready else { return }
        let dir = try TempDir(); defer { dir.cleanup() }
        try Self.subset(dir.file("data"), perClass: 10)
        let entryBytes = 48 + 1280 * 4 + 4
        let killed = try Tool.run(["train", "data", "--features-only", "--shard", "auto", "--cache", "c", "--quiet"], in: dir.path,
                                  env: ["RANK": "0", "WORLD_SIZE": "1", "MLTOOL_TEST_CRASH_AFTER_BYTES": "\(12 * entryBytes + 100)"])
        #expect(killed.status == 9, "expected SIGKILL: \(killed.status) \(killed.stderr)")
        #expect(Self.entries(dir.file("c")).count == 12)
        let rerun = try Tool.run(["train", "data", "--features-only", "--shard", "auto", "--cache", "c", "--quiet"], in: dir.path,
                                 env: ["RANK": "0", "WORLD_SIZE": "1"])
        try #require(rerun.status == 0, "\(rerun.stderr)")
        let m = try Self.manifests(dir.file("c"), count: 1)[0]
        #expect(m.extracted == 30 - 12 && m.cached == 12 && m.complete && m.origin == "RANK=0 (WORLD_SIZE=1)")
        #expect(Self.entries(dir.file("c")).count == 30)
        let train = try Tool.run(["train", "data", "--cache", "c", "--quiet"], in: dir.path)
        #expect(train.status == 0 && train.stdout.contains("(0 extracted)"), "\(train.stdout) \(train.stderr)")
    }

    /// A file that is not an image: its shard exits 65 naming the manifest, which lists it; the shards without it
    /// succeed. Once the file is gone the shard reruns, computing nothing more, and succeeds.
    @Test func failedImageFailsItsShardAndIsListed() throws {
        guard Self.ready else { return }
        let dir = try TempDir(); defer { dir.cleanup() }
        try Self.subset(dir.file("data"), perClass: 10)
        try Data("not a picture".utf8).write(to: URL(fileURLWithPath: dir.file("data/bag/broken.png")))
        let owner = ShardSpec.shard(ofRelativePath: "bag/broken.png", count: 2)
        let flags = ["--holdout", "0", "--cache", "c", "--manifest"]
        let bad = try Tool.run(["train", "data", "--features-only", "--shard", "\(owner)/2"] + flags + ["bad.json"], in: dir.path)
        #expect(bad.status == 65, "\(bad.status) \(bad.stderr)")
        #expect(bad.stderr.contains("bad.json: shard \(owner)/2: 1 of "), "\(bad.stderr)")
        let m = try ShardManifest.read(dir.file("bad.json"))
        #expect(!m.complete && m.failures.map(\.path) == ["bag/broken.png"])
        #expect(m.failures.first?.reason.contains("broken.png") == true, "\(m.failures)")
        let other = try Tool.run(["train", "data", "--features-only", "--shard", "\(1 - owner)/2"] + flags + ["other.json"], in: dir.path)
        #expect(other.status == 0, "\(other.stderr)")
        try FileManager.default.removeItem(atPath: dir.file("data/bag/broken.png"))
        let fixed = try Tool.run(["train", "data", "--features-only", "--shard", "\(owner)/2"] + flags + ["bad.json"], in: dir.path)
        #expect(fixed.status == 0, "\(fixed.stderr)")
        let after = try ShardManifest.read(dir.file("bad.json"))
        #expect(after.complete && after.extracted == 0 && after.cached == m.extracted, "\(after)")
    }

    /// Two processes extracting the same images into one fresh cache at once: every entry is whole (it decodes under
    /// its key), no temporary file is left, and `train` finds them all.
    @Test func concurrentWritersLeaveIntactEntries() throws {
        guard Self.ready else { return }
        let dir = try TempDir(); defer { dir.cleanup() }
        try Self.subset(dir.file("data"), perClass: 10)
        let args = ["train", "data", "--features-only", "--cache", "c", "--quiet"]
        let both = try [Self.start(args + ["--manifest", "a.json"], in: dir.path),
                        Self.start(args + ["--manifest", "b.json"], in: dir.path)].map(Self.finish)
        #expect(both.allSatisfy { $0.status == 0 }, "\(both.map(\.stderr))")
        let a = try ShardManifest.read(dir.file("a.json")), b = try ShardManifest.read(dir.file("b.json"))
        #expect(a.extracted + a.cached == 30 && b.extracted + b.cached == 30)
        let files = Self.entries(dir.file("c"))
        #expect(files.count == 30)
        let cache = FeatureCache(directory: dir.file("c/features"))
        for f in files {
            let key = String((f as NSString).lastPathComponent.dropLast(4))
            #expect(cache.get(key: key)?.count == 1280, "entry \(f) is not whole")
        }
        let leftovers = (FileManager.default.enumerator(atPath: dir.file("c/features"))?.compactMap { $0 as? String } ?? [])
            .filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        let train = try Tool.run(["train", "data", "--cache", "c", "--quiet"], in: dir.path)
        #expect(train.status == 0 && train.stdout.contains("(0 extracted)"), "\(train.stdout) \(train.stderr)")
    }

    /// Past the memory budget the head trains out of core (rows from the cache into a scratch file read a block at
    /// a time) and writes the model the in-memory head writes, byte for byte: with a validation split (the L2
    /// search, then the refit on training + validation rows), augmented variants and a holdout. Nothing is left
    /// in the cache folder but entries. `--memory` takes sizes only, and images only.
    @Test func outOfCoreHeadWritesTheSameModel() throws {
        guard Self.ready else { return }
        let dir = try TempDir(); defer { dir.cleanup() }
        try Self.subset(dir.file("data"), perClass: 30)
        let flags = ["--augment", "flip", "--validation", "0.2", "--seed", "3", "--cache", "c"]
        for d in ["a", "b"] { try FileManager.default.createDirectory(atPath: dir.file(d), withIntermediateDirectories: true) }
        let memory = try Tool.run(["train", "data", "-o", "a/model.bin"] + flags, in: dir.path)
        try #require(memory.status == 0, "\(memory.stderr)")
        #expect(!memory.stdout.contains("out of core"), "\(memory.stdout)")
        // 90 images: 18 holdout, the rest training (plain + flipped) and validation; ~150 rows × 1,280 floats × 8
        // bytes (`HeadMemory`) is ~1.5 MB, so a 200K budget is well past it.
        let disk = try Tool.run(["train", "data", "-o", "b/model.bin", "--memory", "200K"] + flags, in: dir.path)
        try #require(disk.status == 0, "\(disk.stderr)")
        #expect(disk.stdout.contains("(out of core)") && disk.stdout.contains("(0 extracted)"), "\(disk.stdout)")
        #expect(memory.stdout.split(separator: "\n").prefix(3) == disk.stdout.split(separator: "\n").prefix(3))
        #expect(try Self.bytes(dir.file("a/model.bin")) == Self.bytes(dir.file("b/model.bin")))
        let stray = (FileManager.default.enumerator(atPath: dir.file("c"))?.compactMap { $0 as? String } ?? [])
            .filter { $0.contains(".mltool-rows") }
        #expect(stray.isEmpty, "\(stray)")

        let bad = try Tool.run(["train", "data", "--memory", "lots"], in: dir.path)
        #expect(bad.status == 64 && bad.stderr.contains("--memory: 'lots', expected a size such as 2G"), "\(bad.stderr)")
        try "label,text\na,one two\nb,three four\n".write(toFile: dir.file("t.csv"), atomically: true, encoding: .utf8)
        let text = try Tool.run(["train", "t.csv", "--memory", "1G"], in: dir.path)
        #expect(text.status == 64 && text.stderr.contains("--memory is not an option of text classification (t.csv is text data)"), "\(text.stderr)")
    }

    /// The usage errors: --shard without --features-only, no scheduler in the environment, other tasks.
    @Test func usageErrors() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 3)
        let clean = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "RANK"].filter { ProcessInfo.processInfo.environment[$0] != nil }
        try #require(clean.isEmpty, "the test environment sets \(clean)")
        let noFlag = try Tool.run(["train", "images", "--shard", "0/2"], in: dir.path)
        #expect(noFlag.status == 64 && noFlag.stderr.contains("--shard needs --features-only"), "\(noFlag.stderr)")
        let auto = try Tool.run(["train", "images", "--features-only", "--shard", "auto"], in: dir.path)
        #expect(auto.status == 64 && auto.stderr.contains("--shard auto: no shard in the environment"), "\(auto.stderr)")
        #expect(auto.stderr.contains("USAGE: mltool train"))
        let bad = try Tool.run(["train", "images", "--features-only", "--shard", "2/2"], in: dir.path)
        #expect(bad.status == 64 && bad.stderr.contains("--shard 2/2: the shard index must be in 0...1"), "\(bad.stderr)")
        try "label,text\na,one two\nb,three four\n".write(toFile: dir.file("t.csv"), atomically: true, encoding: .utf8)
        let text = try Tool.run(["train", "t.csv", "--features-only"], in: dir.path)
        #expect(text.status == 64 && text.stderr.contains("--features-only is not an option of text classification (t.csv is text data)"), "\(text.stderr)")
    }
}
