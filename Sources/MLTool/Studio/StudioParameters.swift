import Foundation
import MLToolHTTP

/// How `mltool studio` listens and what it accepts; the defaults live here, and `options` is the command's option
/// table (each flag declared once, beside its default).
public struct StudioParameters: Sendable {
    /// The address to listen on: loopback unless asked (the launch token guards every request either way).
    public var host = "127.0.0.1"
    /// 0: an ephemeral port (`StudioServer.port` tells which).
    public var port = 8765
    /// The launch token every request carries (`?token=` or `X-Studio-Token`); a new random one per launch.
    public var token = StudioParameters.randomToken()
    /// The predict endpoint's limits are `mltool serve`'s (body bytes, text bytes, texts per request); images
    /// decode under the decoder's pixel limit, as `serve`'s do.
    public var serving = ModelServerParameters()
    /// libmicrohttpd's limits (body bytes as for `serve`).
    public var http: HTTPServer.Limits {
        var l = serving.http
        // A run's events are long-polled: a page holds one connection per open run.
        l.connectionsPerAddress = 0
        return l
    }
    /// How long an event request waits for a new event before answering with none.
    public var eventWaitSeconds = 8.0

    public init() {}

    /// 32 hexadecimal digits from the system's random source.
    public static func randomToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }

    /// `mltool studio`'s options.
    public static let options = OptionTable<StudioParameters>([
        TaskOption(OptionDeclaration("--port", value: "N", kind: .integer, help: "Port to listen on (default 8765; 0: any free port, printed)."),
                   set: { p, v in
                       p.port = try OptionText.int("--port", v)
                       guard (0...65535).contains(p.port) else { throw OptionText.refuse("--port", "--port must be in 0…65535") }
                   }),
        TaskOption(OptionDeclaration("--host", value: "ADDRESS", help: "Address to listen on (default 127.0.0.1)."),
                   set: { p, v in p.host = v }),
        TaskOption(OptionDeclaration("--max-body", value: "BYTES", kind: .integer, help: "Largest upload (default 33554432); larger: 413 unread."),
                   set: { p, v in p.serving.http.maxBodyBytes = try ModelServerParameters.positive("--max-body", v) }),
    ])
}
