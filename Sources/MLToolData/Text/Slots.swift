/// One slot per concurrent task; each task writes only its own slot, and the slots are read after the tasks end.
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
