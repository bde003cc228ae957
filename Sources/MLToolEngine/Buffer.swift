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

    /// `count` floats of `owner`'s memory from float `offset` (inside it: the caller's plan says so), kept alive
    /// by this view and not freed by it: a palettized layer's decode room inside an arena (`Plan.decodeOffset`).
    init(view owner: Buffer, offset: Int, count: Int) {
        precondition(offset >= 0 && count >= 0 && offset <= owner.count &- count, "a view outside its buffer")
        self.owner = owner
        self.count = count
        pointer = owner.pointer + offset
    }

    /// The buffer a view lies in (nil: this one owns its memory).
    private var owner: Buffer? = nil

    var array: [Float] { Array(UnsafeBufferPointer(start: pointer, count: count)) }

    deinit { if owner == nil { pointer.deallocate() } }
}
