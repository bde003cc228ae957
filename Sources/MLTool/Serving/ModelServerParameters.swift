import Foundation
import MLToolHTTP

/// How `ModelServer` listens, batches and limits; the defaults live here and nowhere else, and `options` is the
/// `mltool serve` option table (each flag declared once, beside its default).
public struct ModelServerParameters: Sendable {
    /// The address to listen on. Anything but loopback requires `token`.
    public var host = "127.0.0.1"
    /// 0: an ephemeral port (`ModelServer.port` tells which).
    public var port = 8080
    /// The bearer token every request but /healthz must carry (`Authorization: Bearer …`); nil: none.
    public var token: String?
    /// The most inputs in one engine batch, and how long the first request of a batch waits for others.
    public var maxBatch = 32
    public var maxWaitMilliseconds = 5.0
    /// The most bytes of one text, and texts in one request.
    public var maxTextBytes = 100_000
    public var maxTexts = 256
    /// The most table rows in one request to a tabular model (no more than `maxQueue`, which would refuse them).
    public var maxRows = 4096
    /// A request still waiting for its batch after this many seconds is answered 503.
    public var requestTimeoutSeconds = 30.0
    /// The most inputs waiting per model; more are answered 503 at once.
    public var maxQueue = 4096
    /// Reload a model whose file is replaced on disk (checked every `watchInterval` seconds).
    public var watch = false
    public var watchInterval = 0.5
    /// libmicrohttpd's limits: body bytes, connections, per-address connections, idle/slow-client timeout, threads.
    public var http = HTTPServer.Limits()

    public init() {}

    /// Whether `host` is a loopback address (127.0.0.0/8 or ::1), where no token is required.
    public static func isLoopback(_ host: String) -> Bool {
        host == "::1" || host.hasPrefix("127.") && host.split(separator: ".").count == 4
    }

    /// `mltool serve`'s options.
    public static let options = OptionTable<ModelServerParameters>([
        TaskOption(OptionDeclaration("--port", value: "N", kind: .integer, help: "Port to listen on (default 8080; 0: any free port, printed)."),
                   set: { p, v in p.port = try OptionText.int("--port", v) }),
        TaskOption(OptionDeclaration("--host", value: "ADDRESS", help: "Address to listen on (default 127.0.0.1); another than loopback needs --token."),
                   set: { p, v in p.host = v }),
        TaskOption(OptionDeclaration("--token", value: "T", help: "Require 'Authorization: Bearer T' (default: $MLTOOL_TOKEN)."),
                   set: { p, v in p.token = v }),
        TaskOption(OptionDeclaration("--max-batch", value: "N", kind: .integer, help: "Most inputs in one engine batch (default 32)."),
                   set: { p, v in p.maxBatch = try positive("--max-batch", v) }),
        TaskOption(OptionDeclaration("--max-wait", value: "MS", kind: .number, help: "Milliseconds a batch waits for more requests (default 5)."),
                   set: { p, v in
                       p.maxWaitMilliseconds = try OptionText.double("--max-wait", v)
                       guard p.maxWaitMilliseconds >= 0 else { throw OptionText.refuse("--max-wait", "--max-wait must be ≥ 0") }
                   }),
        TaskOption(OptionDeclaration("--max-body", value: "BYTES", kind: .integer, help: "Largest request body (default 33554432); larger: 413 unread."),
                   set: { p, v in p.http.maxBodyBytes = try positive("--max-body", v) }),
        TaskOption(OptionDeclaration("--max-text", value: "BYTES", kind: .integer, help: "Longest text in UTF-8 bytes (default 100000)."),
                   set: { p, v in p.maxTextBytes = try positive("--max-text", v) }),
        TaskOption(OptionDeclaration("--connections", value: "N", kind: .integer, help: "Most connections open at once (default 1024)."),
                   set: { p, v in p.http.connections = try positive("--connections", v) }),
        TaskOption(OptionDeclaration("--timeout", value: "S", kind: .integer, help: "Seconds an idle or slow client is kept (default 10)."),
                   set: { p, v in p.http.timeoutSeconds = try positive("--timeout", v) }),
        TaskOption(OptionDeclaration("--request-timeout", value: "S", kind: .number, help: "Seconds a request may wait for its batch (default 30; then 503)."),
                   set: { p, v in
                       p.requestTimeoutSeconds = try OptionText.double("--request-timeout", v)
                       guard p.requestTimeoutSeconds > 0 else { throw OptionText.refuse("--request-timeout", "--request-timeout must be > 0") }
                   }),
        TaskOption(OptionDeclaration("--watch", help: "Reload a model whose file is replaced (atomically) on disk; requests keep being answered."),
                   set: { p, _ in p.watch = true }),
    ])

    static func positive(_ flag: String, _ text: String) throws -> Int {
        let v = try OptionText.int(flag, text)
        guard v >= 1 else { throw OptionText.refuse(flag, "\(flag) must be ≥ 1") }
        return v
    }
}
