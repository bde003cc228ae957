import Foundation
import MLToolCore
#if canImport(Glibc)
import Glibc
#endif

/// The bytes of a whole model file: a read-only private memory mapping (unmapped on deinit) or an owned, 64-byte
/// aligned copy. Tensors read from the file are `TensorBytes` views that keep this object alive.
final class FileStorage: PageReleasing, @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer
    private let mappedLength: Int
    private let allocated: UnsafeMutableRawBufferPointer?

    /// Maps `path` with PROT_READ, MAP_PRIVATE; `populate` pre-faults the pages (the reader hashes all of them).
    init(mapping path: String, populate: Bool) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FormatError.cannotOpen(file: path, reason: Self.errnoText()) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FormatError.ioError(file: path, reason: Self.errnoText()) }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw FormatError.cannotOpen(file: path, reason: "not a regular file")
        }
        let size = Int(st.st_size)
        allocated = nil
        guard size > 0 else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            mappedLength = 0
            return
        }
        let flags = MAP_PRIVATE | (populate ? MAP_POPULATE : 0)
        guard let p = mmap(nil, size, PROT_READ, flags, fd, 0), p != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw FormatError.ioError(file: path, reason: "mmap: " + Self.errnoText())
        }
        bytes = UnsafeRawBufferPointer(start: p, count: size)
        mappedLength = size
    }

    /// Copies `source` into owned memory.
    init(copying source: [UInt8]) {
        let m = UnsafeMutableRawBufferPointer.allocate(byteCount: max(source.count, 1), alignment: 64)
        source.withUnsafeBytes { if let b = $0.baseAddress { m.baseAddress!.copyMemory(from: b, byteCount: $0.count) } }
        allocated = m
        mappedLength = 0
        bytes = UnsafeRawBufferPointer(rebasing: m[0..<source.count])
    }

    /// The whole pages of a mapping inside `range` go back to the kernel (MADV_DONTNEED): a private, read-only file
    /// mapping reads them from the file again when next touched, so the bytes are unchanged. Nothing for a copy.
    func releasePages(_ range: UnsafeRawBufferPointer) {
        guard mappedLength > 0, let base = bytes.baseAddress, let start = range.baseAddress else { return }
        let page = max(1, sysconf(Int32(_SC_PAGESIZE)))
        let lo = max(Int(bitPattern: start), Int(bitPattern: base))
        let hi = min(Int(bitPattern: start) &+ range.count, Int(bitPattern: base) &+ mappedLength)
        let first = (lo &+ page &- 1) / page &* page, end = hi / page &* page
        guard end > first, let p = UnsafeMutableRawPointer(bitPattern: first) else { return }
        _ = madvise(p, end &- first, MADV_DONTNEED)
    }

    deinit {
        if let a = allocated { a.deallocate() }
        if mappedLength > 0, let p = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: p), mappedLength) }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
