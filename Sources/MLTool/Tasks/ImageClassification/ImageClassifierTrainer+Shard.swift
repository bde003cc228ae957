import Foundation
import MLToolCore
import MLToolData

/// `mltool train DATA --features-only --shard I/N`: the extraction stage of `ImageClassifierTrainer.train` alone, for
/// the items one shard owns, into the shared feature cache. The split, the keys, the variants and the augmentation
/// draws are those of `train` (the same `split` and `extract`), so a later `train` with the same data and settings
/// finds every entry and extracts nothing.
extension ImageClassifierTrainer {
    /// What `extractFeatures(shard:)` did, and where its manifest went.
    public struct ShardResult: Sendable {
        public var manifest: ShardManifest
        public var manifestPath: String
    }

    /// The feature cache folder this trainer reads and writes.
    var cacheFolder: String { parameters.cacheDirectory ?? FeatureCache.defaultDirectory() }

    /// Computes the cache entries of the images `shard` owns (`ShardSpec.owns(relativePath:)`, paths relative to the
    /// training data's root, or to the test data's root for `testData`), skipping entries already cached, and writes
    /// a `ShardManifest` to `manifest` (default `ShardManifest.defaultPath`) — also when it fails. Trains nothing and
    /// writes no model. Images that cannot be read are all recorded (none stops the shard, unless
    /// `parameters.strict`); then it throws `PipelineError.badInput` naming the manifest (exit 65), so a scheduler
    /// retries this index. A rerun computes only what is missing.
    public func extractFeatures(shard: ShardSpec = .whole, manifest: String? = nil,
                                progress: ((PipelineEvent) -> Void)? = nil,
                                cancellation: Cancellation = Cancellation()) throws -> ShardResult {
        let started = Date()
        let emit = progress ?? { _ in }
        let plan = try split(emit: emit)
        // A fine-tuning run reads the activations at its cut, not the features: its shards fill the cache there.
        let extractor = try fineTuning(plan.extractor)?.extractor ?? plan.extractor
        let root = Self.root(of: plan.dataset.source), testRoot = plan.testSet.map { Self.root(of: $0.source) }
        var relative = [String: String]()
        for item in plan.train + plan.validation { relative[item.path] = SplitManifest.relative(item.path, to: root) }
        for item in plan.holdout where relative[item.path] == nil {
            relative[item.path] = SplitManifest.relative(item.path, to: testRoot ?? root)
        }
        let owned = Set(relative.filter { shard.owns(relativePath: $0.value) }.keys)
        let settings = settingsID(root: root, testRoot: testRoot, extractor: extractor)
        let path = manifest ?? ShardManifest.defaultPath(cache: cacheFolder, settings: settings, shard: shard)
        var record = ShardManifest(
            tool: "mltool \(MLToolInfo.version)", shard: shard.index, shards: shard.count, origin: shard.origin,
            data: root, settings: settings, cache: RecordedPath.absolute(cacheFolder),
            host: ProcessInfo.processInfo.hostName, itemsInData: plan.train.count + plan.validation.count + plan.holdout.count,
            itemsOwned: (plan.train + plan.validation + plan.holdout).filter { owned.contains($0.path) }.count,
            extracted: 0, cached: 0, failures: [], seconds: 0, finished: "", complete: false)
        func finish() throws {
            record.seconds = Date().timeIntervalSince(started)
            record.finished = ISO8601DateFormatter().string(from: Date())
            record.complete = record.failures.isEmpty
            try record.write(to: path)
        }
        let extraction: Extraction
        do {
            extraction = try extract(extractor, train: plan.train, validation: plan.validation, holdout: plan.holdout,
                                     owns: { owned.contains($0.path) }, keepWithin: 0, emit: emit,
                                     cancellation: cancellation)
        } catch {
            // A stop (strict mode's first bad image, a cache that cannot be written, a cancellation) is recorded too.
            record.failures.append(.init(path: "", reason: (error as? MLToolError)?.description ?? "\(error)"))
            try? finish()
            throw error
        }
        let entries = extraction.train.count + extraction.validation.count + extraction.holdout.count
        record.extracted = extraction.extracted
        record.cached = entries - extraction.extracted
        record.failures = zip(extraction.failedItems, extraction.failures).map {
            .init(path: relative[$0.0] ?? $0.0, reason: $0.1.description)
        }
        emit(.featuresReady(extracted: record.extracted, cached: record.cached, seconds: extraction.seconds))
        try finish()
        if !record.failures.isEmpty {
            throw PipelineError.badInput(
                file: path, reason: "shard \(shard): \(record.failures.count) of \(record.itemsOwned) images failed "
                    + "(listed here; first: \(record.failures[0].reason)); fix or remove them and run this shard again")
        }
        return ShardResult(manifest: record, manifestPath: path)
    }

    /// The folder item paths are taken relative to: a data folder itself, a CSV's folder (absolute, standardized).
    static func root(of source: String) -> String {
        var isDirectory: ObjCBool = false
        // As `train` makes the holdout's root, so `SplitManifest.relative` gives the same relative paths.
        let absolute = (URL(fileURLWithPath: source).path as NSString).standardizingPath
        let exists = FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory)
        return exists && !isDirectory.boolValue ? (absolute as NSString).deletingLastPathComponent : absolute
    }

    /// 16 hex digits naming a training run's cache needs: the data and test roots and every setting that decides the
    /// split or a cache key (not the L2 search, the iterations or the output name, which only the head uses).
    func settingsID(root: String, testRoot: String?, extractor: FeatureExtractor) -> String {
        let p = parameters
        let parts = ["mltool-shards-v1", root, testRoot ?? "-", extractor.digest, extractor.featureTensor,
                     extractor.preprocessor.digest, MLToolInfo.version, "\(p.seed)", "\(p.holdoutFraction)",
                     "\(p.validation)", p.augmentations.map(\.rawValue).joined(separator: ","), data.pathColumn,
                     data.labelColumn]
        return String(SHA256.hex(Array(parts.joined(separator: "\n").utf8)).prefix(16))
    }
}
