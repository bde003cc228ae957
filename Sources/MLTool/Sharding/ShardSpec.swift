import Foundation
import MLToolCore
import MLToolData

/// Shard `index` of `count`: the part of a data set one process (a Slurm array task, a Kubernetes Indexed Job pod,
/// a torchrun rank) works on, so that N independent processes together cover every item exactly once and meet in
/// the shared feature cache (docs/SCALE.md).
///
/// Assignment rule: an item belongs to shard `h mod count`, where `h` is the first 8 bytes, read big-endian, of the
/// SHA-256 of its path relative to the data root (UTF-8, `/`-separated, as `SplitManifest.relative` gives it; an
/// item outside the root hashes its absolute path). The rule looks at nothing but that one path, so adding or
/// removing files never moves another file to a different shard, and every machine agrees on it wherever the
/// shared file system is mounted.
public struct ShardSpec: Sendable, Equatable, CustomStringConvertible {
    /// 0-based: `0 ≤ index < count`.
    public let index: Int
    public let count: Int
    /// Where the numbers came from, for messages and the manifest ("--shard 1/4", "SLURM_ARRAY_TASK_ID=3, …").
    public let origin: String

    /// Everything in one shard (`--features-only` without `--shard`).
    public static let whole = ShardSpec(checked: 0, 1, origin: "the whole data set")

    private init(checked index: Int, _ count: Int, origin: String) {
        self.index = index; self.count = count; self.origin = origin
    }

    /// Shard `index` of `count`; `PipelineError.invalidParameter` (a usage error) unless `count ≥ 1` and
    /// `0 ≤ index < count`, naming `origin`.
    public init(index: Int, count: Int, origin: String? = nil) throws {
        let from = origin ?? "--shard \(index)/\(count)"
        guard count >= 1 else { throw Self.refused(from, "the shard count must be at least 1") }
        guard index >= 0, index < count else {
            throw Self.refused(from, "the shard index must be in 0...\(count - 1) (shards are numbered from 0)")
        }
        self.init(checked: index, count, origin: from)
    }

    public var description: String { "\(index)/\(count)" }

    public static func == (a: ShardSpec, b: ShardSpec) -> Bool { a.index == b.index && a.count == b.count }

    // MARK: - Assignment

    /// The shard (of `count`) that owns the item at `relativePath`.
    public static func shard(ofRelativePath relativePath: String, count: Int) -> Int {
        guard count > 1 else { return 0 }
        var h = SHA256()
        h.update(Array(relativePath.utf8))
        let digest = h.finalize()
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(value % UInt64(count))
    }

    /// Whether this shard owns the item at `relativePath` (relative to the data root).
    public func owns(relativePath: String) -> Bool { Self.shard(ofRelativePath: relativePath, count: count) == index }

    /// The files of `inputs` (command-line arguments: folders and files, expanded by `DirectoryWalk.expand`) this
    /// shard owns, in order. A file below a folder argument is assigned by its path relative to that folder; a file
    /// given by itself by its path as given. `mltool predict MODEL DATA --shard I/N` classifies these.
    public func files(expanding inputs: [String], keep: (String) -> Bool = { _ in true }) throws -> [String] {
        var out = [String]()
        for given in inputs {
            var root = Substring(given)
            while root.count > 1 && root.hasSuffix("/") { root = root.dropLast() }
            for file in try DirectoryWalk.expand([given], keep: keep) {
                let relative = file.hasPrefix(root + "/") ? String(file.dropFirst(root.count + 1)) : file
                if owns(relativePath: relative) { out.append(file) }
            }
        }
        return out
    }

    // MARK: - Parsing

    /// The environment variables `auto` reads, in this order.
    public static let environmentSources = [
        "SLURM_ARRAY_TASK_ID (with SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN)",
        "JOB_COMPLETION_INDEX (with MLTOOL_SHARD_COUNT or --shard auto/N)",
        "RANK (with WORLD_SIZE)",
    ]

    /// Parses `--shard` text: `I/N`; `auto`, which reads the scheduler's environment; or `auto/N`, the same with the
    /// count given. `auto` looks, in order, at
    /// - Slurm job arrays: `SLURM_ARRAY_TASK_ID` and `SLURM_ARRAY_TASK_COUNT`; the index is counted from
    ///   `SLURM_ARRAY_TASK_MIN` (arrays need not start at 0: `--array=1-4` is shards 0...3 of 4). An array with a step
    ///   or gaps (`--array=0-9:2`, `--array=1,3,7`) is refused: its ids do not number the shards 0..<N. An array of
    ///   one task with the count given (`auto/N`, `MLTOOL_SHARD_COUNT`) is the resubmission of shard ID of N;
    /// - Kubernetes Indexed Jobs: `JOB_COMPLETION_INDEX`, with the count from `MLTOOL_SHARD_COUNT` or `auto/N`;
    /// - `RANK` and `WORLD_SIZE` (torchrun, MPI wrappers).
    /// A count given both ways must agree. Every refusal is `PipelineError.invalidParameter` (exit 64) naming the
    /// option or variable and its value.
    public static func parse(_ text: String, option: String = "--shard",
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ShardSpec {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2 else { throw refused("\(option) '\(text)'", "expected I/N, auto or auto/N") }
        var given: Int?
        if parts.count == 2 {
            guard let n = Int(parts[1]) else { throw refused("\(option) '\(text)'", "the count '\(parts[1])' is not an integer") }
            guard n >= 1 else { throw refused("\(option) '\(text)'", "the shard count must be at least 1") }
            given = n
        }
        if parts[0] == "auto" { return try fromEnvironment(environment, count: given, option: "\(option) \(text)") }
        guard let n = given else { throw refused("\(option) '\(text)'", "expected I/N (e.g. 0/4), auto or auto/N") }
        guard let i = Int(parts[0]) else { throw refused("\(option) '\(text)'", "the index '\(parts[0])' is not an integer") }
        return try ShardSpec(index: i, count: n, origin: "\(option) \(text)")
    }

    private static func fromEnvironment(_ env: [String: String], count given: Int?, option: String) throws -> ShardSpec {
        func number(_ name: String) throws -> Int? {
            guard let raw = env[name] else { return nil }
            let text = raw.trimmingCharacters(in: .whitespaces)
            guard let v = Int(text), v >= 0 else { throw refused("\(name)=\(raw)", "expected an integer ≥ 0") }
            return v
        }
        /// The count from `name` and/or the flag, which must agree when both are there.
        func count(_ name: String?) throws -> Int? {
            let fromEnv = try name.flatMap { try number($0) }
            if let e = fromEnv, let g = given, e != g, let name {
                throw refused("\(option)", "the count \(g) contradicts \(name)=\(e)")
            }
            return fromEnv ?? given
        }
        if let id = try number("SLURM_ARRAY_TASK_ID") {
            // One index resubmitted alone (`sbatch --array=2`) is an array of one (COUNT 1, MIN = MAX = 2): with the
            // count given (`auto/N` or MLTOOL_SHARD_COUNT) the task id itself is the shard, so it redoes shard 2 of
            // N, not the whole data set. (Arrays should therefore start at 0, as deploy/slurm/extract.sbatch's do.)
            if try number("SLURM_ARRAY_TASK_COUNT") == 1, env["MLTOOL_SHARD_COUNT"] != nil || given != nil,
               let n = try count("MLTOOL_SHARD_COUNT"), n > 1 {
                return try ShardSpec(index: id, count: n, origin: "SLURM_ARRAY_TASK_ID=\(id) (an array of one task; count \(n) given)")
            }
            guard let n = try count("SLURM_ARRAY_TASK_COUNT") else {
                throw refused("SLURM_ARRAY_TASK_ID=\(id)", "SLURM_ARRAY_TASK_COUNT is not set; give --shard auto/N")
            }
            let min = try number("SLURM_ARRAY_TASK_MIN") ?? 0
            if let step = try number("SLURM_ARRAY_TASK_STEP"), step != 1 {
                throw refused("SLURM_ARRAY_TASK_STEP=\(step)",
                              "the array has a step; submit a contiguous one (--array=0-\(n - 1), not --array=0-\(2 * n - 2):2)")
            }
            if let max = try number("SLURM_ARRAY_TASK_MAX"), max - min + 1 != n {
                throw refused("SLURM_ARRAY_TASK_MIN=\(min), SLURM_ARRAY_TASK_MAX=\(max), SLURM_ARRAY_TASK_COUNT=\(n)",
                              "the array has gaps; submit a contiguous one (--array=0-\(n - 1))")
            }
            return try ShardSpec(index: id - min, count: n,
                                 origin: "SLURM_ARRAY_TASK_ID=\(id) (SLURM_ARRAY_TASK_MIN=\(min), count \(n))")
        }
        if let index = try number("JOB_COMPLETION_INDEX") {
            guard let n = try count("MLTOOL_SHARD_COUNT") else {
                throw refused("JOB_COMPLETION_INDEX=\(index)", "the shard count is unknown; set MLTOOL_SHARD_COUNT (the Job's completions) or give --shard auto/N")
            }
            return try ShardSpec(index: index, count: n, origin: "JOB_COMPLETION_INDEX=\(index) (count \(n))")
        }
        if let rank = try number("RANK") {
            guard let n = try count("WORLD_SIZE") else {
                throw refused("RANK=\(rank)", "WORLD_SIZE is not set; give --shard auto/N")
            }
            return try ShardSpec(index: rank, count: n, origin: "RANK=\(rank) (WORLD_SIZE=\(n))")
        }
        throw refused(option, "no shard in the environment: looked for "
                        + environmentSources.joined(separator: "; ") + ". Give --shard I/N instead")
    }

    private static func refused(_ what: String, _ why: String) -> PipelineError {
        .invalidParameter(name: "shard", reason: "\(what): \(why)")
    }
}
