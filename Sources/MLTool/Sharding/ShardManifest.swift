import Foundation
import MLToolCore
import MLToolFormat

/// What one shard of `mltool train DATA --features-only --shard I/N` did, written as JSON when it ends (also when it
/// fails), so a scheduler's log is not the only record and a failed index can be found and rerun (docs/SCALE.md).
///
/// Default place: `<cache>/shards/<settings>/shard-<I>-of-<N>.json`, where `<cache>` is the folder that holds the
/// feature cache's `features/` folder (`$MLTOOL_CACHE` or `--cache DIR`) and `<settings>` is `settingsID`: 16 hex
/// digits of a SHA-256 over the data root and everything that decides which cache entries a training run needs
/// (test data, extractor, feature tensor, preprocessing, tool version, seed, splits, augmentations, columns). The
/// N manifests of one run share that folder; another run on other data or settings gets its own.
public struct ShardManifest: Codable, Sendable, Equatable {
    /// An image that could not be read or decoded: its path relative to the data root, and why.
    public struct Failure: Codable, Sendable, Equatable {
        public var path: String
        public var reason: String
    }

    /// "mltool <version>".
    public var tool: String
    /// This shard's index (0-based) and the number of shards.
    public var shard: Int
    public var shards: Int
    /// Where the shard came from ("--shard 1/4", "SLURM_ARRAY_TASK_ID=2 (SLURM_ARRAY_TASK_MIN=1, count 4)").
    public var origin: String
    /// The data root (absolute) and the settings digest (the manifest folder's name).
    public var data: String
    public var settings: String
    /// The feature cache folder the entries went to.
    public var cache: String
    public var host: String
    /// Images in the whole data set (training data and test data), and how many this shard owns.
    public var itemsInData: Int
    public var itemsOwned: Int
    /// Cache entries of the owned images (training images count once per augmentation variant, plus the plain one),
    /// by where they came from: computed now or found in the cache. Failed images have none.
    public var extracted: Int
    public var cached: Int
    public var failures: [Failure]
    public var seconds: Double
    /// When the shard ended (UTC, ISO 8601).
    public var finished: String
    /// True when every owned image has its entries (no failure): the shard need not run again.
    public var complete: Bool

    /// The manifest's default path for `shard` of a run with `settings`, beside the feature cache folder `cache`.
    public static func defaultPath(cache: String, settings: String, shard: ShardSpec) -> String {
        let root = (RecordedPath.absolute(cache) as NSString).deletingLastPathComponent
        return "\(root)/shards/\(settings)/shard-\(shard.index)-of-\(shard.count).json"
    }

    /// Reads a manifest (for tests and tools that gather the N manifests of a run).
    public static func read(_ path: String) throws -> ShardManifest {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PipelineError.missingInput(file: path, reason: "no shard manifest here")
        }
        do {
            return try JSONDecoder().decode(ShardManifest.self, from: data)
        } catch {
            throw PipelineError.badInput(file: path, reason: "not a shard manifest: \(error)")
        }
    }

    /// Writes the manifest atomically (`AtomicFile`), creating its folder; `FormatError.cannotWrite` (exit 73).
    public func write(to path: String) throws {
        try AtomicFile.makeDirectory((path as NSString).deletingLastPathComponent)
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let bytes: [UInt8]
        do { bytes = Array(try e.encode(self)) + [0x0A] } catch {
            throw FormatError.cannotWrite(file: path, reason: "cannot encode the manifest: \(error)")
        }
        try AtomicFile.write(bytes, to: path)
    }
}
