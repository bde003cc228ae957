import CMLToolHDF5Sandbox
import Foundation
import MLToolCore

/// The parent's side of one sandboxed HDF5 reader: a forked child (see `CMLToolHDF5Sandbox.h`) that runs libhdf5
/// on one already-open file and answers requests over a socket. The child can read that file and the socket, write
/// the socket and manage its own memory; nothing else (seccomp), under CPU and address-space limits. Here: a
/// wall-clock deadline, checked framing, and the child's end turned into an `ImportError` naming the file. The
/// first failure sticks: every later request throws it too.
final class HDF5Sandbox {
    /// What the reader may spend; the defaults depend on the file's size.
    struct Limits {
        /// Wall-clock seconds for the whole read.
        var timeout: Double
        /// CPU seconds (RLIMIT_CPU): a loop that outlives the deadline ends by SIGXCPU.
        var cpuSeconds: UInt64
        /// Address space the child may add to what it inherits (RLIMIT_AS).
        var extraAddressSpace: UInt64
        /// A fault the child commits before it serves (`MLT_H5_FAULT_*`): tests of the confinement only.
        var fault: Int32 = Int32(MLT_H5_FAULT_NONE)

        /// 30 s plus 1 s per 50 MB of file; CPU 5 s more; 1 GiB plus 4 bytes per byte of file. `MLTOOL_HDF5_TIMEOUT`
        /// (seconds) overrides the deadline, for tests and for slow disks.
        static func `default`(fileSize: Int) -> Limits {
            var timeout = 30 + Double(fileSize) / 50e6
            if let text = ProcessInfo.processInfo.environment["MLTOOL_HDF5_TIMEOUT"], let t = Double(text), t > 0 {
                timeout = t
            }
            let size = UInt64(max(0, fileSize))
            let (extra, overflow) = size.multipliedReportingOverflow(by: 4)
            return Limits(timeout: timeout, cpuSeconds: UInt64(timeout.rounded(.up)) + 5,
                          extraAddressSpace: overflow ? .max : (1 << 30) &+ extra)
        }
    }

    /// The most bytes a reply other than float values may have (string attributes are capped lower by the caller).
    static let maxReplyBytes = 1 << 29

    let file: String
    let limits: Limits
    private let pid: pid_t
    private let channel: Int32
    private let deadline: Double
    private var reaped = false, closed = false
    /// The first failure of the child; later requests throw it again.
    private(set) var failure: ImportError?

    /// Starts the reader of `fd` (open read-only, `fileSize` bytes). The caller may close `fd` afterwards.
    init(fd: Int32, fileSize: Int, file: String, limits: Limits) throws {
        self.file = file
        self.limits = limits
        var child: Int32 = 0, socket: Int32 = -1
        let rc = mlt_h5_spawn(fd, UInt64(max(0, fileSize)),
                              mlt_h5_limits(cpu_seconds: limits.cpuSeconds, extra_address_space: limits.extraAddressSpace,
                                            fault: UInt32(limits.fault)),
                              &child, &socket)
        guard rc == 0 else {
            let why = rc == ELIBACC ? "libhdf5 is not installed (Debian: apt install libhdf5-103-1, or libhdf5-dev)"
                : rc == ELIBBAD ? "the installed libhdf5's major.minor version is not the one mltool was built against"
                : String(cString: strerror(rc))
            throw ImportError.isolation(file: file, reason: "cannot start the sandboxed HDF5 reader: \(why)")
        }
        pid = child
        channel = socket
        deadline = Self.now() + limits.timeout
    }

    /// A reader with no child: `channel` is one end of a socket whose other end plays the child's part (the replies
    /// come from there, the requests go there). For fuzzing the parent's checks of the replies
    /// (`HDF5File.replaying`); nothing is killed or reaped.
    init(replaying channel: Int32, file: String, limits: Limits) {
        self.file = file
        self.limits = limits
        pid = 0
        self.channel = channel
        deadline = Self.now() + limits.timeout
    }

    deinit {
        finish()
    }

    // MARK: - Requests

    /// One request to the reader (see `CMLToolHDF5Sandbox.h` for each op's meaning and reply).
    struct Request {
        var op: Int32
        var handle: UInt32 = 0
        var a: UInt64 = 0
        var b: UInt64 = 0
        var text: String = ""

        /// The request as it goes on the wire: a 32-byte header and the text.
        var bytes: [UInt8] {
            var writer = ByteWriter()
            let text = Array(self.text.utf8)
            writer.u32(UInt32(bitPattern: op))
            writer.u32(handle)
            writer.u64(a)
            writer.u64(b)
            writer.u32(UInt32(text.count))
            writer.u32(0)
            writer.append(text)
            return writer.bytes
        }
    }

    /// The most request bytes in flight before replies are read: far below a socket's buffer, so neither side can
    /// block the other (the child stops reading requests while it writes a reply nobody reads yet).
    static let window = 32 << 10
    /// The largest values part of a reply: `maxElements` float32s.
    static let maxValuesBytes = (1 << 30) * 4

    /// Sends `requests` (pipelined: the child works on the next while this process reads the last) and hands each
    /// reply, in order, to `handle`. When `handle` throws, the remaining replies are still read and dropped (the
    /// stream stays in step) and the first error is thrown; a failure of the child itself ends it at once.
    func exchange<T>(_ requests: [Request], _ handle: (Int, inout Reply) throws -> T) throws -> [T] {
        if let failure { throw failure }
        var results: [T] = []
        results.reserveCapacity(requests.count)
        var firstError: Error?
        let wire = requests.map(\.bytes)
        var sent = 0, inFlight = 0
        for i in requests.indices {
            while sent < requests.count && (sent == i || inFlight + wire[sent].count <= Self.window) {
                try send(wire[sent])
                inFlight += wire[sent].count
                sent += 1
            }
            var reply = try receiveReply(request: "request \(requests[i].op)")
            inFlight -= wire[i].count
            if firstError == nil {
                do {
                    results.append(try handle(i, &reply))
                } catch {
                    if let failure { throw failure }
                    firstError = error
                }
            }
            try discard(reply.valuesLeft)
        }
        if let firstError { throw firstError }
        return results
    }

    /// One request, one reply.
    func request<T>(_ request: Request, _ handle: (inout Reply) throws -> T) throws -> T {
        guard let result = try exchange([request], { _, reply in try handle(&reply) }).first else {
            throw fail(malformed: "no reply")
        }
        return result
    }

    /// Asks the child to quit and reaps it; a child that does not end within a second is killed.
    func finish() {
        if failure == nil && !reaped && !closed {
            try? send(Int32(MLT_H5_OP_QUIT))
            // The child closes its end as it exits: wait for that end of file rather than polling with sleeps.
            var poller = pollfd(fd: channel, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, 1000)
        }
        closeChannel()
        guard !reaped else { return }
        if waitForExit(attempts: 50, pause: 200) == nil { killAndReap() }
    }

    private func closeChannel() {
        guard !closed else { return }
        closed = true
        close(channel)
    }

    /// Polls for the child's end; its waitpid status, or nil while it runs on.
    private func waitForExit(attempts: Int, pause: UInt32) -> Int32? {
        var status: Int32 = 0
        if pid <= 0 { reaped = true; return status }   // replaying: no child (waitpid(0) would wait for any)
        for _ in 0..<attempts {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid {
                reaped = true
                return status
            }
            if r < 0 && errno != EINTR {
                reaped = true
                return nil
            }
            usleep(pause)
        }
        return nil
    }

    /// Kills the child (never after it was reaped: its pid could belong to another process by then) and reaps it.
    @discardableResult
    private func killAndReap() -> Int32 {
        guard !reaped else { return 0 }
        guard pid > 0 else { reaped = true; return 0 }   // replaying: no child (kill(0) would signal the group)
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped = true
        return status
    }

    // MARK: - Framing

    private func send(_ bytes: [UInt8]) throws {
        if let failure { throw failure }
        let rc = bytes.withUnsafeBytes { mlt_h5_send(channel, $0.baseAddress, UInt64($0.count)) }
        guard rc == 0 else { throw fail(ended: "the HDF5 reader stopped taking requests") }
    }

    private func send(_ op: Int32) throws {
        try send(Request(op: op).bytes)
    }

    /// Reads one reply's header and facts; its values stay on the socket for the handler (`Reply.values`).
    private func receiveReply(request: String) throws -> Reply {
        if let failure { throw failure }
        var header = [UInt8](repeating: 0, count: 16)
        try header.withUnsafeMutableBytes { try receiveExactly($0, what: "reply") }
        let status = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 0, as: UInt32.self) }
        let factsLength = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self) }
        let valuesLength = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self) }
        guard status == UInt32(MLT_H5_STATUS_OK) else {
            throw fail(malformed: "the reader refused \(request) (status \(status))")
        }
        guard Int(factsLength) <= Self.maxReplyBytes, valuesLength <= UInt64(Self.maxValuesBytes), valuesLength % 4 == 0 else {
            throw fail(malformed: "a reply of \(factsLength) + \(valuesLength) bytes to \(request)")
        }
        // The facts grow a MiB at a time as they arrive: a reply that claims more than it sends costs memory for
        // what it sent, not for its claim (a 6 KB replay claiming 444 MB made the parent zero all of it).
        var facts = [UInt8]()
        let total = Int(factsLength)
        facts.reserveCapacity(min(total, 1 << 20))
        while facts.count < total {
            let start = facts.count, piece = min(1 << 20, total - start)
            facts.append(contentsOf: repeatElement(0, count: piece))
            try facts.withUnsafeMutableBytes {
                try receiveExactly(UnsafeMutableRawBufferPointer(rebasing: $0[start..<(start + piece)]), what: "reply")
            }
        }
        return Reply(facts, sandbox: self, request: request, valuesLeft: Int(valuesLength))
    }

    /// Reads the values part of the current reply into `count` floats; the reply announced exactly that many bytes.
    fileprivate func receiveValues(count: Int, announced: Int) throws -> [Float] {
        let (bytes, overflow) = count.multipliedReportingOverflow(by: 4)
        guard !overflow, announced == bytes else {
            throw fail(malformed: "\(announced) bytes of values where \(count) float32 values were announced")
        }
        var failed: Error?
        // The capacity is reserved, not touched: pages become resident only as the reader's bytes arrive, so a
        // reply that claims more than it sends costs memory for what it sent. On a failure nothing is
        // initialised (floats need no deinitialisation), rather than zeroing the whole claimed size.
        let values = [Float](unsafeUninitializedCapacity: count) { buffer, done in
            do {
                try receiveExactly(UnsafeMutableRawBufferPointer(buffer), what: "values")
                done = count
            } catch {
                failed = error
                done = 0
            }
        }
        if let failed { throw failed }
        return values
    }

    /// Reads and drops `count` bytes (the values of a reply nobody took).
    private func discard(_ count: Int) throws {
        var left = count
        var scratch = [UInt8](repeating: 0, count: min(left, 1 << 16))
        while left > 0 {
            let n = min(left, scratch.count)
            try scratch.withUnsafeMutableBytes { try receiveExactly(UnsafeMutableRawBufferPointer(rebasing: $0[0..<n]), what: "values") }
            left -= n
        }
    }

    private func receiveExactly(_ buffer: UnsafeMutableRawBufferPointer, what: String) throws {
        var done = 0
        while done < buffer.count {
            let left = deadline - Self.now()
            guard left > 0 else { throw fail(timedOut: ()) }
            var poller = pollfd(fd: channel, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left * 1000 + 1, 60_000)))
            if ready < 0 {
                if errno == EINTR { continue }
                throw fail(ended: "the HDF5 reader's socket failed")
            }
            if ready == 0 { continue }
            guard let base = buffer.baseAddress else { return }
            let n = read(channel, base + done, buffer.count - done)
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw fail(ended: "the HDF5 reader's socket failed")
            }
            if n == 0 { throw fail(ended: "the HDF5 reader ended without an answer") }
            done += n
        }
    }

    // MARK: - Failures

    private func fail(timedOut: Void) -> ImportError {
        killAndReap()
        closeChannel()
        return stick(.malformed(file: file, reason: "the HDF5 library failed on this file: no result within \(Self.seconds(limits.timeout))"))
    }

    /// The child stopped answering: how it ended says why (it may still be exiting: give it a moment).
    private func fail(ended fallback: String) -> ImportError {
        let status = waitForExit(attempts: 50, pause: 2_000) ?? killAndReap()
        closeChannel()
        return stick(Self.describe(status: status, file: file, limits: limits, fallback: fallback))
    }

    /// Ends the child for a reply that breaks the protocol; the returned error sticks.
    func fail(malformed detail: String) -> ImportError {
        killAndReap()
        closeChannel()
        return stick(.malformed(file: file, reason: "the HDF5 reader sent a malformed reply: \(detail)"))
    }

    private func stick(_ error: ImportError) -> ImportError {
        if failure == nil { failure = error }
        return failure ?? error
    }

    /// The message for a child that ended with `status` (as waitpid gives it).
    static func describe(status: Int32, file: String, limits: Limits, fallback: String) -> ImportError {
        let signal = status & 0x7f
        if signal != 0 && signal != 0x7f {
            var what = "killed by signal \(signal)"
            if let name = signalNames[signal] { what += " (\(name))" }
            if signal == SIGXCPU { what += ": CPU time limit of \(limits.cpuSeconds) s" }
            if signal == SIGSYS { what += ": a system call the sandbox forbids" }
            return .malformed(file: file, reason: "the HDF5 library failed on this file: \(what)")
        }
        let code = (status >> 8) & 0xff
        switch code {
        case Int32(MLT_H5_EXIT_NO_MEMORY):
            return .malformed(file: file, reason: "the HDF5 library failed on this file: it needed more than its memory limit (\(limits.extraAddressSpace >> 20) MiB)")
        case Int32(MLT_H5_EXIT_NO_NEW_PRIVS), Int32(MLT_H5_EXIT_SECCOMP), Int32(MLT_H5_EXIT_RLIMIT),
             Int32(MLT_H5_EXIT_DESCRIPTORS), Int32(MLT_H5_EXIT_UNSUPPORTED):
            let why = isolationFailures[code] ?? "status \(code)"
            return .isolation(file: file, reason: "the HDF5 reader's sandbox could not be set up (\(why)); mltool never reads HDF5 outside it")
        case 0:
            return .malformed(file: file, reason: "the HDF5 library failed on this file: \(fallback)")
        default:
            return .malformed(file: file, reason: "the HDF5 library failed on this file: the reader exited with status \(code)")
        }
    }

    private static let signalNames: [Int32: String] = [
        SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGABRT: "SIGABRT", SIGILL: "SIGILL", SIGFPE: "SIGFPE",
        SIGKILL: "SIGKILL", SIGXCPU: "SIGXCPU", SIGSYS: "SIGSYS", SIGTRAP: "SIGTRAP", SIGPIPE: "SIGPIPE",
    ]

    private static let isolationFailures: [Int32: String] = [
        Int32(MLT_H5_EXIT_NO_NEW_PRIVS): "PR_SET_NO_NEW_PRIVS refused",
        Int32(MLT_H5_EXIT_SECCOMP): "the seccomp filter was refused",
        Int32(MLT_H5_EXIT_RLIMIT): "a resource limit was refused",
        Int32(MLT_H5_EXIT_DESCRIPTORS): "its file descriptors could not be arranged",
        Int32(MLT_H5_EXIT_UNSUPPORTED): "no seccomp filter for this CPU architecture",
    ]

    private static func seconds(_ t: Double) -> String {
        t == t.rounded() ? "\(Int(t)) s" : String(format: "%.1f s", t)
    }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}

/// A checked reader of one reply's facts from the sandboxed reader: any shortfall ends the reader as a protocol
/// failure.
struct Reply {
    private let bytes: [UInt8]
    private let sandbox: HDF5Sandbox
    private let request: String
    private var offset = 0
    /// Bytes of values that follow the facts on the socket and were not taken yet.
    private(set) var valuesLeft: Int

    init(_ bytes: [UInt8], sandbox: HDF5Sandbox, request: String, valuesLeft: Int) {
        self.bytes = bytes; self.sandbox = sandbox; self.request = request; self.valuesLeft = valuesLeft
    }

    /// The reply's values: exactly `count` float32s must have been announced. Taken once.
    mutating func values(count: Int) throws -> [Float] {
        let announced = valuesLeft
        valuesLeft = 0
        return try sandbox.receiveValues(count: count, announced: announced)
    }

    private mutating func take(_ count: Int, _ what: String) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - offset else {
            throw sandbox.fail(malformed: "\(request) reply ends before its \(what)")
        }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    private mutating func load<T: FixedWidthInteger>(_ what: String, as: T.Type) throws -> T {
        let slice = try take(MemoryLayout<T>.size, what)
        return slice.withUnsafeBytes { $0.loadUnaligned(as: T.self) }
    }

    mutating func u8(_ what: String) throws -> UInt8 { try load(what, as: UInt8.self) }
    mutating func u32(_ what: String) throws -> UInt32 { try load(what, as: UInt32.self) }
    mutating func i32(_ what: String) throws -> Int32 { try load(what, as: Int32.self) }
    mutating func u64(_ what: String) throws -> UInt64 { try load(what, as: UInt64.self) }

    mutating func flag(_ what: String) throws -> Bool {
        switch try u8(what) {
        case 0: return false
        case 1: return true
        case let v: throw sandbox.fail(malformed: "\(request) \(what) = \(v)")
        }
    }

    mutating func string(_ what: String) throws -> String {
        let length = Int(try u32(what))
        return String(decoding: try take(length, what), as: UTF8.self)
    }

    /// Dimensions as the reader reports them: rank (-1 no dataspace, -2 null dataspace → [0]) then each size.
    mutating func dims(place: String) throws -> [Int] {
        let rank = try i32("rank")
        let file = sandbox.file
        if rank == -1 { throw ImportError.malformed(file: file, reason: "\(place): no dataspace") }
        if rank == -2 { return [0] }
        guard rank >= 0, rank <= 32 else {
            throw ImportError.invalid(file: file, place: place, expected: "rank ≤ 32", actual: "\(rank)")
        }
        return try (0..<Int(rank)).map { _ in
            let d = try u64("dimension")
            guard d <= UInt64(Int.max) else {
                throw ImportError.invalid(file: file, place: place, expected: "dimensions that fit in Int", actual: "\(d)")
            }
            return Int(d)
        }
    }
}
