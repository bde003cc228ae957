import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Replaces a file with new bytes so that, whatever happens to the process (an error, `kill -9`, a full disk), the
/// path holds either the old file or the new one, never a mixture (docs/SECURITY.md, "Crash safety").
///
/// The bytes go to `.<name>.tmp-<pid>@<host>-XXXXXX` in the target's own directory (so the rename never crosses a
/// file system), which is fsync'ed when `durable`, renamed over the target, and the directory fsync'ed. A temporary
/// file left by a killed process is removed by the next write of the same name on the same host once its pid is no
/// longer alive; another host's files are left alone (on a shared file system its pid means nothing here).
/// Callers (MLToolFormat's `AtomicFile`, MLToolData's `FeatureCache`) turn a `Failure` into their own typed error.
public enum AtomicReplace {
    /// Why a replace failed: the step and the system's reason (strerror text, e.g. "No space left on device").
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var step: String
        public var reason: String
        public var code: Int32
        public var description: String { step.isEmpty ? reason : "\(step): \(reason)" }
    }

    /// Writes `bytes` to `path` through a temporary file and rename(2); an existing `path` is untouched on failure.
    /// An existing directory at `path` is refused (a directory is never replaced).
    public static func write(_ bytes: [UInt8], to path: String, durable: Bool = true,
                             removingStale: Bool = true) throws(Failure) {
        let directory = (path as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        let base = (path as NSString).lastPathComponent
        var st = stat()
        if stat(path, &st) == 0 && (st.st_mode & 0o170000) == 0o040000 {
            throw Failure(step: "", reason: "it is a directory (mltool writes single files and never replaces a directory)", code: EISDIR)
        }
        if removingStale { removeStaleTemporaries(of: base, in: dir) }
        var template = Array("\(dir)/.\(base).tmp-\(getpid())@\(host)-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw failure("cannot create a temporary file in \(dir)") }
        let temp = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var isOpen = true
        do throws(Failure) {
            defer { if isOpen { close(fd) } }
            try writeAll(fd, bytes)
            guard fchmod(fd, 0o644) == 0 else { throw failure("fchmod") }
            if durable { guard fsync(fd) == 0 else { throw failure("fsync") } }
            isOpen = false
            guard close(fd) == 0 else { throw failure("close") }
            guard rename(temp, path) == 0 else { throw failure("rename") }
        } catch {
            unlink(temp)
            throw error
        }
        guard durable else { return }
        // The data is in place; make the rename durable.
        let dfd = Glibc.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw failure("open directory \(dir)") }
        defer { close(dfd) }
        guard fsync(dfd) == 0 else { throw failure("fsync directory \(dir)") }
    }

    /// This machine's name as temporary files carry it (no "/", at most 64 bytes).
    public static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .replacingOccurrences(of: "/", with: "_")
        return name.isEmpty ? "localhost" : String(name.prefix(64))
    }()

    /// Removes `.<base>.tmp-<pid>@<host>-*` files in `dir` (any base when `base` is nil) written on this host whose
    /// pid is not a live process: a killed writer's leftovers. Files of other hosts (a shared cache on NFS, pods of
    /// one Job) are never touched; files without a host (older releases) count as this host's. A pid reused by an
    /// unrelated live process keeps its file until a later write; nothing else is touched.
    public static func removeStaleTemporaries(of base: String?, in dir: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return }
        for name in names where name.hasPrefix(".") {
            let rest: Substring
            if let base {
                guard name.hasPrefix(".\(base).tmp-") else { continue }
                rest = name.dropFirst(base.count + 6)
            } else {
                guard let r = name.range(of: ".tmp-", options: .backwards), r.lowerBound > name.startIndex else { continue }
                rest = name[r.upperBound...]
            }
            guard let end = rest.firstIndex(where: { $0 == "@" || $0 == "-" }), let pid = pid_t(rest[..<end]), pid > 0,
                  pid != getpid() else { continue }
            if rest[end] == "@" {
                let afterAt = rest[rest.index(after: end)...]
                guard let dash = afterAt.lastIndex(of: "-"), afterAt[..<dash] == host else { continue }
            }
            if kill(pid, 0) != 0 && errno == ESRCH { unlink(dir + "/" + name) }
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(Failure) {
        var done = 0
        while done < bytes.count {
            let allowed = CrashHook.allow(bytes.count - done)
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, allowed) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure("write")
            }
            done += n
            CrashHook.wrote(n)
        }
    }

    private static func failure(_ step: String) -> Failure {
        let code = errno
        return Failure(step: step, reason: String(cString: strerror(code)), code: code)
    }
}

/// A test-only crash injector: with `MLTOOL_TEST_CRASH_AFTER_BYTES=N` in the environment (read once), the process
/// sends itself SIGKILL as soon as N bytes in total have been written to temporary files by `AtomicReplace`.
/// It only ever kills the process, at a moment a real `kill -9` could also pick; without the variable it does nothing.
public enum CrashHook {
    private static let limit: Int? = {
        guard let s = ProcessInfo.processInfo.environment["MLTOOL_TEST_CRASH_AFTER_BYTES"], let n = Int(s), n >= 0 else { return nil }
        return n
    }()
    nonisolated(unsafe) private static var written = 0
    private static let lock = NSLock()

    /// How many of `count` bytes may be written now (all of them unless the hook is armed).
    static func allow(_ count: Int) -> Int {
        guard let limit else { return count }
        lock.lock(); defer { lock.unlock() }
        if written >= limit { raise(SIGKILL) }
        return max(1, min(count, limit - written))
    }

    /// Records `count` bytes written; kills the process once the limit is reached.
    static func wrote(_ count: Int) {
        guard let limit else { return }
        lock.lock(); defer { lock.unlock() }
        written += count
        if written >= limit { raise(SIGKILL) }
    }
}
