/// An owned, 64-byte aligned float buffer: packed weights, activation-arena slots, reference-mode values.
final class Buffer: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Float>
    let count: Int

    init(count: Int) {
        self.count = count
        let raw = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1) &* 4, alignment: 64)
        pointer = raw.bindMemory(to: Float.self, capacity: max(count, 1))
        pointer.initialize(repeating: 0, count: max(count, 1))
    }

    convenience init(_ values: [Float]) {
        self.init(count: values.count)
        values.withUnsafeBufferPointer { if let b = $0.baseAddress { pointer.update(from: b, count: values.count) } }
    }

    var array: [Float] { Array(UnsafeBufferPointer(start: pointer, count: count)) }

    deinit { pointer.deallocate() }
}
