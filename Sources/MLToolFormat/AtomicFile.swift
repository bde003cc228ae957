import Foundation
import MLToolCore
#if canImport(Glibc)
import Glibc
#endif

/// Atomic file writes that never replace one of the command's own inputs.
public enum AtomicFile {
    /// Writes `bytes` to `path` atomically (`AtomicReplace`): a temporary file `.<name>.tmp-<pid>@<host>-XXXXXX` in the same
    /// directory is written, fsync'ed and renamed over `path`, then the directory is fsync'ed. On any error (or a
    /// kill) an existing `path` is untouched; an error removes the temporary file, and a killed writer's temporary
    /// file is removed by the next write of the same path. Refuses when `path` is the same file as one of `inputs`
    /// (see `refuseOverwriting`) or an existing directory. Every failure is `FormatError.cannotWrite` (exit 73)
    /// naming the file and the system's reason.
    public static func write(_ bytes: [UInt8], to path: String, inputs: [String] = []) throws {
        try refuseOverwriting(path, inputs: inputs)
        do {
            try AtomicReplace.write(bytes, to: path, durable: true)
        } catch {
            throw FormatError.cannotWrite(file: path, reason: error.description)
        }
    }

    /// Creates the output directory `path` (and its parents) for commands that write several files into one;
    /// a failure is `FormatError.cannotWrite` (exit 73) with the system's reason.
    public static func makeDirectory(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part
            if mkdir(prefix, 0o755) != 0 {
                let code = errno
                var st = stat()
                guard code == EEXIST, stat(prefix, &st) == 0, (st.st_mode & 0o170000) == 0o040000 else {
                    let reason = code == EEXIST ? "\(prefix) exists and is not a directory" : String(cString: strerror(code))
                    throw FormatError.cannotWrite(file: path, reason: reason)
                }
            }
            prefix += "/"
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

}
