import CMLToolCPU
import Dispatch
import Foundation
import Synchronization

/// Helper threads that split one op of a single image across cores with microsecond hand-offs (GCD's
/// concurrentPerform costs tens of microseconds per call, and a 224×224 network makes ~50 such calls per image).
///
/// The caller publishes a job, takes chunks itself, and returns as soon as every chunk is done, whether or not a
/// helper ever woke up (on a loaded machine the OS may not run one for a while): a late helper finds no chunk left.
/// A chunk runs only if it was claimed below the job's count, so no closure runs after `run` returns. Idle helpers
/// spin briefly, then sleep until the next job.
final class WorkerPool: @unchecked Sendable {
    /// One `run` call: its body and chunk counters, kept alive by whoever holds it.
    private final class Job: @unchecked Sendable {
        let body: @Sendable (Int) -> Void
        let count: Int
        /// The caller's own kernel level (mlk_set_thread_cpu_level; -1: the process's), which helpers take for it.
        let level: Int32
        let next = Atomic<Int>(0)
        let done = Atomic<Int>(0)
        init(_ body: @escaping @Sendable (Int) -> Void, _ count: Int, level: Int32) {
            self.body = body; self.count = count; self.level = level
        }

        /// Runs chunks until none is left; returns how many this thread ran.
        @discardableResult
        func work() -> Int {
            var ran = 0
            while true {
                let i = next.add(1, ordering: .relaxed).oldValue
                if i >= count { return ran }
                body(i)
                done.add(1, ordering: .releasing)
                ran &+= 1
            }
        }
    }

    private let helpers: Int
    private let generation = Atomic<Int>(0)
    private var current: Job?
    private let currentLock = NSLock()
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

    /// Jobs run so far, and the job count until which jobs run on the caller alone (see `run`).
    private var jobs = 0
    private var soloUntil = 0

    /// Runs body(0..<n), chunks handed out to this thread and the helpers as they come free.
    ///
    /// When the caller, its own chunks done, had to wait long for a helper's chunk (the helper was preempted: the
    /// machine is busy), the next jobs run on the caller alone for a while; a helper that cannot get a core only
    /// delays the work. How work is split never changes a result, so this cannot either.
    func run(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
        if helpers == 0 || n <= 1 { for i in 0..<n { body(i) }; return }
        caller.lock(); defer { caller.unlock() }
        jobs += 1
        if jobs < soloUntil { for i in 0..<n { body(i) }; return }
        let job = Job(body, n, level: mlk_thread_cpu_level())
        currentLock.lock(); current = job; currentLock.unlock()
        generation.add(1, ordering: .releasing)
        wake.lock(); wake.broadcast(); wake.unlock()
        let began = DispatchTime.now().uptimeNanoseconds
        let ran = job.work()
        // Spin, never yield: a chunk still running elsewhere ends soon, and a yield on a busy machine can cost a
        // whole time slice. No PAUSE in the loop either: with PAUSE in both spins, 2-thread batch-1
        // throughput fell by a quarter on this VM (likely pause-loop exits: the hypervisor deschedules the vCPU).
        if job.done.load(ordering: .acquiring) < n {
            let start = DispatchTime.now().uptimeNanoseconds
            while job.done.load(ordering: .acquiring) < n {}
            // A wait of a few chunks' time is a helper that simply took a chunk late (it was waking up, or the
            // chunks are long): not a stall. Counting those (every big conv's last chunk) sent 2-thread YOLOv8n
            // runs solo for 40% of their ops.
            let waited = DispatchTime.now().uptimeNanoseconds &- start
            let perChunk = (start &- began) / UInt64(max(ran, 1))
            if waited > Self.stallNanoseconds && waited > 3 &* perChunk { soloUntil = jobs &+ Self.soloJobs }
        }
        currentLock.lock(); current = nil; currentLock.unlock()
    }

    /// A wait for helpers longer than this and than three of the caller's own chunks means one was preempted...
    /// (1 ms: at 200 µs, hiccups of a quiet VM's other vCPU sent 2-thread batch-1 runs solo for 200 ops at a time;
    /// same-run EfficientNet-Lite0 batch 1, 2 threads, Zen 3: 1.07–1.14× with 1 ms and 60 jobs)
    static let stallNanoseconds: UInt64 = 1_000_000
    /// ...and then this many jobs (about one image's ops) run on the caller alone before helpers are tried again.
    static let soloJobs = 60

    private func helperLoop() {
        var seen = 0
        while true {
            var spins = 0
            var g = generation.load(ordering: .acquiring)
            while g == seen {
                spins += 1
                if spins > 100_000 {
                    wake.lock()
                    while generation.load(ordering: .acquiring) == seen { wake.wait() }
                    wake.unlock()
                    spins = 0
                }
                g = generation.load(ordering: .acquiring)
            }
            seen = g
            currentLock.lock(); let job = current; currentLock.unlock()
            if let job {
                // The caller's chunks run at the caller's kernel level, whoever runs them.
                let own = mlk_set_thread_cpu_level(job.level)
                job.work()
                _ = mlk_set_thread_cpu_level(own)
            }
        }
    }
}
