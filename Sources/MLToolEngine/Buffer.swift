/// An owned, 64-byte aligned float buffer: packed weights, the activation arena, reference-mode values.
final class Buffer: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Float>
    let count: Int

    init(count: Int) {
        self.count = count
        let raw = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1) &* 4, alignment: 64)
        pointer = raw.bindMemory(to: Float.self, capacity: max(count, 1))
        pointer.initialize(repeating: 0, count: max(count, 1))
    }

    /// `count` floats the caller writes in full before any is read (no zero-fill first).
    init(uninitialized count: Int) {
        self.count = count
        let raw = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1) &* 4, alignment: 64)
        pointer = raw.bindMemory(to: Float.self, capacity: max(count, 1))
    }

    /// A copy of `values` (written once: no zero-fill first).
    init(_ values: [Float]) {
        count = values.count
        let raw = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1) &* 4, alignment: 64)
        pointer = raw.bindMemory(to: Float.self, capacity: max(count, 1))
        values.withUnsafeBufferPointer { b in
            if let base = b.baseAddress { pointer.initialize(from: base, count: count) } else { pointer.initialize(to: 0) }
        }
    }

    var array: [Float] { Array(UnsafeBufferPointer(start: pointer, count: count)) }

    deinit { pointer.deallocate() }
}
