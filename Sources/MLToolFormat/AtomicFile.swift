import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Atomic file writes that never replace one of the command's own inputs.
public enum AtomicFile {
    /// Writes `bytes` to `path` atomically: a temporary file in the same directory is written, fsync'ed and renamed
    /// over `path`, then the directory is fsync'ed. On any error the temporary file is removed and an existing
    /// `path` is untouched. Refuses when `path` is the same file as one of `inputs` (see `refuseOverwriting`).
    public static func write(_ bytes: [UInt8], to path: String, inputs: [String] = []) throws {
        try refuseOverwriting(path, inputs: inputs)
        let directory = (path as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        let base = (path as NSString).lastPathComponent
        var template = Array("\(dir)/.\(base).tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw FormatError.cannotWrite(file: path, reason: "cannot create a temporary file in \(dir): \(errnoText())")
        }
        let temp = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var closed = false
        do {
            defer { if !closed { close(fd) } }
            try bytes.withUnsafeBytes { raw in
                var done = 0
                while done < raw.count {
                    let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw FormatError.cannotWrite(file: path, reason: "write: \(errnoText())")
                    }
                    done += n
                }
            }
            guard fchmod(fd, 0o644) == 0 else { throw FormatError.cannotWrite(file: path, reason: "fchmod: \(errnoText())") }
            guard fsync(fd) == 0 else { throw FormatError.cannotWrite(file: path, reason: "fsync: \(errnoText())") }
            closed = true
            guard close(fd) == 0 else { throw FormatError.cannotWrite(file: path, reason: "close: \(errnoText())") }
            guard rename(temp, path) == 0 else { throw FormatError.cannotWrite(file: path, reason: errnoText()) }
        } catch {
            unlink(temp)
            throw error
        }
        // The data is in place; make the rename durable.
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw FormatError.cannotWrite(file: path, reason: "open directory \(dir): \(errnoText())") }
        defer { close(dfd) }
        guard fsync(dfd) == 0 else {
            throw FormatError.cannotWrite(file: path, reason: "fsync directory \(dir): \(errnoText())")
        }
    }

    /// Throws `FormatError.overwritesInput` when `path` exists and has the same device and inode as an existing
    /// input. Both are looked up with stat(2), which follows symbolic links, so links to an input count.
    public static func refuseOverwriting(_ path: String, inputs: [String]) throws {
        var target = stat()
        guard stat(path, &target) == 0 else { return }  // nothing there yet: nothing to protect
        for input in inputs {
            var st = stat()
            guard stat(input, &st) == 0 else { continue }
            if st.st_dev == target.st_dev && st.st_ino == target.st_ino {
                throw FormatError.overwritesInput(file: path, input: input)
            }
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
