import Foundation
import MLTool
import MLToolTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Crash safety (docs/SECURITY.md, "Crash safety"): `train`, `quantize` and `export` killed at random moments while
/// writing over an existing output leave the old file or the new one, byte for byte, never a mixture; a full disk
/// or a read-only folder leaves the old file and exits 73; a feature cache survives `kill -9` and refuses damaged
/// entries. Kills are of two kinds, from one seeded generator: the test-only hook MLTOOL_TEST_CRASH_AFTER_BYTES=N
/// (the process SIGKILLs itself after N bytes of temporary files) and a real SIGKILL after a random delay.
/// Every output compared here is deterministic (the model file, ONNX and Core ML bytes carry no time stamp), so
/// "old or new" is checked as byte equality with the old file or with one uninterrupted run's output.
@Suite(.serialized, .enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct CrashSafetyTests {
    /// A classifier whose files are large enough (≈0.5 MB float, ≈0.13 MB int8) for kills to land inside writes:
    /// the tiny extractor's features feed a 256→512→2 dense head.
    static func wideClassifier() -> Model {
        var rng = SplitMix64(seed: 18)
        func weights(_ n: Int) -> [Float] { (0..<n).map { _ in rng.nextUnit() - 0.5 } }
        let graph = Graph(
            inputs: [GraphInput(name: "input", shape: [-1, 8, 8, 3])], outputs: ["logits"],
            nodes: [
                Node(name: "conv", op: .conv, inputs: ["input", "conv.w"], outputs: ["conv"],
                     attributes: Attributes(kernel: [1, 1], strides: [1, 1], pads: [0, 0, 0, 0], groups: 1, activation: .relu)),
                Node(name: "pool", op: .globalAvgPool, inputs: ["conv"], outputs: ["pooled"]),
                Node(name: "flatten", op: .flatten, inputs: ["pooled"], outputs: ["features"], attributes: Attributes(axis: 1)),
                Node(name: "fc1", op: .dense, inputs: ["features", "fc1.w"], outputs: ["hidden"]),
                Node(name: "fc2", op: .dense, inputs: ["hidden", "fc2.w"], outputs: ["logits"]),
            ])
        var md = ModelMetadata(task: .imageClassifier, graph: graph, labels: ["blue", "red"])
        md.outputKind = "logits"
        md.featureTensor = "features"
        md.image = ImagePreprocessing(height: 8, width: 8, scale: 1.0 / 255, resize: "exact")
        return Model(metadata: md, tensors: [
            StoredTensor(name: "conv.w", tensor: Tensor(shape: [1, 1, 3, 256], data: weights(3 * 256))),
            StoredTensor(name: "fc1.w", tensor: Tensor(shape: [256, 512], data: weights(256 * 512))),
            StoredTensor(name: "fc2.w", tensor: Tensor(shape: [512, 2], data: weights(512 * 2))),
        ])
    }

    /// One command that writes `out`; `old` is what `out` holds before each run, `new` what one uninterrupted
    /// run writes.
    struct Command {
        var name: String
        var args: [String]
        var out: String
        var old: [UInt8] = []
        var new: [UInt8] = []
        var seconds = 0.0
    }

    struct Tally: CustomStringConvertible {
        var runs = 0, hookKills = 0, realKills = 0, realFinished = 0, old = 0, new = 0, mixed = 0
        var tempsLeft = 0, maxTemps = 0
        var description: String {
            "\(runs) runs: \(hookKills) hook kills, \(realKills) real kills (\(realFinished) finished first); " +
            "afterwards old \(old), new \(new), mixed \(mixed); killed runs that left a temporary file \(tempsLeft), " +
            "most temporaries at once \(maxTemps)"
        }
    }

    /// Starts `mltool args`; SIGKILLs it after `killAfter` seconds unless it finished. Returns the exit status, or
    /// nil when SIGKILL ended it.
    static func run(_ args: [String], env: [String: String], killAfter: Double?) throws -> Int32? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tool.path ?? "/nonexistent")
        p.arguments = args
        var environment = ProcessInfo.processInfo.environment
        for (k, v) in env { environment[k] = v }
        p.environment = environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        if let killAfter {
            usleep(useconds_t(killAfter * 1e6))
            kill(p.processIdentifier, SIGKILL)
        }
        p.waitUntilExit()
        if p.terminationReason == .uncaughtSignal {
            #expect(p.terminationStatus == SIGKILL, "\(args[0]) died of signal \(p.terminationStatus)")
            return nil
        }
        return p.terminationStatus
    }

    static func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }

    static func temporaries(of out: String) -> [String] {
        let dir = (out as NSString).deletingLastPathComponent, base = (out as NSString).lastPathComponent
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix(".\(base).tmp-") }
    }

    /// The fixtures every test here uses: an image folder, the tiny extractor, the wide model and a warm cache.
    struct Fixture {
        let dir: TempDir
        var env: [String: String] { ["MLTOOL_CACHE": dir.file("cache")] }
        init() throws {
            dir = try TempDir()
            try Make.colourFolders(in: dir.file("images"), perClass: 12)
            try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
            try ModelFile.write(CrashSafetyTests.wideClassifier(), to: dir.file("wide.bin"))
        }

        /// train / quantize / export onnx / export coreml, each with an "old" output (from different settings).
        func commands() throws -> [Command] {
            let d = dir
            var cs = [
                Command(name: "train", args: ["train", d.file("images"), "--extractor", d.file("tiny.bin"), "-q", "-o", d.file("out/model.bin")],
                        out: d.file("out/model.bin")),
                Command(name: "quantize", args: ["quantize", d.file("wide.bin"), "--bits", "8", "--no-eval", "--no-bias-correction", "-q", "-o", d.file("out/q.bin")],
                        out: d.file("out/q.bin")),
                Command(name: "export onnx", args: ["export", d.file("wide.bin"), "--to", "onnx", "-o", d.file("out/m.onnx")],
                        out: d.file("out/m.onnx")),
                Command(name: "export coreml", args: ["export", d.file("wide.bin"), "--to", "coreml", "-o", d.file("out/m.mlmodel")],
                        out: d.file("out/m.mlmodel")),
            ]
            try FileManager.default.createDirectory(atPath: d.file("out"), withIntermediateDirectories: true)
            // "old": the same commands with other settings (another seed, other bits, the small model).
            let olds: [[String]] = [
                ["train", d.file("images"), "--extractor", d.file("tiny.bin"), "-q", "--seed", "7", "-o", d.file("old/model.bin")],
                ["quantize", d.file("wide.bin"), "--bits", "16", "--no-eval", "--no-bias-correction", "-q", "-o", d.file("old/q.bin")],
                ["export", d.file("tiny.bin"), "--to", "onnx", "-o", d.file("old/m.onnx")],
                ["export", d.file("tiny.bin"), "--to", "coreml", "-o", d.file("old/m.mlmodel")],
            ]
            try FileManager.default.createDirectory(atPath: d.file("old"), withIntermediateDirectories: true)
            for i in cs.indices {
                let o = try Tool.run(olds[i], env: env)
                try #require(o.status == 0, "\(cs[i].name) (old): \(o.stderr)")
                cs[i].old = try #require(bytes(olds[i].last!))
                let start = Date()
                let n = try Tool.run(cs[i].args, env: env)
                cs[i].seconds = Date().timeIntervalSince(start)
                try #require(n.status == 0, "\(cs[i].name): \(n.stderr)")
                cs[i].new = try #require(bytes(cs[i].out))
                // Deterministic: a second uninterrupted run writes the same bytes.
                let again = try Tool.run(cs[i].args, env: env)
                try #require(again.status == 0)
                #expect(bytes(cs[i].out) == cs[i].new, "\(cs[i].name) is not deterministic: old-or-new cannot be byte-checked")
                #expect(cs[i].old != cs[i].new && cs[i].new.count > 1000)
            }
            return cs
        }
    }

    /// 200 runs over an existing output, spread over the four commands, half killed by the byte hook at a random
    /// byte of the write, half by a real SIGKILL at a random moment of the run.
    @Test func killedWritesLeaveTheOldOrTheNewFile() throws {
        let fx = try Fixture(); defer { fx.dir.cleanup() }
        let commands = try fx.commands()
        var rng = SplitMix64(seed: 20261202)
        var tallies = [Tally](repeating: Tally(), count: commands.count)
        for i in 0..<200 {
            let c = i % commands.count
            let cmd = commands[c]
            try Data(cmd.old).write(to: URL(fileURLWithPath: cmd.out))
            let hook = rng.next() % 2 == 0
            let status: Int32?
            if hook {
                let n = Int(rng.next() % UInt64(cmd.new.count))
                status = try Self.run(cmd.args, env: fx.env.merging(["MLTOOL_TEST_CRASH_AFTER_BYTES": "\(n)"]) { $1 }, killAfter: nil)
                #expect(status == nil, "\(cmd.name): the hook at byte \(n) of \(cmd.new.count) did not kill")
                tallies[c].hookKills += 1
            } else {
                let delay = Double(rng.nextUnit()) * cmd.seconds * 1.2
                status = try Self.run(cmd.args, env: fx.env, killAfter: delay)
                if status == nil { tallies[c].realKills += 1 } else { tallies[c].realFinished += 1; #expect(status == 0) }
            }
            tallies[c].runs += 1
            let now = Self.bytes(cmd.out)
            if now == cmd.old { tallies[c].old += 1 } else if now == cmd.new { tallies[c].new += 1 } else {
                tallies[c].mixed += 1
                Issue.record("\(cmd.name) run \(i): the output is neither the old file nor the new one (\(now?.count ?? -1) bytes)")
            }
            if status == nil && now == cmd.old {
                let temps = Self.temporaries(of: cmd.out)
                if !temps.isEmpty { tallies[c].tempsLeft += 1 }
                tallies[c].maxTemps = max(tallies[c].maxTemps, temps.count)
            }
        }
        // A killed writer's temporary file is removed by the next write of the same output.
        for cmd in commands {
            let r = try Tool.run(cmd.args, env: fx.env)
            #expect(r.status == 0)
            #expect(Self.temporaries(of: cmd.out) == [], "\(cmd.name): temporaries left after a clean run")
            #expect(Self.bytes(cmd.out) == cmd.new)
        }
        #expect(tallies.map(\.runs).reduce(0, +) == 200)
        #expect(tallies.map(\.mixed).reduce(0, +) == 0)
        // The hook killed inside the write every time, so some killed runs must have left their temporary file.
        #expect(tallies.map(\.tempsLeft).reduce(0, +) > 0)
        for (cmd, t) in zip(commands, tallies) {
            print(String(format: "CRASH-SAFETY %@ (uninterrupted %.2f s, %d B): %@", cmd.name, cmd.seconds, cmd.new.count, t.description))
        }
    }

    /// A full disk (a 2 MiB tmpfs holding the old file, then filled) and a read-only folder (a tmpfs remounted ro): every command exits 73,
    /// names the file and the reason, and the old file is intact with no temporary file left. The mounts are made
    /// in a private mount namespace (unshare --mount as root, else a user namespace).
    @Test func fullDiskAndReadOnlyFolderKeepTheOldFileAndExit73() throws {
        let fx = try Fixture(); defer { fx.dir.cleanup() }
        let commands = try fx.commands()
        let d = fx.dir
        var script = """
            set -u
            W=\(d.path)
            mkdir -p "$W/full" "$W/ro"
            mount -t tmpfs -o size=2m tmpfs "$W/full" || exit 90
            mount -t tmpfs -o size=4m tmpfs "$W/ro" || exit 90
            run() { # case name, old file, output name, args...
              c=$1; old=$2; name=$3; shift 3
              cp "$old" "$W/full/$name" && cp "$old" "$W/ro/$name" || exit 92
              dd if=/dev/zero of="$W/full/fill" bs=4096 2>/dev/null
              sync
              mount -o remount,ro "$W/ro" || exit 91
              "\(Tool.path ?? "")" "$@" -o "$W/full/$name" >/dev/null 2>"$W/$c.full.err"; echo $? >"$W/$c.full.rc"
              "\(Tool.path ?? "")" "$@" -o "$W/ro/$name" >/dev/null 2>"$W/$c.ro.err"; echo $? >"$W/$c.ro.rc"
              cmp -s "$old" "$W/full/$name" && echo same >"$W/$c.full.cmp"
              cmp -s "$old" "$W/ro/$name" && echo same >"$W/$c.ro.cmp"
              ls -A "$W/full" >"$W/$c.full.ls"; ls -A "$W/ro" >"$W/$c.ro.ls"
              rm -f "$W/full/fill" "$W/full/$name"
              mount -o remount,rw "$W/ro" || exit 91
              rm -f "$W/ro/$name"
            }

            """
        for (i, c) in commands.enumerated() {
            let name = (c.out as NSString).lastPathComponent
            try Data(c.old).write(to: URL(fileURLWithPath: d.file("old\(i)")))
            let args = c.args.prefix(while: { $0 != "-o" }).map { "'\($0)'" }.joined(separator: " ")
            script += "run c\(i) '\(d.file("old\(i)"))' '\(name)' \(args)\n"
        }
        try script.write(toFile: d.file("mounts.sh"), atomically: true, encoding: .utf8)
        var how = "unshare --mount"
        var r = try Self.shell(["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", d.file("mounts.sh")], env: fx.env)
        if r.status == 90 || r.status == 91 || r.status == 1 && r.stderr.contains("unshare") {
            how = "unshare --user --map-root-user --mount"
            r = try Self.shell(["/usr/bin/unshare", "--user", "--map-root-user", "--mount", "/bin/sh", d.file("mounts.sh")], env: fx.env)
        }
        if r.status == 92 { Issue.record("could not copy the old files into the mounts: \(r.stderr)"); return }
        guard r.status == 0 else {
            Oracles.missing("crash safety: cannot make a small tmpfs or a read-only mount here (\(how): exit \(r.status): \(r.stderr))")
            return
        }
        func read(_ f: String) -> String { ((try? String(contentsOfFile: d.file(f), encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
        var lines = [String]()
        for (i, c) in commands.enumerated() {
            let name = (c.out as NSString).lastPathComponent
            for (kind, reason) in [("full", "No space left on device"), ("ro", "Read-only file system")] {
                let rc = read("c\(i).\(kind).rc"), err = read("c\(i).\(kind).err")
                #expect(rc == "73", "\(c.name) on the \(kind) folder: exit \(rc): \(err)")
                #expect(err.contains("\(d.path)/\(kind)/\(name)") && err.contains(reason), "\(c.name) (\(kind)): \(err)")
                #expect(read("c\(i).\(kind).cmp") == "same", "\(c.name) (\(kind)): the old file changed")
                let left = read("c\(i).\(kind).ls").split(separator: "\n").map(String.init).filter { $0 != "fill" && $0 != "lost+found" }
                #expect(left == [name], "\(c.name) (\(kind)): left \(left)")
                lines.append("\(c.name) \(kind): exit \(rc), old file intact: \(read("c\(i).\(kind).cmp") == "same"), message: \(err.split(separator: "\n").first ?? "")")
            }
        }
        print("CRASH-SAFETY mounts via \(how):\n" + lines.joined(separator: "\n"))
    }

    static func shell(_ args: [String], env: [String: String]) throws -> Tool.Result {
        try Tool.exec(args[0], Array(args.dropFirst()), env: env)
    }

    /// The entries of a feature cache, by file name (temporary files and folders apart).
    static func entries(_ cache: String) -> [String: [UInt8]] {
        var out = [String: [UInt8]]()
        for shard in (try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? [] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: cache + "/" + shard)) ?? [] {
                out[shard + "/" + name] = bytes(cache + "/" + shard + "/" + name)
            }
        }
        return out
    }

    /// `kill -9` during feature extraction (the hook at a random byte of the cache writes, and real kills at random
    /// delays), then the same command again: the same model and the same cache entries as one uninterrupted run.
    /// Truncated, bit-flipped and empty entries are detected, recomputed (equal to the originals) and never used.
    @Test func featureCacheSurvivesKillsAndRefusesDamagedEntries() throws {
        let fx = try Fixture(); defer { fx.dir.cleanup() }
        let d = fx.dir
        let args = ["train", d.file("images"), "--extractor", d.file("tiny.bin"), "-o", d.file("c.bin")]
        func train(_ cache: String, extra: [String: String] = [:], killAfter: Double? = nil) throws -> Int32? {
            try Self.run(args, env: ["MLTOOL_CACHE": cache].merging(extra) { $1 }, killAfter: killAfter)
        }
        let start = Date()
        #expect(try train(d.file("ref")) == 0)
        let seconds = Date().timeIntervalSince(start)
        let model = try #require(Self.bytes(d.file("c.bin")))
        let reference = Self.entries(d.file("ref/features"))
        #expect(reference.count == 24, "one entry per image: \(reference.keys.sorted())")
        let entrySize = try #require(reference.values.first?.count)
        var rng = SplitMix64(seed: 6)
        var hookKills = 0, realKills = 0, realFinished = 0, partialCaches = 0, tempsSwept = 0
        for i in 0..<20 {
            let cache = d.file("c\(i)")
            try? FileManager.default.removeItem(atPath: d.file("c.bin"))
            let status: Int32?
            if i % 2 == 0 {
                let n = Int(rng.next() % UInt64(reference.count * entrySize))
                status = try train(cache, extra: ["MLTOOL_TEST_CRASH_AFTER_BYTES": "\(n)"])
                #expect(status == nil, "the hook at cache byte \(n) did not kill")
                hookKills += 1
            } else {
                status = try train(cache, killAfter: Double(rng.nextUnit()) * seconds)
                if status == nil { realKills += 1 } else { realFinished += 1 }
            }
            // Whatever the kill left: every entry visible under its name is whole and right.
            let partial = Self.entries(cache + "/features")
            let visible = partial.filter { !$0.key.contains("/.") }
            for (k, v) in visible { #expect(reference[k] == v, "a torn or wrong cache entry \(k) is visible") }
            if status == nil && visible.count > 0 && visible.count < reference.count { partialCaches += 1 }
            let temps = partial.count - visible.count
            #expect(try train(cache) == 0)
            #expect(Self.bytes(d.file("c.bin")) == model, "run \(i): the model after a kill and a rerun differs from an uninterrupted run's")
            let after = Self.entries(cache + "/features")
            #expect(after == reference, "run \(i): the cache after the rerun differs (\(after.count) entries)")
            if temps > 0 { tempsSwept += 1 }
        }
        // Damaged entries: truncated, one flipped bit in a feature, empty, and a wrong length field.
        let cache = d.file("damaged")
        #expect(try train(cache) == 0)
        let keys = reference.keys.sorted()
        let root = cache + "/features/"
        func damage(_ k: String, _ f: (inout [UInt8]) -> Void) throws {
            var b = try #require(reference[k])
            f(&b)
            try Data(b).write(to: URL(fileURLWithPath: root + k))
        }
        try damage(keys[0]) { $0.removeLast(7) }
        try damage(keys[1]) { $0[50] ^= 0x10 }
        try damage(keys[2]) { $0 = [] }
        try damage(keys[3]) { $0[40] &+= 1 }
        let r = try Tool.run(args, env: ["MLTOOL_CACHE": cache])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("features: 4 extracted, 20 from cache"), "\(r.stderr)")
        #expect(Self.bytes(d.file("c.bin")) == model, "a damaged cache entry changed the model")
        #expect(Self.entries(root) == reference, "the damaged entries were not recomputed to the originals")
        print("CRASH-SAFETY feature cache: 20 killed trainings (\(hookKills) hook, \(realKills) real kills, \(realFinished) finished first), " +
              "\(partialCaches) left a partial cache, \(tempsSwept) left temporaries (swept by the rerun); every rerun gave the " +
              "uninterrupted model and cache; 4 damaged entries (truncated, bit flip, empty, bad length) recomputed, model unchanged")
    }
}
