import Foundation

/// One training the studio started: `TaskKind.train` on a thread of its own, with the same `TaskRequest` the CLI
/// builds (its `PipelineEvent`s and result lines kept here as JSON objects, numbered from 0). The run does not
/// depend on any browser: a page that reconnects asks for the events after the last it saw (`events(after:)`).
public final class StudioRun: @unchecked Sendable {
    public enum State: String, Codable, Sendable { case running, finished, failed, cancelled }

    public let id: Int
    public let data: String
    public let task: String
    /// The model file, relative to the project.
    public let output: String
    let cancellation = Cancellation()
    private let condition = NSCondition()
    private var log = [String]()
    private var waiters = [(Int, @Sendable ([String], Int, Bool) -> Void)]()
    private(set) var state = State.running
    private let started = Date()
    private var lastProgress = [String: (done: Int, at: Date)]()

    init(id: Int, data: String, task: String, output: String) {
        self.id = id; self.data = data; self.task = task; self.output = output
    }

    /// Starts `task` on `request` (its `progress` and `output` replaced by this run's) on an 8 MB-stack thread;
    /// `finished` is called with the error (nil on success) before the final event is logged.
    func start(_ train: @escaping @Sendable (TaskRequest) throws -> Void, request: TaskRequest,
               finished: @escaping @Sendable (Error?) -> Void) {
        var own = request
        own.progress = { [weak self] event in self?.record(event) }
        own.output = { [weak self] line in self?.append(["type": "line", "text": line]) }
        own.cancellation = cancellation
        let request = own
        let thread = Thread { [self] in
            do {
                try train(request)
                finished(nil)
                finish(.finished, ["type": "finished", "model": output])
            } catch is CancellationError {
                finished(CancellationError())
                finish(.cancelled, ["type": "cancelled"])
            } catch {
                finished(error)
                finish(.failed, ["type": "failed", "error": StudioProject.describe(error)])
            }
        }
        thread.stackSize = 8 << 20
        thread.name = "mltool-studio-run-\(id)"
        thread.start()
    }

    public func cancel() { cancellation.cancel() }

    /// The run's state and event count, as the run list shows it.
    var summary: [String: Any] {
        condition.withLock { ["id": id, "data": data, "task": task, "output": output, "state": state.rawValue, "events": log.count] }
    }

    /// The events numbered `after` + 1 onwards, waiting up to `wait` seconds for one when there are none yet and the
    /// run goes on: `reply` gets them, the number of the last, and whether the run has ended.
    func events(after: Int, wait: Double, reply: @escaping @Sendable ([String], Int, Bool) -> Void) {
        let ready: ([String], Int, Bool)? = condition.withLock {
            let from = max(0, after + 1)
            if from < log.count || state != .running { return (Array(log[min(from, log.count)...]), log.count - 1, state != .running) }
            waiters.append((after, reply))
            return nil
        }
        if let ready { return reply(ready.0, ready.1, ready.2) }
        // Waiters still there then are answered with nothing new (a later waiter may be answered early: it asks again).
        DispatchQueue.global().asyncAfter(deadline: .now() + wait) { [weak self] in self?.wake() }
    }

    private func wake() {
        let due: [(Int, @Sendable ([String], Int, Bool) -> Void)] = condition.withLock {
            let w = waiters
            waiters.removeAll()
            return w
        }
        let (log, ended) = condition.withLock { (self.log, state != .running) }
        for (after, reply) in due { reply(Array(log[min(max(0, after + 1), log.count)...]), log.count - 1, ended) }
    }

    private func append(_ object: [String: Any]) {
        // JSON has no NaN or infinity: such a value is left out (the curve skips the point).
        var o = object.filter { !(($0.value as? Double).map { !$0.isFinite } ?? false) }
        o["t"] = (Date().timeIntervalSince(started) * 1000).rounded() / 1000
        guard let data = try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]) else { return }
        condition.withLock { log.append(String(decoding: data, as: UTF8.self)) }
        wake()
    }

    private func finish(_ end: State, _ object: [String: Any]) {
        append(object)
        condition.withLock { state = end }
        wake()
    }

    /// A pipeline event as a JSON object; progress is kept at most every quarter second per stage (and its end).
    private func record(_ event: PipelineEvent) {
        switch event {
        case .warning(let w): append(["type": "warning", "text": w])
        case .note(let n): append(["type": "note", "text": n])
        case .status(let s): append(["type": "status", "text": s])
        case let .progress(label, advanced, total):
            let now = Date()
            let keep: Int? = condition.withLock {
                let before = lastProgress[label] ?? (0, .distantPast)
                let done = before.done + advanced
                let due = done >= total || now.timeIntervalSince(before.at) >= 0.25
                lastProgress[label] = (done, due ? now : before.at)
                return due ? done : nil
            }
            if let done = keep { append(["type": "progress", "label": label, "done": done, "total": total]) }
        case .progressFinished(let label): append(["type": "progressFinished", "label": label])
        case .skippedImages(let failures):
            append(["type": "skipped", "files": failures.map(\.description)])
        case let .skippedDocuments(source, count): append(["type": "warning", "text": "\(source): \(count) empty documents skipped"])
        case let .featuresReady(extracted, cached, seconds):
            append(["type": "features", "extracted": extracted, "cached": cached, "seconds": seconds])
        case .fitStarted: append(["type": "fitStarted"])
        case .iteration(let r):
            var o: [String: Any] = ["type": "iteration", "l2": r.l2, "iteration": r.iteration, "trainAccuracy": r.trainAccuracy, "loss": r.loss]
            if let v = r.validationAccuracy { o["validationAccuracy"] = v }
            append(o)
        case .detectorEpoch(let r):
            var o: [String: Any] = ["type": "epoch", "epoch": r.epoch, "epochs": r.epochs, "loss": r.classLoss + r.boxLoss]
            if let m = r.validationMAP50 { o["validationMAP50"] = m }
            append(o)
        case .taggerEpoch(let r):
            var o: [String: Any] = ["type": "epoch", "epoch": r.epoch, "trainAccuracy": r.trainAccuracy]
            if let v = r.validationAccuracy { o["validationAccuracy"] = v }
            append(o)
        case .phase: break
        case .inputFailed(let message): append(["type": "warning", "text": message])
        }
    }
}
