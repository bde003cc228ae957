/// A buffer that the tasks of one `concurrentPerform` write at disjoint positions.
struct SharedBuffer: @unchecked Sendable {
    let p: UnsafeMutablePointer<Int32>?
}
