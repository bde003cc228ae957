/// A pointer that the tasks of one `concurrentPerform` write at disjoint positions.
struct SharedPointer<T>: @unchecked Sendable {
    let p: UnsafeMutablePointer<T>?
    init(_ p: UnsafeMutablePointer<T>?) { self.p = p }
}
