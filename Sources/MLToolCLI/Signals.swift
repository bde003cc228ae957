import Foundation
import MLTool

extension CLI {
    /// What `serve` and `studio` share: makes a server with `start`, says where it is with `announce` once SIGTERM and
    /// SIGINT are caught (a caller that waits for that line may signal at once), and returns it when either arrives, for
    /// the caller to stop. The signals' default action is turned off first: they arrive as events on a queue, never in
    /// a handler, and a second one while the server stops is ignored.
    static func runUntilSignal<Server>(start: () throws -> Server, announce: (Server) -> Void) throws -> Server {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let server = try start()
        let stopped = DispatchSemaphore(value: 0)
        let sources = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: .global()) }
        for s in sources {
            s.setEventHandler { stopped.signal() }
            s.resume()
        }
        announce(server)
        fflush(nil)   // every stream: the announcement must reach a pipe now
        stopped.wait()
        sources.forEach { $0.cancel() }
        return server
    }
}
