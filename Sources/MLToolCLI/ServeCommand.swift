import Foundation
import MLTool

extension CLI {
    /// `mltool serve MODEL...`: a `ModelServer` until SIGTERM or SIGINT, then a drain of the requests in flight.
    static let serve = CommandSpec(
        name: "serve", abstract: "Serve models over HTTP: predictions in batches, health, metrics (docs/SERVE.md).",
        arguments: "MODEL...",
        discussion: "Each MODEL (a path, or NAME=PATH) answers POST /v1/models/NAME/predict: an image model takes the image "
            + "bytes as the body or a multipart form, a text model or tagger takes JSON {\"text\": …} or {\"texts\": […]}; answers are "
            + "predict --json's objects. GET /v1/models, /healthz and /metrics (Prometheus). Concurrent requests for a model run "
            + "as one engine batch. A --host other than loopback needs --token. SIGTERM stops accepting and answers every "
            + "request already received before exiting.",
        options: ModelServerParameters.options.declarations
    ) { args in
        guard !args.positionals.isEmpty else { throw CLIError.usage(command: "serve", message: "expected at least one MODEL") }
        var parameters = ModelServerParameters()
        if let token = ProcessInfo.processInfo.environment["MLTOOL_TOKEN"], !token.isEmpty { parameters.token = token }
        try ModelServerParameters.options.apply(args.optionValues, to: &parameters)
        let server = try runUntilSignal(start: { try ModelServer(models: args.positionals, parameters: parameters) }) { server in
            let host = parameters.host.contains(":") ? "[\(parameters.host)]" : parameters.host
            for m in server.models {
                FileHandle.standardError.write(Data("mltool: \(m.name) (\(m.task)) from \(m.path)\n".utf8))
            }
            print("mltool: serving \(server.models.count) model\(server.models.count == 1 ? "" : "s") on http://\(host):\(server.port)")
        }
        FileHandle.standardError.write(Data("mltool: stopping: answering the requests in flight\n".utf8))
        let left = server.stop()
        if left > 0 { throw PipelineError.badInput(file: "serve", reason: "\(left) requests were still unanswered after 30 s") }
        // What was answered, by status: a client's own count can be checked against it (ServeLoadTests).
        let answered = server.answered.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }
        FileHandle.standardError.write(Data("mltool: stopped; answered \(answered.isEmpty ? "no request" : answered.joined(separator: ", "))\n".utf8))
    }
}
