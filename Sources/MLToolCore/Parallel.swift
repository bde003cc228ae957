// The one home for sharing memory with the tasks of a `DispatchQueue.concurrentPerform`: every parallel loop in
// mltool (training, text features, batch classification) uses these two types and nothing else.

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
    /// The results stored, in slot order.
    public var values: [T] { (0..<count).compactMap { slots[$0] } }
}
