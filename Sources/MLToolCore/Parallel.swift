// The one home for sharing memory with the tasks of a `DispatchQueue.concurrentPerform`: every parallel loop in
// mltool (training, text features, batch classification) uses these two types and nothing else; and for work that
// overlaps the caller's own (`BackgroundWork`).
import Foundation

/// A pointer the tasks of one `concurrentPerform` may all hold; each task reads freely and writes only positions no
/// other task touches, and the memory outlives the loop. (Sendable by that contract, which the caller keeps.)
public struct SharedPointer<T>: @unchecked Sendable {
    public let p: UnsafeMutablePointer<T>
    public init(p: UnsafeMutablePointer<T>) { self.p = p }
}

/// One slot per concurrent task: task i writes only slot i (`set`), and the slots are read after the loop ends.
public final class Slots<T>: @unchecked Sendable {
    private let slots: UnsafeMutablePointer<T?>
    private let count: Int
    public init(count: Int) {
        self.count = count
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil, count: count)
    }
    deinit { slots.deinitialize(count: count); slots.deallocate() }
    /// Stores task `i`'s result.
    public func set(_ i: Int, _ value: T) { slots[i] = value }
    /// Slot `i`'s result (nil: none stored), after the loop.
    public func value(_ i: Int) -> T? { slots[i] }
    /// The results stored, in slot order.
    public var values: [T] { (0..<count).compactMap { slots[$0] } }
}

/// One piece of work on a thread of its own while the caller goes on (double buffering: a pipeline prepares its next
/// batch while this one computes). `value()` waits for it and returns its result or rethrows its error; `wait()`
/// only waits (a caller leaving early must not let the work outlive it).
public final class BackgroundWork<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<T, Error>?   // written once by the thread, read after `done`
    private var finished = false            // touched by the caller only

    public init(_ work: @escaping @Sendable () throws -> T) {
        let thread = Thread { [self] in
            result = Result { try work() }
            done.signal()
        }
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Blocks until the work has ended (at once when it already has).
    public func wait() {
        if !finished { done.wait(); finished = true }
    }

    /// The work's result, after waiting for it.
    public func value() throws -> T {
        wait()
        guard let result else { preconditionFailure("BackgroundWork ended without a result") }
        return try result.get()
    }
}
