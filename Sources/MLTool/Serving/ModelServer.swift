import Foundation
import MLToolCore
import MLToolData
import MLToolHTTP
import MLToolTabular

/// Serves models over HTTP (`mltool serve`; TorchServe's and Triton's job for mltool's models): each model's task
/// (`TaskRegistry.handling`) gives its `ServingPredictor`, concurrent requests for one model are gathered into engine
/// batches (`PredictionBatcher`), and answers have the shape of `mltool predict --json`. docs/SERVE.md is the user's
/// side: the endpoints, limits, metrics and security model.
///
///     let server = try ModelServer(models: ["fashion.bin"], parameters: ModelServerParameters())
///     print(server.port)            // answers until stop()
///     server.stop()
public final class ModelServer: @unchecked Sendable {
    /// One model served: its name in URLs, its file, its task and `mltool info --json`'s object.
    public struct Served: Sendable {
        public var name: String
        public var path: String
        public var task: String
        public var takes: ServingInput.Kind
        let info: String
        let batcher: PredictionBatcher
    }

    public let parameters: ModelServerParameters
    public let models: [Served]
    private let metrics = ServerMetrics()
    private let router: Router
    private var http: HTTPServer?
    private let tasks: TaskRegistry
    private let watching = NSCondition()
    private var watcherRunning = false

    /// The port it listens on (the ephemeral one when `parameters.port` is 0).
    public var port: Int { http?.port ?? 0 }

    /// Loads each model (`NAME=PATH`, or a path whose file name without extension names it) and starts listening.
    /// Refuses to start on an address other than loopback without a token.
    public init(models specs: [String], parameters: ModelServerParameters, tasks: TaskRegistry = .standard) throws {
        guard parameters.token != nil || ModelServerParameters.isLoopback(parameters.host) else {
            throw PipelineError.invalidParameter(name: "--token", reason: "--host \(parameters.host) is not loopback: give --token (or MLTOOL_TOKEN) so that only clients holding it are answered")
        }
        if let t = parameters.token, t.isEmpty || t.contains(where: { $0.isWhitespace }) {
            throw PipelineError.invalidParameter(name: "--token", reason: "--token must be a non-empty word without spaces")
        }
        self.parameters = parameters
        self.tasks = tasks
        var served = [Served]()
        for spec in specs {
            let (name, path) = Self.nameAndPath(spec)
            guard !served.contains(where: { $0.name == name }) else {
                throw PipelineError.invalidParameter(name: "MODEL", reason: "two models are named '\(name)': name one NAME=PATH")
            }
            let started = Date()
            let model = try ModelLoader.load(path)
            let task = tasks.handling(model: model)
            let predictor = try task.servingPredictor(model: model, path: path)
            let takes = try task.servedInput(model: model, path: path)
            let info = try ModelSummary(model: model, layout: nil).json()
            metrics.loaded(model: name, seconds: Date().timeIntervalSince(started))
            served.append(Served(name: name, path: path, task: task.name, takes: takes, info: info,
                                 batcher: PredictionBatcher(name: name, predictor: predictor, parameters: parameters, metrics: metrics)))
        }
        models = served
        router = Router(parameters: parameters, models: served, metrics: metrics)
        do {
            http = try HTTPServer(host: parameters.host, port: parameters.port, limits: parameters.http, handler: router)
        } catch {
            served.forEach { $0.batcher.stop() }
            throw error
        }
        if parameters.watch { startWatching() }
    }

    /// The requests answered so far, by HTTP status (`/metrics`' mltool_requests_total).
    public var answered: [Int: Int] { metrics.answered }

    /// Stops accepting connections, answers every request already received (waiting up to `drainSeconds`), then
    /// stops the batchers. Returns how many requests were left unanswered (0: a clean drain).
    @discardableResult
    public func stop(drainSeconds: Double = 30) -> Int {
        let left = http?.stop(drainSeconds: drainSeconds) ?? 0
        http = nil
        watching.withLock {
            watcherRunning = false
            watching.broadcast()
        }
        models.forEach { $0.batcher.stop() }
        return left
    }

    /// The identity of a file's current content as the file system gives it: an atomic replace (a rename over it)
    /// changes the inode, a rewrite in place the modification time or size.
    static func stamp(_ path: String) -> [Int]? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return [Int(st.st_ino), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec), Int(st.st_size)]
    }

    /// `--watch`: a thread that reloads a model whose file changed and hands the new predictor to its batcher; a
    /// file that does not load (yet) leaves the old model answering and is tried again when it changes again.
    private func startWatching() {
        watcherRunning = true
        let thread = Thread { [self] in
            var stamps = models.map { Self.stamp($0.path) }
            while watching.withLock({ () -> Bool in
                if watcherRunning { _ = watching.wait(until: Date().addingTimeInterval(parameters.watchInterval)) }
                return watcherRunning
            }) {
                for (i, m) in models.enumerated() {
                    let now = Self.stamp(m.path)
                    guard now != nil, now != stamps[i] else { continue }
                    stamps[i] = now
                    do {
                        let started = Date()
                        let model = try ModelLoader.load(m.path)
                        let task = tasks.handling(model: model)
                        let predictor = try task.servingPredictor(model: model, path: m.path)
                        // The routes were screened for the model's kind of input: a file that changed kind is refused.
                        guard try task.servedInput(model: model, path: m.path) == m.takes else { throw PipelineError.badInput(file: m.path, reason: "the new model takes other inputs") }
                        m.batcher.replace(with: predictor)
                        metrics.loaded(model: m.name, seconds: Date().timeIntervalSince(started))
                        metrics.reloaded(model: m.name, result: "ok")
                    } catch {
                        metrics.reloaded(model: m.name, result: "failed")
                    }
                }
            }
        }
        thread.name = "mltool-watch"
        thread.start()
    }

    static func nameAndPath(_ spec: String) -> (String, String) {
        if let eq = spec.firstIndex(of: "="), !spec[..<eq].contains("/") {
            return (String(spec[..<eq]), String(spec[spec.index(after: eq)...]))
        }
        return (URL(fileURLWithPath: spec).deletingPathExtension().lastPathComponent, spec)
    }
}

/// The endpoints: screens a request's head (token, route, model, content type, announced size) before its body is
/// read, then answers it or hands its inputs to the model's batcher.
final class Router: HTTPHandler, @unchecked Sendable {
    let parameters: ModelServerParameters
    let models: [String: ModelServer.Served]
    let order: [String]
    let metrics: ServerMetrics
    private let expected: [UInt8]?

    init(parameters: ModelServerParameters, models: [ModelServer.Served], metrics: ServerMetrics) {
        self.parameters = parameters; self.metrics = metrics
        self.models = Dictionary(uniqueKeysWithValues: models.map { ($0.name, $0) })
        order = models.map(\.name)
        expected = parameters.token.map { Array("Bearer \($0)".utf8) }
    }

    static func error(_ status: Int, _ message: String) -> HTTPResponse {
        .json(status, "{\"error\": \(TaskOutput.jsonString(message))}")
    }

    /// The model a predict path names ("/v1/models/NAME/predict"), or nil for another path.
    static func predictTarget(_ path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "v1", parts[2] == "models", parts[4] == "predict" else { return nil }
        return String(parts[3])
    }

    /// Compares the Authorization header with the token in time that depends only on their lengths.
    func authorized(_ head: HTTPRequestHead) -> Bool {
        guard let expected else { return true }
        let given = Array((head.header("authorization") ?? "").utf8)
        var diff = UInt8(given.count == expected.count ? 0 : 1)
        for i in 0..<expected.count { diff |= expected[i] ^ (i < given.count ? given[i] : 0) }
        return diff == 0
    }

    func screen(_ head: HTTPRequestHead) -> HTTPResponse? {
        let refusal = refusal(head)
        if let refusal { metrics.request(status: refusal.status, seconds: 0) }
        return refusal
    }

    private func refusal(_ head: HTTPRequestHead) -> HTTPResponse? {
        if head.path == "/healthz" { return head.method == "GET" ? nil : Self.error(405, "GET only") }
        guard authorized(head) else {
            var r = Self.error(401, "missing or wrong bearer token")
            r.headers["WWW-Authenticate"] = "Bearer"
            return r
        }
        if head.path == "/v1/models" || head.path == "/metrics" { return head.method == "GET" ? nil : Self.error(405, "GET only") }
        guard let name = Self.predictTarget(head.path) else { return Self.error(404, "no endpoint \(head.path)") }
        guard let model = models[name] else { return Self.error(404, "no model named '\(name)' (serving: \(order.joined(separator: ", ")))") }
        guard head.method == "POST" else { return Self.error(405, "POST only") }
        if let n = head.contentLength, n > parameters.http.maxBodyBytes {
            return Self.error(413, "request body of \(n) bytes is over the limit of \(parameters.http.maxBodyBytes)")
        }
        let type = head.mediaType ?? ""
        let takes = model.takes.mediaTypes
        guard takes.contains(type) else {
            return Self.error(415, "model '\(name)' takes \(takes.joined(separator: ", ")); got '\(type.isEmpty ? "no Content-Type" : type)'")
        }
        return nil
    }

    func handle(_ request: HTTPRequest, reply: @escaping @Sendable (HTTPResponse) -> Void) {
        let started = Date()
        let answer: @Sendable (HTTPResponse) -> Void = { [metrics] r in
            metrics.request(status: r.status, seconds: Date().timeIntervalSince(started))
            reply(r)
        }
        switch request.head.path {
        case "/healthz": answer(.text(200, "ok\n"))
        case "/metrics":
            answer(.text(200, metrics.text(queues: models.mapValues { $0.batcher.depth }), contentType: "text/plain; version=0.0.4"))
        case "/v1/models":
            let items = order.compactMap { models[$0] }.map {
                "{\"name\": \(TaskOutput.jsonString($0.name)), \"task\": \(TaskOutput.jsonString($0.task)), \"info\": \($0.info)}"
            }
            answer(.json(200, "{\"models\": [\(items.joined(separator: ", "))]}"))
        default:
            guard let name = Self.predictTarget(request.head.path), let model = models[name] else {
                return answer(Self.error(404, "no endpoint \(request.head.path)"))
            }
            predict(model, request, answer)
        }
    }

    private func predict(_ model: ModelServer.Served, _ request: HTTPRequest, _ answer: @escaping @Sendable (HTTPResponse) -> Void) {
        let inputs: [ServingInput], isList: Bool
        do {
            (inputs, isList) = try Self.inputs(request, takes: model.takes, parameters: parameters)
        } catch {
            return answer(Self.response(for: error))
        }
        model.batcher.submit(inputs) { results in
            var objects = [String]()
            for r in results {
                switch r {
                case .success(let json): objects.append(json)
                case .failure(let error): return answer(Self.response(for: error))
                }
            }
            answer(.json(200, isList ? "[" + objects.joined(separator: ", ") + "]" : objects.first ?? "{}"))
        }
    }

    /// The inputs of a predict request's body, and whether it is answered with a list.
    static func inputs(_ request: HTTPRequest, takes: ServingInput.Kind, parameters: ModelServerParameters) throws -> ([ServingInput], Bool) {
        if takes == .rows { return try rows(request, parameters: parameters) }
        let head = request.head
        switch head.mediaType ?? "" {
        case "multipart/form-data":
            guard let boundary = head.contentTypeParameter("boundary") else {
                throw HTTPError.malformedMultipart(source: "request body", offset: 0, expected: "a boundary parameter in Content-Type", actual: "none")
            }
            let form = try MultipartBody(request.body, boundary: boundary)
            let images = form.parts.filter { $0.filename != nil || $0.name == "image" || ($0.headers["content-type"] ?? "").hasPrefix("image/") }
            guard !images.isEmpty else {
                throw HTTPError.malformedMultipart(source: "request body", offset: 0, expected: "a part named \"image\" or with a filename", actual: "\(form.parts.count) other parts")
            }
            return (images.map { .image(bytes: Array($0.content), name: $0.filename ?? $0.name ?? "image") }, images.count > 1)
        case "application/json":
            let body = try TextBody(request.body, maxTextBytes: parameters.maxTextBytes, maxTexts: parameters.maxTexts)
            return (body.texts.map { .text($0) }, body.isList)
        case "text/plain":
            guard request.body.count <= parameters.maxTextBytes else {
                throw HTTPError.tooLarge(source: "request body", what: "text", size: request.body.count, limit: parameters.maxTextBytes)
            }
            return ([.text(String(decoding: request.body, as: UTF8.self))], false)
        default:
            return ([.image(bytes: request.body, name: head.header("x-filename") ?? "body")], false)
        }
    }

    /// The rows of a predict request to a tabular model: a JSON body (`RowsBody`), a CSV with a header line, or JSON
    /// Lines (`RawTable`'s readers, as `mltool predict` reads a file); a table is answered with an array.
    static func rows(_ request: HTTPRequest, parameters: ModelServerParameters) throws -> ([ServingInput], Bool) {
        let source = "request body"
        let table: RawTable
        switch request.head.mediaType ?? "" {
        case "text/csv": table = try RawTable.delimited(bytes: request.body, file: source, delimiter: UInt8(ascii: ","))
        case "application/x-ndjson": table = try RawTable.jsonLines(bytes: request.body, file: source)
        default:
            let body = try RowsBody(request.body, maxRows: parameters.maxRows, source: source)
            return (body.rows.map { .row($0) }, body.isList)
        }
        guard table.rows.count <= parameters.maxRows else {
            throw HTTPError.tooLarge(source: source, what: "a table of \(table.rows.count) rows", size: table.rows.count, limit: parameters.maxRows)
        }
        return (table.rows.map { .row(Dictionary(zip(table.header, $0), uniquingKeysWith: { first, _ in first })) }, true)
    }

    /// The status and message for a refused input.
    static func response(for error: Error) -> HTTPResponse {
        let message = (error as? MLToolError)?.description ?? "\(error)"
        switch error {
        case HTTPError.tooLarge, DataError.tooManyPixels: return Self.error(413, message)
        case is HTTPError, is DataError, is PipelineError, is TabularError: return Self.error(400, message)
        case PredictionBatcher.Refusal.queueFull: return Self.error(503, "too many requests waiting; try again")
        case PredictionBatcher.Refusal.timedOut: return Self.error(503, "the request waited longer than --request-timeout for its batch")
        case PredictionBatcher.Refusal.stopped: return Self.error(503, "the server is stopping")
        default: return Self.error(500, message)
        }
    }
}
