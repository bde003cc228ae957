import Foundation

/// Dynamic batching for one model: requests arriving together are gathered into one call of the predictor (up to
/// `maxBatch` inputs; the first waits at most `maxWait` for others), on a thread of its own, so the engine runs
/// batches rather than single inputs. A request never splits across batches; one larger than `maxBatch` runs alone.
final class PredictionBatcher: @unchecked Sendable {
    struct Job {
        let inputs: [ServingInput]
        let arrived: Date
        let done: @Sendable ([Result<String, Error>]) -> Void
    }

    /// Why a job was not taken or not run.
    enum Refusal: Error { case queueFull, timedOut, stopped }

    let name: String
    private var predictor: any ServingPredictor
    private let maxBatch: Int, maxWait: Double, timeout: Double, maxQueue: Int
    private let metrics: ServerMetrics
    private let condition = NSCondition()
    private var queue: [Job] = []
    private var queuedInputs = 0
    private var stopping = false
    private var finished = false

    init(name: String, predictor: any ServingPredictor, parameters: ModelServerParameters, metrics: ServerMetrics) {
        self.name = name; self.predictor = predictor; self.metrics = metrics
        maxBatch = parameters.maxBatch; maxWait = parameters.maxWaitMilliseconds / 1000
        timeout = parameters.requestTimeoutSeconds; maxQueue = parameters.maxQueue
        let thread = Thread { [self] in run() }
        thread.name = "mltool-batch-\(name)"
        thread.start()
    }

    /// Inputs waiting now.
    var depth: Int { condition.withLock { queuedInputs } }

    /// Queues `inputs`; `done` gets one result per input (or the refusal for all).
    func submit(_ inputs: [ServingInput], done: @escaping @Sendable ([Result<String, Error>]) -> Void) {
        let refused: Refusal? = condition.withLock {
            if stopping { return .stopped }
            if queuedInputs + inputs.count > maxQueue { return .queueFull }
            queue.append(Job(inputs: inputs, arrived: Date(), done: done))
            queuedInputs += inputs.count
            condition.signal()
            return nil
        }
        if let refused { done(inputs.map { _ in .failure(refused) }) }
    }

    /// Runs the batches after the one running now on `replacement` (a model reloaded from disk): every request is
    /// answered by one predictor or the other, none is dropped.
    func replace(with replacement: any ServingPredictor) {
        condition.withLock { predictor = replacement }
    }

    /// Answers what is queued, then ends the thread.
    func stop() {
        condition.withLock {
            stopping = true
            condition.signal()
            while !finished { condition.wait() }
        }
    }

    private func run() {
        while let jobs = nextBatch() {
            var live = [Job]()
            for job in jobs {
                if Date().timeIntervalSince(job.arrived) > timeout {
                    job.done(job.inputs.map { _ in .failure(Refusal.timedOut) })
                } else {
                    live.append(job)
                }
            }
            guard !live.isEmpty else { continue }
            let inputs = live.flatMap(\.inputs)
            metrics.batch(model: name, size: inputs.count)
            let current = condition.withLock { predictor }
            var results = current.predict(inputs)[...]
            for job in live {
                job.done(Array(results.prefix(job.inputs.count)))
                results = results.dropFirst(job.inputs.count)
            }
        }
        condition.withLock { finished = true; condition.broadcast() }
    }

    /// The next jobs to run together (nil when stopping with nothing left): waits for a first job, then up to
    /// `maxWait` after its arrival for the batch to fill.
    private func nextBatch() -> [Job]? {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty {
            if stopping { return nil }
            condition.wait()
        }
        let deadline = queue[0].arrived.addingTimeInterval(maxWait)
        while queuedInputs < maxBatch && !stopping && Date() < deadline {
            _ = condition.wait(until: deadline)
        }
        var taken = [queue.removeFirst()], count = taken[0].inputs.count
        while let next = queue.first, count + next.inputs.count <= maxBatch {
            taken.append(queue.removeFirst())
            count += next.inputs.count
        }
        queuedInputs -= taken.reduce(0) { $0 + $1.inputs.count }
        return taken
    }
}
