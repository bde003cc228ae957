import Foundation
import MLToolCore
import MLToolData

/// Where training (or test) examples come from (Create ML's `MLImageClassifier.DataSource` /
/// `MLTextClassifier.DataSource`).
public struct TrainingData: Sendable {
    enum Source: Sendable {
        case path(String)
        case images([ImageItem])
        case texts([TextItem])
    }

    let source: Source
    /// Table columns: image paths, document texts, labels.
    public var pathColumn = "path"
    public var textColumn = "text"
    public var labelColumn = "label"

    /// A folder whose subfolders are the labels (images or `.txt` documents below them), or a table (CSV, TSV,
    /// JSON Lines) with a path or text column and a label column — told from the content.
    public static func path(_ path: String, pathColumn: String = "path", textColumn: String = "text",
                            labelColumn: String = "label") -> TrainingData {
        var d = TrainingData(source: .path(path))
        d.pathColumn = pathColumn; d.textColumn = textColumn; d.labelColumn = labelColumn
        return d
    }

    /// Label-named folders (Create ML's `.labeledDirectories(at:)`).
    public static func labeledDirectories(at url: URL) -> TrainingData {
        .path(url.path)
    }

    /// Image files with their labels, held in memory (the files are still read from disk).
    public static func labeledImages(_ items: [(path: String, label: String)]) -> TrainingData {
        TrainingData(source: .images(items.map { ImageItem(path: $0.path, label: $0.label) }))
    }

    /// Documents with their labels, held in memory.
    public static func labeledTexts(_ items: [(text: String, label: String)]) -> TrainingData {
        TrainingData(source: .texts(items.enumerated().map {
            TextItem(text: $0.element.text, label: $0.element.label, path: "memory", row: $0.offset + 1)
        }))
    }

    /// The path this data was read from (nil for data in memory).
    public var location: String? {
        if case .path(let p) = source { return p }
        return nil
    }

    /// Whether the data is text (documents) rather than images, told from the content.
    public var isText: Bool {
        switch source {
        case .path(let p): return TextDataset.looksLikeText(p, textColumn: textColumn)
        case .images: return false
        case .texts: return true
        }
    }

    func imageDataset() throws -> ImageDataset {
        switch source {
        case .path(let p): return try ImageDataset.load(p, pathColumn: pathColumn, labelColumn: labelColumn)
        case .images(let items):
            return ImageDataset(source: "memory", labels: Array(Set(items.map(\.label))).sorted(), items: items)
        case .texts:
            throw PipelineError.badInput(file: "memory", reason: "these are texts, not images")
        }
    }

    func textDataset() throws -> TextDataset {
        switch source {
        case .path(let p): return try TextDataset.load(p, textColumn: textColumn, labelColumn: labelColumn)
        case .texts(let items):
            return TextDataset(source: "memory", labels: Array(Set(items.map(\.label))).sorted(), items: items)
        case .images:
            throw PipelineError.badInput(file: "memory", reason: "these are images, not texts")
        }
    }
}

/// What a pipeline reports while it works. Library code never prints: a command-line tool turns these into
/// progress bars and lines, a service into logs.
public enum PipelineEvent: Sendable {
    /// Something the user should know that does not stop the work (the data has a problem).
    case warning(String)
    /// A remark on how the work is done (no calibration images, no holdout to gate on, …).
    case note(String)
    /// A line on what the pipeline is doing now ("gate: backed off 4 tensors, drop now 0.8 points").
    case status(String)
    /// `advanced` more of `total` items done in the stage named `label` ("extracting train", "evaluating").
    case progress(label: String, advanced: Int, total: Int)
    /// The stage named `label` is done.
    case progressFinished(label: String)
    /// Images that could not be read and were skipped (bad images below the data set's limit).
    case skippedImages([DataError])
    /// Empty documents skipped in `source`.
    case skippedDocuments(source: String, count: Int)
    /// Features are ready: `extracted` computed now, `cached` read from the cache.
    case featuresReady(extracted: Int, cached: Int, seconds: Double)
    /// The classifier fit starts (iterations follow).
    case fitStarted
    /// One optimiser iteration (or SGD epoch).
    case iteration(IterationRecord)
    /// One epoch of an object detector's training (losses, validation mAP).
    case detectorEpoch(DetectorEpochRecord)
    /// One epoch of a word tagger's training (train and validation token accuracy).
    case taggerEpoch(TaggerEpoch)
    /// A stage took `seconds` (for profiling: `MLTOOL_PHASES=1` prints these).
    case phase(String, seconds: Double)
    /// One input could not be used (the error's text); the work goes on with the others.
    case inputFailed(String)
}

/// A cancellation request that pipelines check between stages and batches; the `async` entry points set it when
/// their task is cancelled. The synchronous ones also honour `Task.isCancelled` when called from a task.
public final class Cancellation: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false
    public init() {}
    public func cancel() { lock.lock(); cancelled = true; lock.unlock() }
    public var isCancelled: Bool { lock.lock(); defer { lock.unlock() }; return cancelled }

    /// Throws `CancellationError` when this or the current task was cancelled.
    public func check() throws {
        if isCancelled || Task.isCancelled { throw CancellationError() }
    }

    /// Runs `work` on a thread of its own (pipelines are CPU-bound: they must not hold a cooperative thread) and
    /// cancels it when the calling task is cancelled.
    static func run<T: Sendable>(_ work: @escaping @Sendable (Cancellation) throws -> T) async throws -> T {
        let token = Cancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, Error>) in
                let thread = Thread { c.resume(with: Result { try work(token) }) }
                thread.stackSize = 8 << 20
                thread.start()
            }
        } onCancel: {
            token.cancel()
        }
    }
}
