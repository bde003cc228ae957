import Foundation
import Synchronization

/// Helper threads that split one op of a single image across cores with microsecond hand-offs (GCD's
/// concurrentPerform costs tens of microseconds per call, and a 224×224 network makes ~50 such calls per image).
///
/// One job runs at a time: the caller publishes it by bumping `generation`, takes chunks itself, and returns when
/// every helper has acknowledged the generation, so a job's closure never outlives `run`. Idle helpers spin briefly,
/// then sleep on a condition until the next job.
final class WorkerPool: @unchecked Sendable {
    private let helpers: Int
    private let generation = Atomic<Int>(0)
    private let next = Atomic<Int>(0)
    private let pending = Atomic<Int>(0)
    private var job: (@Sendable (Int) -> Void)?
    private var count = 0
    private let caller = NSLock()
    private let wake = NSCondition()

    private static let poolsLock = NSLock()
    nonisolated(unsafe) private static var pools: [Int: WorkerPool] = [:]

    /// The pool with `helpers` helper threads (created on first use, kept for the process).
    static func shared(helpers: Int) -> WorkerPool {
        poolsLock.lock(); defer { poolsLock.unlock() }
        if let p = pools[helpers] { return p }
        let p = WorkerPool(helpers: helpers)
        pools[helpers] = p
        return p
    }

    private init(helpers: Int) {
        self.helpers = helpers
        for _ in 0..<helpers {
            let t = Thread { [unowned self] in self.helperLoop() }
            t.stackSize = 1 << 20
            t.start()
        }
    }

    /// Runs body(0..<n), chunks handed out to this thread and the helpers as they come free.
    func run(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
        if helpers == 0 || n <= 1 { for i in 0..<n { body(i) }; return }
        caller.lock(); defer { caller.unlock() }
        job = body
        count = n
        next.store(0, ordering: .relaxed)
        pending.store(helpers, ordering: .relaxed)
        generation.add(1, ordering: .releasing)
        wake.lock(); wake.broadcast(); wake.unlock()
        work(body, n)
        var spins = 0
        while pending.load(ordering: .acquiring) > 0 {
            spins += 1
            if spins > 2000 { sched_yield() }
        }
        job = nil
    }

    private func work(_ body: (Int) -> Void, _ n: Int) {
        while true {
            let i = next.add(1, ordering: .relaxed).oldValue
            if i >= n { return }
            body(i)
        }
    }

    private func helperLoop() {
        var seen = 0
        while true {
            var spins = 0
            var g = generation.load(ordering: .acquiring)
            while g == seen {
                spins += 1
                if spins > 20_000 {
                    wake.lock()
                    while generation.load(ordering: .acquiring) == seen { wake.wait() }
                    wake.unlock()
                    spins = 0
                }
                g = generation.load(ordering: .acquiring)
            }
            seen = g
            if let body = job { work(body, count) }
            pending.subtract(1, ordering: .releasing)
        }
    }
}
