import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolFormat
import MLToolTrain

/// One `ImageClassifierTrainer.extract` run: what every split shares (the extractor, the cache and its key parts, the
/// rows kept so far and what failed), and per split the batches in flight. Reading, hashing and cache look-ups run
/// on every core a chunk at a time; a full batch runs through the network on a thread of its own while the next
/// one is decoded and preprocessed.
final class FeatureRun {
    typealias Featured = ImageClassifierTrainer.Featured
    let extractor: FeatureExtractor
    let parameters: ImageClassifierParameters
    let cache: FeatureCache
    let owns: (@Sendable (ImageItem) -> Bool)?
    let rowCount: Int, keepWithin: Int
    let emit: (PipelineEvent) -> Void
    let cancellation: Cancellation
    /// The tool version is part of the key: a release whose kernels round differently never mixes its features
    /// with an older release's cached ones.
    let preprocessingKey: String
    private(set) var width: Int?, keep = true
    private(set) var failures = [DataError](), failedPaths = Set<String>(), failedItems = [String]()
    private(set) var extractedCount = 0

    /// The split being featurized: one slot per (item, variant) in data set order, so the result never depends on
    /// what was cached; the rows waiting for the network and the batch running through it.
    private var slots: [Featured?] = []
    private var pending = [(slot: Int, input: [Float], key: String)]()
    private var inFlight: (rows: [(slot: Int, key: String)], work: BackgroundWork<[[Float]]>)?
    private var stage = "", total = 0

    init(extractor: FeatureExtractor, parameters: ImageClassifierParameters, cache: FeatureCache,
         owns: (@Sendable (ImageItem) -> Bool)?, rowCount: Int, keepWithin: Int, emit: @escaping (PipelineEvent) -> Void,
         cancellation: Cancellation) {
        self.extractor = extractor; self.parameters = parameters; self.cache = cache; self.owns = owns
        self.rowCount = rowCount; self.keepWithin = keepWithin; self.emit = emit; self.cancellation = cancellation
        preprocessingKey = extractor.preprocessor.digest + "|" + extractor.featureTensor + "|mltool " + MLToolInfo.version
    }

    /// What to keep of a row: all of it while the in-memory head fits the budget (decided at the first row).
    private func kept(_ f: [Float]) -> [Float] {
        if width == nil {
            width = f.count
            keep = !HeadMemory.outOfCore(rows: rowCount, width: f.count, budget: keepWithin)
        }
        return keep ? f : []
    }

    private func record(_ e: DataError, _ path: String) throws {
        if parameters.strict { throw e }
        failures.append(e)
        failedPaths.insert(path)
        failedItems.append(path)
    }

    func featurize(_ items: [ImageItem], variants: [(String, Augmentation?)], label: String) throws -> [Featured] {
        slots = [Featured?](repeating: nil, count: items.count * variants.count)
        pending = []
        stage = "extracting \(label)"
        total = (owns.map { items.filter($0).count } ?? items.count) * variants.count
        defer { inFlight?.work.wait() }  // an error or a cancellation never leaves the network running
        var start = 0
        while start < items.count {
            try cancellation.check()
            let chunk = Array(items[start..<min(items.count, start + 256)])
            // Every task stores a look-up, so there is one per item, in order.
            for (offset, (item, l)) in zip(chunk, lookUp(chunk, variants)).enumerated() where !l.skipped {
                if let e = l.error { try record(e, item.path); continue }
                try featurize(item, at: start + offset, l, variants)
            }
            start += chunk.count
        }
        try flush()
        try collect()
        emit(.progressFinished(label: stage))
        return slots.compactMap { $0 }
    }

    /// The look-ups of a chunk of items, on every core (no pixels kept).
    private func lookUp(_ chunk: [ImageItem], _ variants: [(String, Augmentation?)]) -> [ImageClassifierTrainer.Lookup] {
        let (owns, cache, digest, preprocessingKey) = (self.owns, self.cache, extractor.digest, self.preprocessingKey)
        let variantNames = variants.map(\.0)
        let found = Slots<ImageClassifierTrainer.Lookup>(count: chunk.count)
        DispatchQueue.concurrentPerform(iterations: chunk.count) { i in
            var l = ImageClassifierTrainer.Lookup()
            if let owns, !owns(chunk[i]) {
                l.skipped = true
                found.set(i, l)
                return
            }
            do {
                let bytes = try ImageDecoder.readFile(chunk[i].path)
                l.hash = SHA256.hex(bytes)
                l.keys = variantNames.map { v in
                    FeatureCache.key(contentHash: l.hash, extractor: digest, preprocessing: preprocessingKey, variant: v)
                }
                l.hits = l.keys.map { cache.get(key: $0) }
            } catch let e as DataError {
                l.error = e
            } catch {
                l.error = DataError.cannotRead(file: chunk[i].path, reason: "\(error)")
            }
            found.set(i, l)
        }
        return found.values
    }

    /// Item `index`'s variants: cached features as they are, the others decoded (once), augmented and queued.
    private func featurize(_ item: ImageItem, at index: Int, _ l: ImageClassifierTrainer.Lookup, _ variants: [(String, Augmentation?)]) throws {
        var decoded: RGBImage?
        for (v, (_, aug)) in variants.enumerated() {
            let slot = index * variants.count + v
            if let f = l.hits[v] {
                slots[slot] = Featured(item: item, sha256: l.hash, key: l.keys[v], features: kept(f))
                emit(.progress(label: stage, advanced: 1, total: total))
                continue
            }
            do {
                if decoded == nil { decoded = try ImageDecoder.decode(path: item.path, maxPixels: parameters.maxPixels) }
            } catch let e as DataError {
                try record(e, item.path); break
            }
            guard var image = decoded else { break }
            // The draw comes from the content, like the cache key: seeding it from the item's position
            // would let an entry computed before files were added stand for a different draw.
            if let a = aug { image = a.apply(to: image, seed: parameters.seed &+ (UInt64(l.hash.prefix(16), radix: 16) ?? 0)) }
            slots[slot] = Featured(item: item, sha256: l.hash, key: l.keys[v], features: [])
            pending.append((slot, try extractor.preprocessor.process(image), l.keys[v]))
            if pending.count == 32 { try flush() }
        }
    }

    /// Stores the batch in flight (cache, slots) once the network is done with it.
    private func collect() throws {
        guard let batch = inFlight else { return }
        inFlight = nil
        let feats = try batch.work.value()
        for (p, f) in zip(batch.rows, feats) {
            try cache.put(key: p.key, features: f)
            slots[p.slot]?.features = kept(f)
        }
        extractedCount += batch.rows.count
        emit(.progress(label: stage, advanced: batch.rows.count, total: total))
    }

    /// Hands the pending rows to the network, after storing the previous batch.
    private func flush() throws {
        try collect()
        guard !pending.isEmpty else { return }
        let inputs = pending.map(\.input), extractor = self.extractor
        inFlight = (pending.map { ($0.slot, $0.key) }, BackgroundWork { try extractor.features(inputs) })
        pending.removeAll(keepingCapacity: true)
    }
}
