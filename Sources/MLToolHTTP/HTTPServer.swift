import CMicroHTTPD
import Foundation

/// An HTTP/1.1 server on libmicrohttpd (Debian's libmicrohttpd): its epoll threads accept and read, mltool never
/// parses HTTP itself. A request's head goes to `HTTPHandler.screen` before any body byte is read (a Content-Length
/// over `maxBodyBytes` is refused with 413 there, unread); the body is gathered up to that limit (a chunked one that
/// runs over it: 413); then `handle` gets the request and the connection is suspended until it replies, so a request
/// waiting for a batch holds no thread.
public final class HTTPServer: @unchecked Sendable {
    /// The daemon's limits (`ModelServerParameters` sets them from its options).
    public struct Limits: Sendable, Equatable {
        /// The most bytes of a request body.
        public var maxBodyBytes = 32 << 20
        /// Connections open at once; more are refused at accept.
        public var connections = 1024
        /// Connections open at once from one address (0: no limit).
        public var connectionsPerAddress = 0
        /// An idle or slow client (a slow-loris one) is closed after this many seconds without progress.
        public var timeoutSeconds = 10
        /// The daemon's polling threads.
        public var threads = 2

        public init() {}
    }

    public let host: String
    public private(set) var port: Int = 0
    public let limits: Limits
    private let handler: any HTTPHandler
    private var daemon: OpaquePointer?
    private let lock = NSLock()
    private var active = 0
    /// Set by `stop`: every response from then on closes its connection.
    private var stopping = false
    /// The requests whose connection is suspended while their handler works, with that connection (MHD panics if it
    /// is stopped with one: `stop` waits for them, and answers them 503 at its deadline).
    private var suspended: [ObjectIdentifier: (exchange: Exchange, connection: SuspendedConnection)] = [:]

    /// A suspended connection's address, which MHD keeps valid until it is resumed; it crosses threads only to be
    /// resumed.
    struct SuspendedConnection: @unchecked Sendable { let pointer: OpaquePointer }

    /// Starts listening on `host` (an address literal) and `port` (0: an ephemeral one, see `port`).
    public init(host: String, port: Int, limits: Limits = Limits(), handler: any HTTPHandler) throws {
        self.host = host; self.limits = limits; self.handler = handler
        guard (0...65535).contains(port) else { throw HTTPError.cannotStart(host: host, port: port, reason: "not a port number") }
        var c = mlt_mhd_limits()
        c.connection_limit = UInt32(clamping: limits.connections)
        c.per_ip_limit = UInt32(clamping: limits.connectionsPerAddress)
        c.timeout_seconds = UInt32(clamping: limits.timeoutSeconds)
        c.threads = UInt32(clamping: limits.threads)
        c.memory_limit = 64 << 10
        let me = Unmanaged.passUnretained(self).toOpaque()
        errno = 0
        let d = host.withCString { mlt_mhd_start($0, UInt16(port), c, accessCallback, me, completedCallback, me) }
        guard let d else {
            let probe = host.withCString { h -> Bool in
                var a = in6_addr()
                return inet_pton(AF_INET, h, &a) == 1 || inet_pton(AF_INET6, h, &a) == 1
            }
            if !probe { throw HTTPError.badAddress(host: host) }
            throw HTTPError.cannotStart(host: host, port: port, reason: errno != 0 ? String(cString: strerror(errno)) : "libmicrohttpd refused to start")
        }
        daemon = d
        self.port = Int(mlt_mhd_port(d))
    }

    deinit { if let daemon { MHD_stop_daemon(daemon) } }

    /// Requests received and not yet answered.
    public var inFlight: Int { lock.withLock { active } }

    /// Stops accepting connections (the listening socket is closed at once, so a new connection is refused, never
    /// left unread in the backlog), answers every request already received — each response from now on closes its
    /// connection, so a keep-alive client's next request goes to a new connection, which is refused — waiting up to
    /// `drainSeconds`, then stops. Requests still waiting for their handler at the deadline are answered 503. Returns
    /// how many requests were unanswered at the deadline (0: a clean drain).
    @discardableResult
    public func stop(drainSeconds: Double = 30) -> Int {
        guard let d = lock.withLock({ () -> OpaquePointer? in
            defer { daemon = nil }
            stopping = true
            return daemon
        }) else { return 0 }
        let listener = MHD_quiesce_daemon(d)
        if listener >= 0 { close(listener) }
        let deadline = Date().addingTimeInterval(drainSeconds)
        while inFlight > 0 && Date() < deadline { usleep(5_000) }
        let left = inFlight
        // MHD may not be stopped with a suspended connection: those still waiting are answered now.
        for (exchange, connection) in lock.withLock({ Array(suspended.values) }) {
            exchange.lock.withLock {
                guard exchange.reply == nil else { return }
                exchange.reply = .json(503, "{\"error\": \"the server stopped before this request was answered\"}")
                MHD_resume_connection(connection.pointer)
            }
        }
        let resumed = Date().addingTimeInterval(5)
        while lock.withLock({ !suspended.isEmpty }) && Date() < resumed { usleep(5_000) }
        MHD_stop_daemon(d)
        return left
    }

    // MARK: - The callbacks

    /// One request as it passes through the callbacks (kept in MHD's per-request pointer).
    final class Exchange: @unchecked Sendable {
        let lock = NSLock()
        let head: HTTPRequestHead
        var body: [UInt8] = []
        var answered = false       // a response has been queued (then further body bytes are dropped)
        var handed = false         // `handle` was called
        var suspended = false
        var reply: HTTPResponse?

        init(head: HTTPRequestHead) { self.head = head }
    }

    fileprivate func access(_ connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
                            size: UnsafeMutablePointer<Int>, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let raw = context.pointee else {
            // The head: screen it before reading any of the body.
            let head = HTTPRequestHead(method: method, path: url, headers: Self.values(connection, .HEADER_KIND),
                                       arguments: Self.values(connection, .GET_ARGUMENT_KIND))
            let exchange = Exchange(head: head)
            context.pointee = Unmanaged.passRetained(exchange).toOpaque()
            lock.withLock { active += 1 }
            let announced = head.contentLength
            if let refusal = handler.screen(head) {
                exchange.answered = true
                return queue(refusal, on: connection, close: (announced ?? 0) > 0 || head.header("transfer-encoding") != nil)
            }
            // The handler may not know the limit: the body is never read past it either way.
            if let n = announced, n > limits.maxBodyBytes {
                exchange.answered = true
                return queue(Self.tooLarge(n, limits.maxBodyBytes), on: connection, close: true)
            }
            return .YES
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeUnretainedValue()
        if size.pointee > 0 {
            defer { size.pointee = 0 }
            if exchange.answered { return .YES }
            guard let upload, exchange.body.count + size.pointee <= limits.maxBodyBytes else {
                exchange.answered = true
                return queue(Self.tooLarge(exchange.body.count + size.pointee, limits.maxBodyBytes), on: connection, close: true)
            }
            upload.withMemoryRebound(to: UInt8.self, capacity: size.pointee) {
                exchange.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size.pointee))
            }
            return .YES
        }
        if exchange.answered { return .YES }
        if exchange.handed {
            // Resumed: the reply is there.
            exchange.answered = true
            lock.withLock { _ = suspended.removeValue(forKey: ObjectIdentifier(exchange)) }
            let reply = exchange.lock.withLock { exchange.reply } ?? HTTPResponse.text(500, "no reply\n")
            return queue(reply, on: connection, close: false)
        }
        exchange.handed = true
        let request = HTTPRequest(head: exchange.head, body: exchange.body)
        exchange.body = []
        let suspendable = SuspendedConnection(pointer: connection)
        handler.handle(request) { response in
            exchange.lock.withLock {
                guard exchange.reply == nil else { return }
                exchange.reply = response
                if exchange.suspended { MHD_resume_connection(suspendable.pointer) }
            }
        }
        return exchange.lock.withLock {
            if let reply = exchange.reply {
                exchange.answered = true
                return queue(reply, on: connection, close: false)
            }
            exchange.suspended = true
            lock.withLock { suspended[ObjectIdentifier(exchange)] = (exchange, suspendable) }
            MHD_suspend_connection(connection)
            return .YES
        }
    }

    fileprivate func completed(_ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let context, let raw = context.pointee else { return }
        Unmanaged<Exchange>.fromOpaque(raw).release()
        context.pointee = nil
        lock.withLock { active -= 1 }
    }

    static func tooLarge(_ size: Int, _ limit: Int) -> HTTPResponse {
        .json(413, "{\"error\": \"request body of \(size) bytes is over the limit of \(limit)\"}")
    }

    /// Queues `response`; it closes the connection when `close` or once the server is stopping.
    private func queue(_ response: HTTPResponse, on connection: OpaquePointer, close: Bool) -> MHD_Result {
        let close = close || lock.withLock { stopping }
        let fields = response.headers.sorted { $0.key < $1.key }
        let names = fields.map { strdup($0.key) }, values = fields.map { strdup($0.value) }
        defer { (names + values).forEach { free($0) } }
        let cNames = names.map { UnsafePointer($0) }, cValues = values.map { UnsafePointer($0) }
        return response.body.withUnsafeBytes { body in
            mlt_mhd_respond(connection, UInt32(response.status), body.baseAddress, body.count, cNames, cValues,
                            fields.count, close ? 1 : 0)
        }
    }

    private final class HeaderBox { var headers: [String: String] = [:] }

    /// The request's headers (names in lower case) or query arguments (percent-decoded by libmicrohttpd).
    private static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [String: String] {
        let box = HeaderBox()
        withExtendedLifetime(box) {
            let collect: MHD_KeyValueIterator = { cls, kind, key, value in
                guard let cls, let key else { return .YES }
                let box = Unmanaged<HeaderBox>.fromOpaque(cls).takeUnretainedValue()
                let raw = String(cString: key), v = value.map { String(cString: $0) } ?? ""
                if kind == .HEADER_KIND {
                    // A repeated header keeps its values joined, as RFC 9110 allows for list-valued fields.
                    let name = raw.lowercased()
                    box.headers[name] = box.headers[name].map { $0 + ", " + v } ?? v
                } else {
                    box.headers[raw] = v
                }
                return .YES
            }
            _ = MHD_get_connection_values(connection, kind, collect, Unmanaged.passUnretained(box).toOpaque())
        }
        return box.headers
    }
}

private let accessCallback: MHD_AccessHandlerCallback = { cls, connection, url, method, _, upload, size, context in
    guard let cls, let connection, let size, let context else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.access(connection, url: url.map { String(cString: $0) } ?? "/", method: method.map { String(cString: $0) } ?? "",
                         upload: upload, size: size, context: context)
}

private let completedCallback: MHD_RequestCompletedCallback = { cls, _, context, _ in
    guard let cls else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().completed(context)
}
