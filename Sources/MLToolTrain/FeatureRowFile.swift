import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MLToolCore

/// A scratch file of float32 feature rows (row-major, `cols` values per row) for fitting a head out of core: the
/// rows are appended once, then read a block at a time (`pread`) into buffers the reader owns, so memory holds a few
/// blocks whatever the number of rows (the kernel's page cache keeps what fits; it is not the process's memory).
///
/// The file is unlinked as soon as it is created: nothing is left behind, even after `kill -9`. A read that fails
/// inside the objective (an I/O error after the rows were written) fills its block with NaN, which ends the fit at
/// the next line search, and is reported by `check()`, which the fit calls before it returns.
public final class FeatureRowFile: @unchecked Sendable {
    /// Values per row.
    public let cols: Int
    /// Rows written so far.
    public private(set) var rows = 0
    /// Where the file was created (already unlinked), for messages.
    public let path: String
    let fd: Int32  // internal: tests truncate the file under a fit
    private let rowBytes: Int
    private let lock = NSLock()
    private var failure: TrainError?

    /// Creates an empty row file in `directory` (made if missing). Throws when the folder cannot hold it.
    public init(directory: String, cols: Int) throws {
        guard cols >= 1 else {
            throw TrainError.shapeMismatch(what: "feature rows", expected: "at least 1 column", actual: "\(cols)")
        }
        self.cols = cols
        rowBytes = try Checked.mul(cols, MemoryLayout<Float>.size, what: "feature row")
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var template = Array((directory + "/.mltool-rows-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard fd >= 0 else {
            throw TrainError.io(file: path, operation: "create", offset: 0, reason: String(cString: strerror(errno)))
        }
        unlink(path)
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Appends `count` rows from `values` (count × cols).
    public func append(_ values: UnsafePointer<Float>, count: Int) throws {
        guard count >= 0 else {
            throw TrainError.shapeMismatch(what: "rows to append to \(path)", expected: "a count ≥ 0", actual: "\(count)")
        }
        let end = try Checked.add(rows, count, what: "row count")
        let (offset, length) = try span(rows..<end, limit: end)
        try transfer(write: true, offset: offset, length: length, UnsafeMutableRawPointer(mutating: values))
        rows &+= count
    }

    /// Overwrites rows `r` (rows already in the file) with `values`.
    public func write(rows r: Range<Int>, from values: UnsafePointer<Float>) throws {
        let (offset, length) = try span(r, limit: rows)
        try transfer(write: true, offset: offset, length: length, UnsafeMutableRawPointer(mutating: values))
    }

    /// Reads rows `r` into `out` (r.count × cols).
    public func read(rows r: Range<Int>, into out: UnsafeMutablePointer<Float>) throws {
        let (offset, length) = try span(r, limit: rows)
        try transfer(write: false, offset: offset, length: length, UnsafeMutableRawPointer(out))
    }

    /// `length` bytes at `offset` between the file and `buffer` (pwrite or pread, retried until done).
    private func transfer(write: Bool, offset: Int, length: Int, _ buffer: UnsafeMutableRawPointer) throws {
        var done = 0
        while done < length {
            let at = off_t(offset &+ done)
            let n = write ? pwrite(fd, buffer + done, length &- done, at) : pread(fd, buffer + done, length &- done, at)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw TrainError.io(file: path, operation: write ? "write" : "read", offset: offset &+ done,
                                    reason: n < 0 ? String(cString: strerror(errno))
                                        : "the file ends at byte \(offset &+ done), expected \(offset &+ length) bytes")
            }
            done &+= n
        }
    }

    /// Calls `body` with consecutive blocks of rows `r` (at most `blockRows` each), in order, read into a buffer it
    /// may change; when `body` returns true the block is written back.
    public func forEachBlock(_ r: Range<Int>, blockRows: Int = 1024,
                             _ body: (UnsafeMutablePointer<Float>, Range<Int>) throws -> Bool) throws {
        guard !r.isEmpty else { return }
        let step = max(1, blockRows)
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: try Checked.mul(min(step, r.count), cols))
        defer { buffer.deallocate() }
        var s = r.lowerBound
        while s < r.upperBound {
            let e = min(s &+ step, r.upperBound)
            try read(rows: s..<e, into: buffer)
            if try body(buffer, s..<e) { try write(rows: s..<e, from: buffer) }
            s = e
        }
    }

    /// `read`, for code that cannot throw (the objective's parallel blocks): on failure the block is NaN and the
    /// first error is kept for `check()`.
    func readOrFlag(rows r: Range<Int>, into out: UnsafeMutablePointer<Float>) {
        do {
            try read(rows: r, into: out)
        } catch {
            out.initialize(repeating: .nan, count: r.count &* cols)
            lock.lock()
            if failure == nil { failure = error as? TrainError ?? .io(file: path, operation: "read", offset: 0, reason: "\(error)") }
            lock.unlock()
        }
    }

    /// Throws the first read error met by `readOrFlag`, if any.
    public func check() throws {
        lock.lock()
        let f = failure
        lock.unlock()
        if let f { throw f }
    }

    /// Byte offset and length of rows `r`, refusing rows outside `0..<limit`.
    private func span(_ r: Range<Int>, limit: Int) throws -> (offset: Int, length: Int) {
        guard r.lowerBound >= 0, r.upperBound <= limit else {
            throw TrainError.shapeMismatch(what: "rows of \(path)", expected: "rows within 0..<\(limit)",
                                           actual: "\(r.lowerBound)..<\(r.upperBound)")
        }
        return (try Checked.mul(r.lowerBound, rowBytes, what: "row offset"),
                try Checked.mul(r.count, rowBytes, what: "row block"))
    }
}

/// Rows `first..<first + rows` of a `FeatureRowFile`, as a matrix the objective reads a block at a time.
struct FileRows: DenseBlockSource, @unchecked Sendable {
    let file: FeatureRowFile
    let first: Int
    let rows: Int
    var cols: Int { file.cols }

    func withBlock(rows r: Range<Int>, scratch: UnsafeMutablePointer<Float>, _ body: (UnsafePointer<Float>) -> Void) {
        file.readOrFlag(rows: (first &+ r.lowerBound)..<(first &+ r.upperBound), into: scratch)
        body(scratch)
    }
}
