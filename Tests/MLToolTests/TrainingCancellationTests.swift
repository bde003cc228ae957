import Foundation
import MLTool
import MLToolTestSupport
import Testing

/// The detector, word-tagger and tabular trainers stop on their `Cancellation` (what `mltool studio`'s Cancel and a
/// cancelled task set): mid-extraction (between chunks of photos), between training steps, after a tagger epoch and
/// before a boosting round or tree — with `CancellationError`, before the work they would have gone on to.
struct TrainingCancellationTests {
    /// Thread-safe record of the events a training emitted, cancelling when `stopAt` says so.
    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [PipelineEvent] = []
        let cancellation = Cancellation()
        let stopAt: (PipelineEvent) -> Bool
        init(stopAt: @escaping (PipelineEvent) -> Bool) { self.stopAt = stopAt }
        func record(_ e: PipelineEvent) {
            lock.lock(); seen.append(e); lock.unlock()
            if stopAt(e) { cancellation.cancel() }
        }
        var all: [PipelineEvent] { lock.lock(); defer { lock.unlock() }; return seen }
        var epochs: Int {
            all.filter { if case .detectorEpoch = $0 { return true }; if case .taggerEpoch = $0 { return true }; return false }.count
        }
        var progressSteps: Int { all.filter { if case .progress = $0 { return true }; return false }.count }
    }

    @Test func detectorStopsMidExtractionAndBetweenSteps() throws {
        guard BundledModel.extractor.locate() != nil else { return Oracles.missing("models/efficientnet-lite0.bin (make models)") }
        let dir = try TempDir(); defer { dir.cleanup() }
        try TestPNG.boxedPhotos(in: dir.path)
        var p = ObjectDetectorParameters()
        p.inputSize = 128; p.augmentedCopies = 0; p.epochs = 40; p.threads = 1; p.holdoutFraction = 0.2
        // Cancelled at the first chunk of photos: no further chunk is extracted and no epoch runs.
        let extracting = Events { if case .progress = $0 { return true }; return false }
        #expect(throws: CancellationError.self) {
            _ = try ObjectDetectorTrainer(data: dir.path, parameters: p).train(progress: extracting.record, cancellation: extracting.cancellation)
        }
        #expect(extracting.progressSteps == 1 && extracting.epochs == 0, "\(extracting.all)")
        // Cancelled at the end of the first epoch: the second never finishes.
        let fitting = Events { if case .detectorEpoch = $0 { return true }; return false }
        #expect(throws: CancellationError.self) {
            _ = try ObjectDetectorTrainer(data: dir.path, parameters: p).train(progress: fitting.record, cancellation: fitting.cancellation)
        }
        #expect(fitting.epochs == 1, "\(fitting.all)")
    }

    /// Cancelled while the trainer reads the table (its first event): no boosting round runs.
    @Test func tabularStopsBeforeItsFirstRound() throws {
        let pima = SharedDatasets.repository.appendingPathComponent("datasets/tabular/pima/train.csv").path
        guard FileManager.default.fileExists(atPath: pima) else { return Oracles.missing("datasets/tabular (bash datasets/tabular.sh)") }
        var p = TabularParameters()
        p.target = "diabetes"
        let events = Events { _ in true }
        #expect(throws: CancellationError.self) {
            _ = try TabularTrainer(data: pima, parameters: p).train(progress: events.record, cancellation: events.cancellation)
        }
        #expect(events.all.count == 1, "\(events.all)")
        // Not cancelled, the same call trains.
        #expect(try TabularTrainer(data: pima, parameters: p).train().rounds > 0)
    }

    @Test func taggerStopsAfterTheEpochThatWasCancelled() throws {
        guard let dev = SharedDatasets.udEWT("en_ewt-ud-dev.conllu") else {
            return Oracles.missing("UD English EWT (../shared/datasets/ud-english-ewt)")
        }
        var p = WordTaggerPipelineParameters()
        p.tagger.epochs = 12; p.tagger.patience = nil
        let events = Events { if case .taggerEpoch = $0 { return true }; return false }
        #expect(throws: CancellationError.self) {
            _ = try WordTaggerTraining(data: dev, parameters: p).train(progress: events.record, cancellation: events.cancellation)
        }
        #expect(events.epochs == 1, "\(events.all)")
    }
}
