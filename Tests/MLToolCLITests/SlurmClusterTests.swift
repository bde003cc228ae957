import Foundation
import MLToolTestSupport
import Testing

/// Issue 21 item 4, a real scheduler: `Tests/cluster/run_cluster_test.py` starts a single-node Slurm cluster from
/// Debian's `slurm-wlm` and `munge` (`Tests/cluster/slurm.sh`), runs a generic `sbatch --array=0-3`, then
/// `deploy/slurm/extract.sbatch`: 4 extraction shards into one cache, shard 2 killed part-way (`scancel`), the
/// dependent train job left pending, shard 2 alone resubmitted (`extract.sbatch resubmit 2 TRAIN`), the train job
/// run; its model must equal a one-process run's. `Tests/cluster/run_k8s_job.py` runs the containers of
/// `deploy/kubernetes/*.yaml` here with the variables the Job controller sets.
/// The Slurm flow runs twice: with `Tests/cluster/fake-mltool.sh`, which does what `mltool train --features-only
/// --shard` is specified to do on 40 file names (and records what each shard extracted and found), and with the real
/// mltool over Fashion-MNIST small (20 images per class), its model compared byte for byte with one process's.
/// Where Slurm cannot start (slurm.sh exits 77) the test says why: a loud skip, a failure under
/// MLTOOL_REQUIRE_ORACLES=1 (`make test`, CI, which install slurm-wlm and munge).
@Suite(.serialized) struct SlurmClusterTests {
    static let cluster = SharedDatasets.repository.appendingPathComponent("Tests/cluster")
    static let fakeMLTool = cluster.appendingPathComponent("fake-mltool.sh").path
    static let fashion = SharedDatasets.repository.appendingPathComponent("datasets/fashion-mnist-small").path
    static let extractor = SharedDatasets.repository.appendingPathComponent("models/efficientnet-lite0.bin").path
    static let deploy = SharedDatasets.repository.appendingPathComponent("deploy/kubernetes")

    struct Smoke: Decodable {
        struct Task: Decodable { var file: String, resubmitted: Bool, id: Int, count: Int, min: Int, host: String }
        var tasks: [Task]
        var states: [String: String]
        var array_seconds: Double
    }
    struct Flow: Decodable {
        var first_array: [String: String], train_after_kill: [String: String]
        var resubmitted: [String: String], train: [String: String]
        var train_log: String, train_extracted: Int?, sharded_model: String?
        var one_process_model: String, one_process_extracted: Int?
        var manifests: [String: [String]]?
        var resubmitted_log: [String]
        var sharded_seconds: Double, one_process_seconds: Double
    }
    struct Report: Decodable {
        var up: String?, smoke: Smoke?, fake: Flow?, real: Flow?, error: String?
        var seconds: Double, down_status: Int32
        var cluster_status: String?, slurmctld_log: String?
        enum CodingKeys: String, CodingKey {
            case up, smoke, fake, real, error, seconds, down_status, cluster_status
            case slurmctld_log = "slurmctld.log"
        }
    }

    /// Runs a Python script of Tests/cluster; its status and stderr.
    static func script(_ name: String, _ args: [String]) throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", cluster.appendingPathComponent(name).path] + args
        p.standardOutput = FileHandle.nullDevice
        let err = Pipe()
        p.standardError = err
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text)
    }

    /// The real mltool ($MLTOOL_BIN) with Fashion-MNIST small and the extractor beside it; nil (a loud skip, a
    /// failure under MLTOOL_REQUIRE_ORACLES=1) when one is missing.
    static func realMLTool() -> String? {
        guard let bin = Oracles.mltoolBinary else {
            Oracles.missing("SlurmClusterTests (real mltool): \(Oracles.mltoolBinaryProblem)")
            return nil
        }
        guard FileManager.default.fileExists(atPath: fashion + "/train"),
              FileManager.default.fileExists(atPath: extractor) else {
            Oracles.missing("SlurmClusterTests (real mltool): needs \(fashion)/train and \(extractor) (make test makes them)")
            return nil
        }
        return bin
    }

    @Test func arrayJobsFillTheCacheAndAResubmittedShardCompletesIt() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let out = dir.file("cluster.json")
        var args = ["--report", out]
        let real = Self.realMLTool()
        if let real {
            args += ["--mltool", real, "--data", Self.fashion + "/train", "--extractor", Self.extractor, "--per-class", "20"]
        }
        let run = try Self.script("run_cluster_test.py", args)
        if run.status == 77 {
            Oracles.missing("SlurmClusterTests: Slurm cannot start here: \(run.stderr.split(separator: "\n").suffix(20).joined(separator: "\n"))")
            return
        }
        try #require(run.status == 0, "run_cluster_test.py exited \(run.status): \(run.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: URL(fileURLWithPath: out)))
        try #require(report.error == nil, """
            \(report.error ?? ""): \(report.cluster_status ?? "")
            slurmctld.log: \(report.slurmctld_log ?? "")
            """)
        #expect(report.down_status == 0, "slurm.sh down failed")
        print("SlurmClusterTests: \(report.up ?? "") — \(report.seconds) s with the cluster up")

        // The generic array: 4 tasks, each told its index and the array's size; a lone resubmitted index is told
        // COUNT=1 and MIN=its index (why extract.sbatch passes N itself, never SLURM_ARRAY_TASK_COUNT).
        let smoke = try #require(report.smoke)
        let first = smoke.tasks.filter { !$0.resubmitted }
        #expect(first.map(\.id).sorted() == [0, 1, 2, 3], "array tasks seen: \(smoke.tasks)")
        #expect(first.allSatisfy { $0.count == 4 && $0.min == 0 }, "array tasks: \(first)")
        #expect(smoke.states.values.sorted() == Array(repeating: "COMPLETED", count: 4), "\(smoke.states)")
        let again = smoke.tasks.filter(\.resubmitted)
        #expect(again.count == 1 && again.first?.id == 2 && again.first?.count == 1 && again.first?.min == 2,
                "a lone --array=2: \(again)")

        let fake = try #require(report.fake)
        check(fake, items: 40, label: "fake mltool")
        // The killed shard's rerun found the half its predecessor wrote and extracted only the rest.
        let manifests = fake.manifests ?? [:]
        #expect(manifests.count == 4, "\(manifests)")
        let rerun = manifests["shard-2-of-4.txt"] ?? []
        #expect(rerun.count == 1 && rerun[0].contains("SLURM_ARRAY_TASK_COUNT=1"), "shard 2's manifest: \(rerun)")
        if let line = rerun.first, let found = Self.field(line, "found"), let extracted = Self.field(line, "extracted") {
            #expect(found > 0 && extracted > 0, "shard 2 after its kill: \(line)")
        } else {
            Issue.record("shard 2 left no manifest line: \(rerun)")
        }
        let items = manifests.values.compactMap { $0.last.flatMap { Self.field($0, "items") } }.reduce(0, +)
        #expect(items == 40, "the shards' items: \(manifests)")

        if real != nil {
            let flow = try #require(report.real, "the real mltool's flow did not run")
            check(flow, items: 200, label: "mltool")
            // The killed shard had written part of its features (hold-shard.sh waits for one): its rerun found them.
            let rerun = flow.resubmitted_log.joined(separator: "\n")
            let found = rerun.firstMatch(of: /(\d+) from cache/).flatMap { Int($0.1) } ?? 0
            #expect(found > 0, "the resubmitted shard found none of its killed predecessor's features: \(rerun)")
            print("SlurmClusterTests: 200 images: sharded (4 tasks, one killed and resubmitted, then train) \(flow.sharded_seconds) s, one process \(flow.one_process_seconds) s; resubmitted shard: \(rerun)")
        }
    }

    /// The flow's outcome: shard 2 cancelled, the train job held back, shard 2 resubmitted alone, then the train job
    /// extracting nothing and writing the one-process model.
    func check(_ flow: Flow, items: Int, label: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(flow.first_array["2"]?.hasPrefix("CANCELLED") == true, "\(label): shard 2 after scancel: \(flow.first_array)", sourceLocation: sourceLocation)
        #expect(["0", "1", "3"].allSatisfy { flow.first_array[$0] == "COMPLETED" }, "\(label): \(flow.first_array)", sourceLocation: sourceLocation)
        #expect(flow.train_after_kill.values.allSatisfy { $0.contains("PENDING") && $0.contains("DependencyNeverSatisfied") },
                "\(label): the train job after the kill: \(flow.train_after_kill)", sourceLocation: sourceLocation)
        #expect(flow.resubmitted.values.sorted() == ["COMPLETED"], "\(label): resubmitted shard: \(flow.resubmitted)", sourceLocation: sourceLocation)
        #expect(flow.train.values.sorted() == ["COMPLETED"], "\(label): train job: \(flow.train)\n\(flow.train_log)", sourceLocation: sourceLocation)
        #expect(flow.train_extracted == 0, "\(label): the train job extracted features: \(flow.train_log)", sourceLocation: sourceLocation)
        #expect(flow.one_process_extracted == items, "\(label): one process extracted \(flow.one_process_extracted ?? -1), expected \(items)", sourceLocation: sourceLocation)
        #expect(flow.sharded_model != nil && flow.sharded_model == flow.one_process_model,
                "\(label): sharded model \(flow.sharded_model ?? "missing") != one-process \(flow.one_process_model)", sourceLocation: sourceLocation)
    }

    /// `key=N` in a manifest line.
    static func field(_ line: String, _ key: String) -> Int? {
        line.split(separator: " ").first { $0.hasPrefix(key + "=") }.flatMap { Int($0.dropFirst(key.count + 1)) }
    }

    struct K8sReport: Decodable {
        struct File: Decodable { var file: String, kinds: [String], jobs: [Job] }
        struct Job: Decodable {
            struct Mount: Decodable { var volume: String, claim: String?, readOnly: Bool, accessModes: [String]? }
            struct Run: Decodable {
                var argv: [String], status: Int32, seconds: Double, output: String
                var index: Int?
            }
            var completionMode: String, completions: Int, parallelism: Int, containers: Int, runs: [Run]
            var name: String?, backoffLimitPerIndex: Int?, restartPolicy: String?
            var mounts: [String: Mount]?, env: [String: String]?
        }
        var files: [File]
    }

    /// deploy/kubernetes: the Indexed Job's shape (completions = parallelism = MLTOOL_SHARD_COUNT, a ReadWriteMany
    /// cache, per-index retries), then its container command once per JOB_COMPLETION_INDEX and the train Job's.
    @Test func kubernetesIndexedJobCommandsRunHere() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let real = Self.realMLTool()
        let data = dir.file("data"), cache = dir.file("cache")
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        var expected = 40
        if real != nil {
            // /data/train: the first 20 images of each Fashion-MNIST class, linked.
            expected = 0
            let fm = FileManager.default
            for label in try fm.contentsOfDirectory(atPath: Self.fashion + "/train").sorted() {
                let to = data + "/train/" + label
                try fm.createDirectory(atPath: to, withIntermediateDirectories: true)
                for name in try fm.contentsOfDirectory(atPath: Self.fashion + "/train/" + label).sorted().prefix(20) {
                    try fm.createSymbolicLink(atPath: to + "/" + name, withDestinationPath: Self.fashion + "/train/" + label + "/" + name)
                    expected += 1
                }
            }
        } else {
            for k in 0..<40 {
                let folder = data + "/train/label\(k % 4)"
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                try Data("item \(k)\n".utf8).write(to: URL(fileURLWithPath: folder + "/item\(k).txt"))
            }
        }
        let out = dir.file("k8s.json")
        let run = try Self.script("run_k8s_job.py", [
            "--mltool", real ?? Self.fakeMLTool, "--volume", "data=" + data, "--volume", "cache=" + cache,
            "--cwd", SharedDatasets.repository.path, "--report", out,
            Self.deploy.appendingPathComponent("extract-job.yaml").path, Self.deploy.appendingPathComponent("train-job.yaml").path,
        ])
        if run.status == 3 {
            Oracles.missing("SlurmClusterTests: \(run.stderr)")
            return
        }
        try #require(run.status == 0, "run_k8s_job.py exited \(run.status): \(run.stderr)")
        let report = try JSONDecoder().decode(K8sReport.self, from: Data(contentsOf: URL(fileURLWithPath: out)))
        try #require(report.files.count == 2 && report.files.allSatisfy { $0.jobs.count == 1 }, "\(report.files.map(\.kinds))")
        let extract = report.files[0].jobs[0], train = report.files[1].jobs[0]

        #expect(extract.completionMode == "Indexed" && extract.containers == 1 && extract.restartPolicy == "Never")
        #expect(extract.completions == 4 && extract.parallelism == 4 && extract.backoffLimitPerIndex != nil,
                "completions \(extract.completions), parallelism \(extract.parallelism)")
        #expect(extract.env?["MLTOOL_SHARD_COUNT"] == String(extract.completions), "MLTOOL_SHARD_COUNT must equal completions: \(extract.env ?? [:])")
        for job in [extract, train] {
            let mounts = job.mounts ?? [:]
            let cacheMount = mounts.first { $0.value.volume == "cache" }
            #expect(cacheMount?.value.accessModes == ["ReadWriteMany"] && cacheMount?.value.readOnly == false,
                    "\(job.name ?? ""): the cache must be a ReadWriteMany claim: \(mounts)")
            #expect(job.env?["MLTOOL_CACHE"] == cacheMount?.key, "\(job.name ?? ""): MLTOOL_CACHE is not the cache's mountPath")
        }
        #expect(extract.runs.map(\.index) == [0, 1, 2, 3])
        for r in extract.runs + train.runs {
            #expect(r.status == 0, "index \(r.index.map(String.init) ?? "-"): \(r.argv.joined(separator: " ")) exited \(r.status): \(r.output)")
        }
        #expect(extract.runs.allSatisfy { $0.argv.contains("--features-only") && $0.argv.contains("auto") })
        let trainOutput = train.runs.first?.output ?? ""
        #expect(trainOutput.contains("features: 0 extracted, \(expected) from cache"), "the train Job extracted again: \(trainOutput)")
        #expect(FileManager.default.fileExists(atPath: cache + "/model.bin"), "no model in the cache volume")
    }
}
