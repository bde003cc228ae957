import Foundation
import MLToolCore
import MLToolHTTP

/// `mltool studio FOLDER`: Create ML's app as a local web page over one project folder (docs/STUDIO.md). The page
/// (plain HTML, CSS and JavaScript embedded in the binary: `StudioAssets`) calls a small JSON API that runs the
/// library's own pipelines — `TaskRegistry` for the task of a data source, `TaskKind.train` with the CLI's option
/// tables, `TaskKind.evaluate`'s HTML report, `TaskKind.servingPredictor` for the preview, `QuantizationPipeline`,
/// `ModelExport` — on `HTTPServer`, as `mltool serve` does.
///
/// Security: every request carries the launch token (else 401); a request that changes state and names a foreign
/// Origin, or any request whose Host is not the studio's, is refused (403); every path a request names is resolved
/// inside the project (`StudioProject.resolve`: else 403, naming the path); bodies are limited as `serve`'s.
public final class StudioServer: @unchecked Sendable {
    public let project: StudioProject
    public let parameters: StudioParameters
    private var http: HTTPServer?
    private let router: StudioRouter

    /// The port it listens on.
    public var port: Int { http?.port ?? 0 }

    /// The address to open, with the launch token.
    public var url: String {
        let host = parameters.host.contains(":") ? "[\(parameters.host)]" : parameters.host
        return "http://\(host):\(port)/?token=\(parameters.token)"
    }

    public init(folder: String, parameters: StudioParameters = StudioParameters(), tasks: TaskRegistry = .standard) throws {
        guard parameters.token.count >= 16, parameters.token.allSatisfy({ $0.isLetter || $0.isNumber }) else {
            throw PipelineError.invalidParameter(name: "token", reason: "the studio's token must be 16 or more letters and digits")
        }
        project = try StudioProject(folder: folder, tasks: tasks)
        self.parameters = parameters
        router = StudioRouter(project: project, parameters: parameters)
        http = try HTTPServer(host: parameters.host, port: parameters.port, limits: parameters.http, handler: router)
        router.port = http?.port ?? 0
    }

    /// Cancels the runs, answers the requests already received, and stops.
    @discardableResult
    public func stop(drainSeconds: Double = 10) -> Int {
        router.runs.cancelAll()
        let left = http?.stop(drainSeconds: drainSeconds) ?? 0
        http = nil
        return left
    }
}

/// The runs of one studio, by number.
final class StudioRuns: @unchecked Sendable {
    private let lock = NSLock()
    private var runs = [StudioRun]()

    func add(data: String, task: String, output: String) -> StudioRun {
        lock.withLock {
            let r = StudioRun(id: runs.count + 1, data: data, task: task, output: output)
            runs.append(r)
            return r
        }
    }

    func run(_ id: Int) -> StudioRun? { lock.withLock { runs.first { $0.id == id } } }
    var all: [StudioRun] { lock.withLock { runs } }
    func cancelAll() { all.forEach { $0.cancel() } }
}

/// The studio's routes; `screen` checks token, Host and Origin before a body is read.
final class StudioRouter: HTTPHandler, @unchecked Sendable {
    let project: StudioProject
    let parameters: StudioParameters
    let runs = StudioRuns()
    private let expected: [UInt8]
    /// Set once the server listens (the Host and Origin checks need it).
    var port = 0
    private let work = DispatchQueue(label: "mltool-studio", qos: .userInitiated, attributes: .concurrent)
    private let predictors = StudioPredictors()

    init(project: StudioProject, parameters: StudioParameters) {
        self.project = project; self.parameters = parameters
        expected = Array(parameters.token.utf8)
    }

    static func error(_ status: Int, _ message: String) -> HTTPResponse { Router.error(status, message) }

    /// The token (query `token` or header `X-Studio-Token`) compared in time that depends only on its length.
    func authorized(_ head: HTTPRequestHead) -> Bool {
        let given = Array((head.header("x-studio-token") ?? head.arguments["token"] ?? "").utf8)
        var diff = UInt8(given.count == expected.count ? 0 : 1)
        for i in 0..<expected.count { diff |= expected[i] ^ (i < given.count ? given[i] : 0) }
        return diff == 0
    }

    /// The authorities (host:port) the studio answers as: its address, and localhost for a loopback one.
    var authorities: Set<String> {
        let h = parameters.host.contains(":") ? "[\(parameters.host)]" : parameters.host
        var a: Set<String> = ["\(h):\(port)"]
        if ModelServerParameters.isLoopback(parameters.host) { a.formUnion(["localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)"]) }
        return a
    }

    func screen(_ head: HTTPRequestHead) -> HTTPResponse? {
        guard authorized(head) else { return Self.error(401, "missing or wrong studio token: open the address mltool studio printed") }
        // DNS rebinding: a page of another site that resolves to this address names its own host.
        if let host = head.header("host"), !authorities.contains(host.lowercased()) {
            return Self.error(403, "Host '\(host)' is not this studio's")
        }
        let changes = !["GET", "HEAD"].contains(head.method)
        if changes, let origin = head.header("origin"), !authorities.contains(where: { origin.lowercased() == "http://" + $0 }) {
            return Self.error(403, "Origin '\(origin)' may not change this studio's project")
        }
        if changes, head.header("sec-fetch-site").map({ $0 == "cross-site" }) == true {
            return Self.error(403, "a cross-site request may not change this studio's project")
        }
        if let n = head.contentLength, n > parameters.http.maxBodyBytes {
            return Self.error(413, "request body of \(n) bytes is over the limit of \(parameters.http.maxBodyBytes)")
        }
        return nil
    }

    func handle(_ request: HTTPRequest, reply: @escaping @Sendable (HTTPResponse) -> Void) {
        let head = request.head
        let parts = head.path.split(separator: "/").map(String.init)
        switch (head.method, head.path) {
        case ("GET", "/"): return reply(StudioAssets.page(token: parameters.token))
        case ("GET", _) where parts.count == 2 && parts[0] == "static":
            return reply(StudioAssets.file(parts[1]) ?? Self.error(404, "no file \(head.path)"))
        default: break
        }
        // Runs' events are long-polled on the run itself; the rest may read data or run a pipeline: off the
        // server's threads.
        if head.method == "GET", parts.count == 4, parts[0] == "api", parts[1] == "runs", parts[3] == "events" {
            return events(request, run: Int(parts[2]), reply)
        }
        work.async { [self] in
            do {
                reply(try answer(request, parts))
            } catch {
                reply(Self.response(for: error))
            }
        }
    }

    /// The status of a refused request: a path out of the project is 403; the rest as `serve` answers them.
    static func response(for error: Error) -> HTTPResponse {
        switch error {
        case PipelineError.outsideFolder: return Self.error(403, StudioProject.describe(error))
        case PipelineError.missingInput: return Self.error(404, StudioProject.describe(error))
        case is CancellationError: return Self.error(409, "cancelled")
        case let e as MLToolError where [.usage, .dataError].contains(e.exitStatus):
            // What the CLI calls a usage or data error (a refused option value, a malformed file) is the request's
            // fault, whichever module raised it: 400, with the CLI's words.
            let r = Router.response(for: error)
            return r.status == 500 ? Self.error(400, e.description) : r
        default: return Router.response(for: error)
        }
    }

    private func answer(_ request: HTTPRequest, _ parts: [String]) throws -> HTTPResponse {
        let head = request.head
        func argument(_ name: String) throws -> String {
            guard let v = head.arguments[name] else { throw PipelineError.invalidParameter(name: name, reason: "give ?\(name)=") }
            return v
        }
        if head.method == "POST", parts.count == 4, parts[0] == "api", parts[1] == "runs", parts[3] == "cancel" {
            guard let run = Int(parts[2]).flatMap(runs.run) else { return Self.error(404, "no run \(parts[2])") }
            run.cancel()
            return try Self.json(200, ["run": run.id, "cancelling": true])
        }
        switch (head.method, parts) {
        case ("GET", ["api", "project"]):
            return .json(200, try TaskOutput.json(project.listing()))
        case ("GET", ["api", "data"]):
            return .json(200, try TaskOutput.json(project.dataView(try argument("path"))))
        case ("GET", ["api", "file"]):
            return try file(try argument("path"), download: head.arguments["download"] != nil)
        case ("GET", ["api", "options"]):
            let name = try argument("task")
            guard let task = project.tasks.named(name) else {
                throw PipelineError.invalidParameter(name: "task", reason: "task must be one of \(project.tasks.names.joined(separator: ", "))")
            }
            return .json(200, try TaskOutput.json(StudioForm(task: task)))
        case ("GET", ["api", "runs"]):
            return try Self.json(200, ["runs": runs.all.map(\.summary)])
        case ("POST", ["api", "train"]):
            return try train(StudioBody(request))
        case ("POST", ["api", "predict"]):
            return try predict(request, model: try argument("model"))
        case ("POST", ["api", "evaluate"]):
            return try evaluate(StudioBody(request))
        case ("POST", ["api", "quantize"]):
            return try quantize(StudioBody(request))
        case ("POST", ["api", "export"]):
            return try export(StudioBody(request))
        default:
            return Self.error(404, "no endpoint \(head.method) \(head.path)")
        }
    }

    static func json(_ status: Int, _ object: [String: Any]) throws -> HTTPResponse {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return .json(status, String(decoding: data, as: UTF8.self))
    }

    // MARK: - Files

    static let mediaTypes = ["jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "html": "text/html; charset=utf-8",
                             "csv": "text/csv; charset=utf-8", "txt": "text/plain; charset=utf-8", "json": "application/json"]

    /// A file of the project (thumbnails, reports, downloads). A report is served with a policy that runs no script.
    private func file(_ path: String, download: Bool) throws -> HTTPResponse {
        let real = try project.resolve(path, field: "path")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: real, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw PipelineError.missingInput(file: path, reason: "not a file in the project")
        }
        let bytes = try ImageDecoder.readFile(real, limit: InputLimits.maxFileBytes)
        let ext = URL(fileURLWithPath: real).pathExtension.lowercased()
        var r = HTTPResponse(status: 200, headers: ["Content-Type": Self.mediaTypes[ext] ?? "application/octet-stream",
                                                    "X-Content-Type-Options": "nosniff",
                                                    "Content-Security-Policy": "default-src 'none'; img-src data: 'self'; style-src 'unsafe-inline'"],
                             body: bytes)
        if download || Self.mediaTypes[ext] == nil {
            let name = URL(fileURLWithPath: real).lastPathComponent.filter { $0.isASCII && $0 != "\"" && $0 != "\\" }
            r.headers["Content-Disposition"] = "attachment; filename=\"\(name)\""
        }
        return r
    }

    // MARK: - Training

    /// `mltool train DATA [options]` as a run: the data's task (or `task`), its option table, the model into models/.
    private func train(_ body: StudioBody) throws -> HTTPResponse {
        let dataField = try body.string("data")
        let data = try project.resolve(dataField, field: "data")
        let task: any TaskKind.Type
        if let name = try body.optionalString("task") {
            guard let t = project.tasks.named(name) else {
                throw PipelineError.invalidParameter(name: "task", reason: "--task must be one of \(project.tasks.names.joined(separator: ", "))")
            }
            task = t
        } else {
            task = project.tasks.recognizing(data: data)
        }
        var values = try body.options()
        let own = Set(task.trainOptions.map(\.flag))
        if let o = values.keys.sorted().first(where: { !own.contains($0) }) {
            throw PipelineError.invalidParameter(name: o, reason: "\(o) is not an option of \(task.title.lowercased()) (\(dataField) is \(task.name) data)")
        }
        for d in task.trainOptions where d.value != nil {
            if let v = values[d.flag]?.last { try d.check(v) }
        }
        // Paths named in options stay inside the project; the model goes to models/ (NAME.bin after the data).
        let name = URL(fileURLWithPath: data).deletingPathExtension().lastPathComponent
        let out = values["--out"]?.last ?? "\(StudioProject.modelsFolder)/\(name).bin"
        values["--out"] = [out]
        values = try project.resolvingPaths(values, declarations: task.trainOptions)
        // Nothing outside the project: the feature cache is the project's own.
        if own.contains("--cache"), values["--cache"] == nil { values["--cache"] = [project.root + "/" + StudioProject.cacheFolder] }
        let output = project.relative(values["--out"]?.last ?? out)
        let run = runs.add(data: project.relative(data), task: task.name, output: output)
        let request = TaskRequest(arguments: [data], values: OptionValues(values))
        let predictors = self.predictors
        run.start({ try task.train($0) }, request: request) { _ in predictors.forget() }
        return try Self.json(202, ["run": run.id, "task": task.name, "output": output])
    }

    /// The events of run `id` after `Last-Event-ID` (or `?after=`) as a text/event-stream body: an EventSource
    /// reconnects after each answer (`retry`) and sends the last id it saw, so a run survives the page closing.
    private func events(_ request: HTTPRequest, run id: Int?, _ reply: @escaping @Sendable (HTTPResponse) -> Void) {
        guard let run = id.flatMap(runs.run) else { return reply(Self.error(404, "no run \(id.map(String.init) ?? "")")) }
        let after = (request.head.header("last-event-id") ?? request.head.arguments["after"]).flatMap { Int($0) } ?? -1
        run.events(after: after, wait: parameters.eventWaitSeconds) { events, last, ended in
            var text = "retry: \(ended ? 3_600_000 : 100)\n\n"
            for (i, e) in events.enumerated() {
                text += "id: \(last - events.count + 1 + i)\ndata: \(e)\n\n"
            }
            if ended { text += "event: end\ndata: {}\n\n" }
            reply(.text(200, text, contentType: "text/event-stream; charset=utf-8"))
        }
    }

    // MARK: - Evaluate, try, compress, ship

    /// `mltool eval MODEL [DATA] --report reports/NAME.html`: the task's own evaluation and HTML report.
    private func evaluate(_ body: StudioBody) throws -> HTTPResponse {
        let modelField = try body.string("model")
        let model = try project.resolve(modelField, field: "model")
        let data = try body.optionalString("data").map { try project.resolve($0, field: "data") }
        let name = URL(fileURLWithPath: model).deletingPathExtension().lastPathComponent
        let report = try project.resolve("\(StudioProject.reportsFolder)/\(name).html", field: "report", creating: true)
        let lines = LineLog()
        let task = project.tasks.handling(model: try ModelLoader.load(model))
        try task.evaluate(TaskRequest(arguments: [model] + (data.map { [$0] } ?? []), values: OptionValues(["--report": [report]]),
                                      output: { lines.add($0) }), models: [model], data: data)
        return try Self.json(200, ["report": project.relative(report), "lines": lines.lines])
    }

    /// `POST /api/predict?model=PATH`: the body as `mltool serve` takes it, answered with `predict --json`'s objects.
    private func predict(_ request: HTTPRequest, model field: String) throws -> HTTPResponse {
        let path = try project.resolve(field, field: "model")
        let (predictor, takes) = try predictors.predictor(path: path, tasks: project.tasks)
        let (inputs, isList) = try Router.inputs(request, takes: takes, parameters: parameters.serving)
        var objects = [String]()
        for r in predictors.predict(predictor, inputs) { objects.append(try r.get()) }
        return .json(200, isList ? "[" + objects.joined(separator: ", ") + "]" : objects.first ?? "{}")
    }

    /// `mltool quantize MODEL [options]`: the gate's report, the model written beside MODEL.
    private func quantize(_ body: StudioBody) throws -> HTTPResponse {
        let modelField = try body.string("model")
        let model = try project.resolve(modelField, field: "model")
        var values = try body.options()
        guard values["--bits"] != nil || values["--mode"] != nil else {
            throw PipelineError.invalidParameter(name: "--bits", reason: "give --bits N (8, 16, or 1/2/4/6 for palettes)")
        }
        values = try project.resolvingPaths(values, declarations: QuantizationParameters.options.declarations)
        var setup = QuantizationSetup()
        try QuantizationParameters.options.apply(OptionValues(values), to: &setup)
        // Its warnings and notes (a large accuracy drop, no calibration images) go above the report, as the CLI prints them.
        let said = LineLog()
        let outcome = try QuantizationPipeline(modelPath: model, parameters: setup.parameters).run { event in
            switch event {
            case .warning(let text): said.add("mltool: warning: " + text)
            case .note(let text): said.add("mltool: note: " + text)
            default: break
            }
        }
        // The default output is beside MODEL, so inside the project; checked all the same.
        let out = try project.resolve(project.relative(outcome.report.output), field: "output", creating: true)
        try outcome.write(to: out)
        predictors.forget()
        let text = (said.lines + [outcome.report.text]).joined(separator: "\n")
        return .json(200, "{\"output\": \(TaskOutput.jsonString(project.relative(out))), \"text\": \(TaskOutput.jsonString(text)), \"report\": \(try TaskOutput.json(outcome.report))}")
    }

    /// `mltool export MODEL --to FORMAT`: the file beside MODEL, offered for download.
    private func export(_ body: StudioBody) throws -> HTTPResponse {
        let model = try project.resolve(try body.string("model"), field: "model")
        let format = try body.string("to")
        guard let target = ModelExport.Format(rawValue: format) else {
            throw PipelineError.invalidParameter(name: "--to", reason: "--to onnx, --to coreml or --to tflite is required")
        }
        let loaded = try ModelLoader.load(model)
        let out = try project.resolve(project.relative(URL(fileURLWithPath: model).deletingPathExtension().path + target.fileExtension),
                                      field: "output", creating: true)
        let r = try ModelExport.export(loaded, name: model, format: target)
        try AtomicFile.write(r.bytes, to: out, inputs: [model])
        return try Self.json(200, ["file": project.relative(out), "bytes": r.bytes.count, "notes": r.notes,
                                   "line": "wrote \(project.relative(out)): \(r.bytes.count) bytes (\(format))"])
    }
}

/// Result lines gathered from a task (`TaskRequest.output`).
final class LineLog: @unchecked Sendable {
    private let lock = NSLock()
    private var kept = [String]()
    func add(_ line: String) { lock.withLock { kept.append(line) } }
    var lines: [String] { lock.withLock { kept } }
}

/// The preview's predictors, loaded once per model file and dropped when a run or quantization writes a model.
final class StudioPredictors: @unchecked Sendable {
    private let lock = NSLock()
    private var loaded = [String: (any ServingPredictor, ServingInput.Kind)]()

    /// The model's predictor and what it takes.
    func predictor(path: String, tasks: TaskRegistry) throws -> (any ServingPredictor, ServingInput.Kind) {
        if let p = lock.withLock({ loaded[path] }) { return p }
        let model = try ModelLoader.load(path)
        let task = tasks.handling(model: model)
        let p = (try task.servingPredictor(model: model, path: path), try task.servedInput(model: model, path: path))
        lock.withLock { loaded[path] = p }
        return p
    }

    /// A predictor is called from one thread at a time.
    func predict(_ p: any ServingPredictor, _ inputs: [ServingInput]) -> [Result<String, Error>] {
        lock.withLock { p.predict(inputs) }
    }

    func forget() { lock.withLock { loaded.removeAll() } }
}

/// A JSON object body: `{"data": "…", "options": {"--flag": "value", "--switch": ""}}`.
struct StudioBody {
    let object: [String: Any]

    init(_ request: HTTPRequest) throws {
        guard let o = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            throw HTTPError.malformedJSON(source: "request body", place: "byte 0", expected: "a JSON object", actual: "\(request.body.count) other bytes")
        }
        object = o
    }

    func optionalString(_ key: String) throws -> String? {
        guard let v = object[key] else { return nil }
        guard let s = v as? String else {
            throw HTTPError.malformedJSON(source: "request body", place: key, expected: "a string", actual: "\(type(of: v))")
        }
        return s
    }

    func string(_ key: String) throws -> String {
        guard let s = try optionalString(key) else {
            throw HTTPError.malformedJSON(source: "request body", place: key, expected: "a string", actual: "nothing")
        }
        return s
    }

    /// The options object as option values (a switch's value is ""; null leaves an option out).
    func options() throws -> [String: [String]] {
        guard let raw = object["options"] else { return [:] }
        guard let o = raw as? [String: Any] else {
            throw HTTPError.malformedJSON(source: "request body", place: "options", expected: "an object", actual: "\(type(of: raw))")
        }
        var values = [String: [String]]()
        for (k, v) in o {
            switch v {
            case let s as String: values[k] = [s]
            case let n as NSNumber: values[k] = ["\(n)"]
            case is NSNull: continue
            default: throw HTTPError.malformedJSON(source: "request body", place: "options.\(k)", expected: "a string", actual: "\(type(of: v))")
            }
        }
        return values
    }
}

extension StudioProject {
    /// Values whose option takes a path (DATA, DIR, FILE, MODEL, PATH, …) resolved inside the project.
    static let pathValues: Set<String> = ["DATA", "DIR", "DIR|CSV", "FILE", "MODEL", "OUT", "PATH", "TABLE"]

    func resolvingPaths(_ values: [String: [String]], declarations: [OptionDeclaration]) throws -> [String: [String]] {
        var v = values
        for d in declarations where d.value.map(Self.pathValues.contains) == true {
            guard let given = v[d.flag] else { continue }
            v[d.flag] = try given.map { try resolve($0, field: d.flag, creating: ["OUT", "PATH", "DIR"].contains(d.value ?? "")) }
        }
        return v
    }
}

/// A task's parameters form: its `mltool train` options as declared (flag, value name, kind, help).
struct StudioForm: Encodable {
    struct Field: Encodable {
        var flag: String
        var value: String?
        var kind: String
        var help: String
    }

    var task: String
    var title: String
    var help: String
    var fields: [Field]

    init(task: any TaskKind.Type) {
        self.task = task.name; title = task.title; help = task.trainingHelp
        // The cluster modes make no model, and the cache stays the project's: not on the form.
        let hidden: Set<String> = ["--features-only", "--shard", "--manifest", "--cache", "--threads", "--memory"]
        fields = task.trainOptions.filter { !hidden.contains($0.flag) }.map { d in
            let kind: String
            switch (d.value, d.kind) {
            case (nil, _): kind = "switch"
            case (_, .integer): kind = "integer"
            case (_, .number): kind = "number"
            case (_, .text): kind = "text"
            }
            return Field(flag: d.flag, value: d.value, kind: kind, help: d.help)
        }
    }
}
