import Foundation

/// Owns the C memory of a protobuf-c message tree built from Swift: every struct, string and array allocated
/// through it is freed when the arena goes away, after the tree has been packed.
final class CArena {
    private var blocks: [UnsafeMutableRawPointer] = []

    deinit { for b in blocks { free(b) } }

    private func raw(_ bytes: Int) -> UnsafeMutableRawPointer {
        guard let p = malloc(max(bytes, 1)) else { fatalError("out of memory (\(bytes) bytes)") }
        blocks.append(p)
        return p
    }

    /// A heap copy of `value` (a C struct).
    func new<T>(_ value: T) -> UnsafeMutablePointer<T> {
        let p = raw(MemoryLayout<T>.stride).bindMemory(to: T.self, capacity: 1)
        p.initialize(to: value)
        return p
    }

    /// A NUL-terminated copy of `s`.
    func string(_ s: String) -> UnsafeMutablePointer<CChar> {
        let utf8 = Array(s.utf8CString)
        let p = raw(utf8.count).bindMemory(to: CChar.self, capacity: utf8.count)
        p.initialize(from: utf8, count: utf8.count)
        return p
    }

    /// A heap copy of `values`, or nil when empty (protobuf-c pairs it with a count of 0).
    func array<T>(_ values: [T]) -> UnsafeMutablePointer<T>? {
        guard !values.isEmpty else { return nil }
        let p = raw(MemoryLayout<T>.stride * values.count).bindMemory(to: T.self, capacity: values.count)
        p.initialize(from: values, count: values.count)
        return p
    }

    /// An array of pointers to heap copies of `values` (repeated message fields).
    func messages<T>(_ values: [T]) -> UnsafeMutablePointer<UnsafeMutablePointer<T>?>? {
        array(values.map { Optional(new($0)) })
    }

    /// Strings as a `char **` array.
    func strings(_ values: [String]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        array(values.map { Optional(string($0)) })
    }

    /// Bytes as a `char *` block with its length (a protobuf `bytes` field).
    func bytes(_ b: [UInt8]) -> (Int, UnsafeMutablePointer<UInt8>?) {
        (b.count, array(b))
    }
}
