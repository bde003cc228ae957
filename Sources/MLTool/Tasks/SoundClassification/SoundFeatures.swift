import Dispatch
import Foundation
import MLToolAudio
import MLToolCore
import MLToolData

/// The frozen speech embedding over a list of recordings: `workers` extractors of one engine thread each, features
/// through the content-addressed cache (a second run, or a second windowing's search, decodes nothing it has seen).
struct SoundFeatures: Sendable {
    /// The embedding model, its file and its SHA-256 (the cache keys' extractor digest and the provenance's source).
    let model: Model
    let path: String
    let sha256: String
    let extractors: [SpeechEmbedding]
    let cache: FeatureCache

    /// The audio file extensions a sound data set's label folders are read for.
    static let extensions: Set<String> = ["wav", "wave", "flac", "ogg", "oga"]

    static func isAudio(_ path: String) -> Bool { extensions.contains((path as NSString).pathExtension.lowercased()) }

    /// Loads the embedding at `explicit` or the bundled one.
    init(explicit: String?, threads: Int, cacheDirectory: String?) throws {
        guard let path = BundledModel.speechEmbedding.locate(explicit: explicit) else {
            let places = BundledModel.speechEmbedding.candidates(explicit: explicit)
            throw PipelineError.missingInput(file: places.first ?? BundledModel.speechEmbedding.fileName,
                                             reason: "no speech embedding (make models builds models/speech-embedding.bin); looked in \(places.joined(separator: ", "))")
        }
        model = try ModelLoader.load(path)
        self.path = path
        sha256 = try SHA256.hex(fileAt: path)
        let workers = max(1, min(threads > 0 ? threads : ProcessInfo.processInfo.activeProcessorCount, 8))
        let digest = "speech-embedding " + sha256, loaded = model
        extractors = try (0..<workers).map { _ in try SpeechEmbedding(model: loaded, digest: digest) }
        cache = FeatureCache(directory: cacheDirectory ?? FeatureCache.defaultDirectory())
    }

    /// The embeddings of `paths` cut by `windowing`, in order: nil where the file could not be read (its error in
    /// `failures`, in the order of `paths`).
    func embed(_ paths: [String], _ windowing: SoundClassifierParameters.Windowing, cancellation: Cancellation,
               progress: (Int, Int) -> Void) throws -> (embeddings: [SoundEmbedding?], failures: [(path: String, error: Error)]) {
        let results = Slots<Result<SoundEmbedding, Error>>(count: paths.count)
        let n = extractors.count, extractors = self.extractors, cache = self.cache
        var start = 0
        while start < paths.count {   // blocks of 64, so progress and cancellation are seen
            try cancellation.check()
            let end = min(paths.count, start + 64), first = start
            DispatchQueue.concurrentPerform(iterations: n) { w in
                for i in stride(from: first + w, to: end, by: n) {
                    results.set(i, Result { try extractors[w].embed(file: paths[i], overlap: windowing.overlap,
                                                                   minimumSamples: windowing.minimumSamples, cache: cache) })
                }
            }
            progress(end - start, paths.count)
            start = end
        }
        var embeddings = [SoundEmbedding?](), failures = [(path: String, error: Error)]()
        for (i, r) in results.values.enumerated() {
            switch r {
            case .success(let e): embeddings.append(e)
            case .failure(let error): embeddings.append(nil); failures.append((paths[i], error))
            }
        }
        return (embeddings, failures)
    }
}
