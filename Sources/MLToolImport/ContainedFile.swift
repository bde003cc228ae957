import Foundation
import Glibc
import MLToolCore

/// Reads a file that a model names by a relative path (ONNX external data, the files of an `.mlpackage`) without
/// ever leaving the model's directory. The policy (docs/SECURITY.md, "Containment of paths"):
///
/// - the path must be relative and have no `..` component (checked by the callers, which name the field);
/// - no component may be a symbolic link, not even one that points back inside: each directory is opened with
///   `O_NOFOLLOW` relative to the one before it (`openat`), so no link is ever read or resolved, and the target's
///   name never reaches the process;
/// - the file must be a regular file with exactly one hard link (`st_nlink == 1`): a hard link can make a file
///   outside the directory appear inside it, and `stat` cannot tell which name is the original.
///
/// The base directory itself (the one the user named on the command line) is opened as given.
enum ContainedFile {
    /// Why a contained read was refused or failed; callers turn it into an `ImportError` naming their field.
    enum Failure: Error {
        case symlink(component: String)
        case notRegular(component: String)
        case hardLinked(links: Int)
        case missing(component: String)
        case unreadable(reason: String)

        /// The sentence after "refused: " (or the reason of `unreadable`).
        var reason: String {
            switch self {
            case let .symlink(c): return "'\(c)' is a symbolic link (links are never followed out of the model's directory)"
            case let .notRegular(c): return "'\(c)' is not a regular file"
            case let .hardLinked(n): return "the file has \(n) hard links (a file with more than one name may live outside the model's directory)"
            case let .missing(c): return "'\(c)' does not exist"
            case let .unreadable(r): return r
            }
        }

        /// Refusals are exit 65; a missing or unreadable file is the caller's `unreadable` (exit 66).
        var isRefusal: Bool {
            switch self {
            case .symlink, .notRegular, .hardLinked: return true
            case .missing, .unreadable: return false
            }
        }
    }

    /// Opens `relative` under `directory`, component by component, refusing symlinks, non-regular files and files
    /// with more than one hard link. Returns an open read-only descriptor (the caller closes it) and the file size.
    static func open(directory: String, relative: String) throws(Failure) -> (fd: Int32, size: Int) {
        let parts = relative.split(separator: "/").map(String.init).filter { $0 != "." }
        guard let last = parts.last else { throw .notRegular(component: relative) }
        var dir = Glibc.open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { throw .unreadable(reason: "cannot open the directory '\(directory)': \(errnoText())") }
        defer { close(dir) }
        var walked = ""
        for part in parts.dropLast() {
            walked = walked.isEmpty ? part : walked + "/" + part
            let next = openat(dir, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else { throw classify(dir: dir, name: part, path: walked) }
            close(dir)
            dir = next
        }
        walked = walked.isEmpty ? last : walked + "/" + last
        // O_NONBLOCK: a FIFO planted in the package must not block the open; it is refused below.
        let fd = openat(dir, last, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw classify(dir: dir, name: last, path: walked) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            throw .unreadable(reason: "cannot stat '\(walked)': \(errnoText())")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .notRegular(component: walked)
        }
        guard st.st_nlink == 1 else {
            close(fd)
            throw .hardLinked(links: Int(st.st_nlink))
        }
        return (fd, Int(st.st_size))
    }

    /// The whole file.
    static func read(directory: String, relative: String) throws(Failure) -> Data {
        let (fd, size) = try open(directory: directory, relative: relative)
        defer { close(fd) }
        return try pread(fd: fd, offset: 0, count: size, what: relative)
    }

    /// `count` bytes at `offset` of an open descriptor; a short read is an error.
    static func pread(fd: Int32, offset: Int, count: Int, what: String) throws(Failure) -> Data {
        var data = Data(count: count)
        var done = 0
        var failed = false
        data.withUnsafeMutableBytes { raw in
            while done < count, let base = raw.baseAddress {
                let n = Glibc.pread(fd, base + done, count - done, off_t(offset + done))
                if n <= 0 { failed = n < 0; break }
                done += n
            }
        }
        guard !failed else { throw .unreadable(reason: "cannot read '\(what)': \(errnoText())") }
        guard done == count else { throw .unreadable(reason: "'\(what)' ended after \(done) of \(count) bytes") }
        return data
    }

    /// Why `openat(dir, name, O_NOFOLLOW)` failed: a symlink (ELOOP, or ENOTDIR on a link to a directory), a
    /// component that is not a directory, or a missing one.
    private static func classify(dir: Int32, name: String, path: String) -> Failure {
        let code = errno
        var st = stat()
        if fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 {
            if (st.st_mode & S_IFMT) == S_IFLNK { return .symlink(component: path) }
            if code == ENOTDIR { return .notRegular(component: path) }
        } else if errno == ENOENT || errno == ENOTDIR {
            return .missing(component: path)
        }
        return .unreadable(reason: "cannot open '\(path)': \(String(cString: strerror(code)))")
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
