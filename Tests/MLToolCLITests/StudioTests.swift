import Foundation
import MLTool
import MLToolFormat
import MLToolTestSupport
import Testing

/// `mltool studio`'s server (`StudioServer`) on a temporary project, with curl as the client: the security checks
/// with their exact statuses (token 401, foreign Origin or Host 403, every path out of the project 403 naming it,
/// uploads 413 over the byte or pixel limit) and the API a page drives (project, data view, form, train with its
/// events, evaluate, preview, quantize, export).
@Suite(.serialized)
struct StudioTests {
    typealias Reply = ServeTests.Reply

    /// A project: a text CSV (two topics), red/blue photos in label folders, the tiny red/blue classifier in
    /// models/, and two symbolic links out of it.
    static func project(_ dir: TempDir) throws -> (project: String, outside: String) {
        let root = dir.file("project"), outside = dir.file("outside")
        try FileManager.default.createDirectory(atPath: root + "/models", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try "secret\n".write(toFile: outside + "/secret.txt", atomically: true, encoding: .utf8)
        try ModelFile.write(Make.tinyClassifier(), to: root + "/models/tiny.bin")
        var csv = "label,text\n"
        let topics = [("cooking", ["flour", "oven", "bake", "bread", "dough"]), ("weather", ["rain", "cloud", "storm", "wind", "snow"])]
        for i in 0..<15 {
            for (label, words) in topics { csv += "\(label),\"Today \(words[i % 5]) and \(words[(i * 3 + 1) % 5]), then \(words[(i + 2) % 5]).\"\n" }
        }
        try csv.write(toFile: root + "/texts.csv", atomically: true, encoding: .utf8)
        for (label, rgb) in [("red", (UInt8(200), UInt8(30), UInt8(30))), ("blue", (UInt8(30), UInt8(30), UInt8(200)))] {
            try FileManager.default.createDirectory(atPath: root + "/photos/\(label)", withIntermediateDirectories: true)
            for i in 0..<3 {
                try Data(TestPNG.solid(width: 16, height: 12, rgb: rgb, noiseSeed: UInt64(i + 1))).write(to: URL(fileURLWithPath: root + "/photos/\(label)/\(i).png"))
            }
        }
        try Data("not an image".utf8).write(to: URL(fileURLWithPath: root + "/photos/red/broken.png"))
        try FileManager.default.createSymbolicLink(atPath: root + "/escape", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: root + "/secret.txt", withDestinationPath: outside + "/secret.txt")
        return (root, outside)
    }

    static func start(_ root: String, maxBody: Int? = nil) throws -> StudioServer {
        var p = StudioParameters()
        p.port = 0
        p.eventWaitSeconds = 2
        if let maxBody { p.serving.http.maxBodyBytes = maxBody }
        return try StudioServer(folder: root, parameters: p)
    }

    static func base(_ s: StudioServer) -> String { "http://127.0.0.1:\(s.port)" }

    /// curl with the token in its header (unless `token` is nil).
    static func call(_ s: StudioServer, _ path: String, token: String?? = .none, _ args: [String] = []) throws -> Reply {
        let t = token ?? s.parameters.token
        return try ServeTests.curl((t.map { ["-H", "X-Studio-Token: \($0)"] } ?? []) + args + [base(s) + path])
    }

    static func post(_ s: StudioServer, _ path: String, _ json: String, _ extra: [String] = []) throws -> Reply {
        try call(s, path, ["-H", "Content-Type: application/json", "-H", "Origin: \(base(s))", "-d", json] + extra)
    }

    static func object(_ body: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
    }

    /// Run `id`'s ending event ("finished", "failed" or "cancelled", as the page reads it), nil if it has not ended
    /// within `seconds`.
    static func ending(_ s: StudioServer, run id: Int, seconds: Double) throws -> [String: Any]? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let body = try call(s, "/api/runs/\(id)/events?after=-1").body
            let events = body.split(separator: "\n").filter { $0.hasPrefix("data: ") }.map { object(String($0.dropFirst(6))) }
            if let end = events.last(where: { ["finished", "failed", "cancelled"].contains($0["type"] as? String) }) { return end }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return nil
    }

    /// Whether run 1 finished within `seconds` (a failure is recorded as an issue).
    static func waitForRun(_ s: StudioServer, seconds: Double) throws -> Bool {
        let end = try ending(s, run: 1, seconds: seconds)
        if end?["type"] as? String == "failed" { Issue.record("run 1 failed: \(String(describing: end))") }
        return end?["type"] as? String == "finished"
    }

    /// The task's summary in a data view's answer.
    static func summary(_ body: String) -> [String: Any] { (object(body)["summary"] as? [String: Any]) ?? [:] }

    /// The error run `id` failed with (its "failed" event), once it has ended.
    static func failure(_ s: StudioServer, run id: Int) throws -> String? {
        guard let end = try ending(s, run: id, seconds: 60), end["type"] as? String == "failed" else { return nil }
        return end["error"] as? String
    }

    /// The first "mltool: error: …" line the CLI wrote to standard error.
    static func firstError(_ stderr: String) -> String? {
        stderr.split(separator: "\n").first { $0.hasPrefix("mltool: error: ") }.map(String.init)
    }

    /// Every error the CLI prints appears in the page in the same words: the page shows "mltool: error: " and the
    /// server's message, which must be the line `mltool train` writes to standard error for the same data and
    /// options (the data named by the absolute path the studio resolves it to): an option value that is not a
    /// number, one out of range, a table without its target, an unreadable photo under --strict; then a quantization
    /// refused before anything runs.
    @Test func errorsReadAsTheCLIPrintsThem() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let (root, _) = try Self.project(dir)
        try "glucose,insulin,diabetes\n85,94,neg\n168,0,pos\n".write(toFile: root + "/table.csv", atomically: true, encoding: .utf8)
        let s = try Self.start(root)
        defer { s.stop() }
        let cases: [(data: String, options: [String: String])] = [
            ("texts.csv", ["--epochs": "three"]),
            ("texts.csv", ["--epochs": "-3"]),
            ("table.csv", [:]),
            ("photos", ["--strict": ""]),
        ]
        for (run, c) in zip(1..., cases) {
            let body = try JSONSerialization.data(withJSONObject: ["data": c.data, "options": c.options])
            let r = try Self.post(s, "/api/train", String(decoding: body, as: UTF8.self))
            // Each starts a run (the options are the task's own), which fails: the page shows its "failed" event.
            #expect(r.status == 202, "\(c.data): \(r.body)")
            let page = try Self.failure(s, run: run)
            let options = c.options.sorted { $0.key < $1.key }.flatMap { $0.value.isEmpty ? [$0.key] : [$0.key, $0.value] }
            let cli = try Tool.run(["train", root + "/" + c.data, "--out", dir.file("cli.bin")] + options)
            let printed = Self.firstError(cli.stderr)
            #expect(cli.status != 0 && printed != nil, "\(c.data): \(cli.stderr)")
            #expect(page.map { "mltool: error: " + $0 } == printed, "\(c.data): page \(page ?? "nil") / CLI \(cli.stderr)")
        }
        // A request refused at once (no run): quantizing to a width there is none of (was a 500: QuantError is
        // neither a pipeline nor a data error, yet the CLI calls it a usage error).
        let r = try Self.post(s, "/api/quantize", #"{"model": "models/tiny.bin", "options": {"--bits": "3"}}"#)
        let page = Self.object(r.body)["error"] as? String
        let cli = try Tool.run(["quantize", root + "/models/tiny.bin", "--bits", "3", "--out", dir.file("q.bin")])
        let printed = Self.firstError(cli.stderr)
        #expect(page.map { "mltool: error: " + $0 } == printed && r.status == 400, "\(r.status) \(r.body) / CLI \(cli.stderr)")
    }

    @Test func everyRefusalHasItsExactStatusAndNamesThePath() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let (root, _) = try Self.project(dir)
        let s = try Self.start(root, maxBody: 64 << 10)
        defer { s.stop() }
        #expect(s.url.hasPrefix("http://127.0.0.1:\(s.port)/?token=") && s.parameters.token.count == 32)

        // The token: none, a wrong one, then in the header and in the query.
        #expect(try Self.call(s, "/api/project", token: .some(nil)).status == 401)
        #expect(try Self.call(s, "/", token: .some(nil)).status == 401)
        #expect(try Self.call(s, "/static/studio.js", token: .some(nil)).status == 401)
        #expect(try Self.call(s, "/api/project", token: "0123456789abcdef0123456789abcdef").status == 401)
        let page = try Self.call(s, "/?token=\(s.parameters.token)", token: .some(nil))
        #expect(page.status == 200 && page.body.contains("/static/studio.js?token=\(s.parameters.token)"))
        #expect(try Self.call(s, "/static/studio.js").status == 200)

        // A foreign Origin may not change anything; a foreign Host is refused (DNS rebinding).
        let train = "{\"data\": \"texts.csv\"}"
        #expect(try Self.call(s, "/api/train", ["-H", "Content-Type: application/json", "-H", "Origin: http://evil.example", "-d", train]).status == 403)
        #expect(try Self.call(s, "/api/train", ["-H", "Content-Type: application/json", "-H", "Origin: http://127.0.0.1:1", "-d", train]).status == 403)
        #expect(try Self.call(s, "/api/project", ["-H", "Host: evil.example:\(s.port)"]).status == 403)
        #expect(try Self.call(s, "/api/train", ["-H", "Content-Type: application/json", "-H", "Sec-Fetch-Site: cross-site", "-d", train]).status == 403)

        // Paths out of the project, in a query and in a body field: 403, the path named.
        for (path, reason) in [("../outside/secret.txt", "through '..'"), ("/etc/passwd", "an absolute path"),
                               ("escape/secret.txt", "a symbolic link"), ("secret.txt", "a symbolic link")] {
            let r = try Self.call(s, "/api/file?path=" + (path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path))
            #expect(r.status == 403, "\(path): \(r.body)")
            #expect(r.body.contains("path '\(path)': \(reason)"), "\(r.body)")
        }
        let up = try Self.post(s, "/api/train", "{\"data\": \"photos/../../outside\"}")
        #expect(up.status == 403 && up.body.contains("data 'photos/../../outside'"), "\(up.body)")
        let test = try Self.post(s, "/api/train", "{\"data\": \"texts.csv\", \"options\": {\"--out\": \"/tmp/x.bin\"}}")
        #expect(test.status == 403 && test.body.contains("--out '/tmp/x.bin': an absolute path"), "\(test.body)")
        let model = try Self.post(s, "/api/export", "{\"model\": \"escape/m.bin\", \"to\": \"onnx\"}")
        #expect(model.status == 403, "\(model.body)")
        #expect(try Self.call(s, "/api/file?path=nothing.txt").status == 404)

        // Uploads: over the byte limit (unread), over the pixel limit, and a photo that is fine.
        let big = dir.file("big.bin")
        try Data(count: 65 << 10).write(to: URL(fileURLWithPath: big))
        #expect(try Self.post(s, "/api/predict?model=models/tiny.bin", "", ["-H", "Content-Type: image/png", "--data-binary", "@" + big]).status == 413)
        var bomb: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
        bomb += TestPNG.chunk("IHDR", TestPNG.be32(100_000) + TestPNG.be32(100_000) + [8, 2, 0, 0, 0]) + TestPNG.chunk("IDAT", [0x78, 0x01]) + TestPNG.chunk("IEND", [])
        try Data(bomb).write(to: URL(fileURLWithPath: dir.file("bomb.png")))
        let refused = try Self.call(s, "/api/predict?model=models/tiny.bin", ["-H", "Content-Type: image/png", "--data-binary", "@" + dir.file("bomb.png")])
        #expect(refused.status == 413, "\(refused.body)")
        let red = try Self.call(s, "/api/predict?model=models/tiny.bin", ["-H", "Content-Type: image/png", "--data-binary", "@" + root + "/photos/red/0.png"])
        #expect(red.status == 200 && ServeTests.topLabel(red.body) == "red", "\(red.body)")
    }

    /// The data view is each task's summary: boxes per label and photos with their boxes for detection (a box
    /// outside its photo named as `train` names it), tokens per tag and tagged sentences for a CoNLL-U file.
    @Test func dataViewsOfDetectionAndTaggingData() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let root = dir.file("project")
        try FileManager.default.createDirectory(atPath: root + "/boxes", withIntermediateDirectories: true)
        for i in 0..<2 {
            try Data(TestPNG.solid(width: 40, height: 30, rgb: (90, 90, 90), noiseSeed: UInt64(i + 1))).write(to: URL(fileURLWithPath: root + "/boxes/\(i).png"))
        }
        let box = { (label: String, x: Int, y: Int) in "{\"label\": \"\(label)\", \"coordinates\": {\"x\": \(x), \"y\": \(y), \"width\": 10, \"height\": 8}}" }
        try """
            [{"image": "0.png", "annotations": [\(box("cat", 10, 10)), \(box("dog", 25, 15))]},
             {"image": "1.png", "annotations": [\(box("cat", 20, 12)), \(box("cat", 200, 12))]}]
            """.write(toFile: root + "/boxes/annotations.json", atomically: true, encoding: .utf8)
        var conllu = ""
        for (n, sentence) in [[("Dogs", "NOUN"), ("bark", "VERB"), (".", "PUNCT")], [("Cats", "NOUN"), ("sleep", "VERB")]].enumerated() {
            conllu += "# sent_id = \(n + 1)\n"
            for (i, (word, tag)) in sentence.enumerated() { conllu += "\(i + 1)\t\(word)\t_\t\(tag)\t_\t_\t0\t_\t_\t_\n" }
            conllu += "\n"
        }
        try conllu.write(toFile: root + "/tags.conllu", atomically: true, encoding: .utf8)
        let s = try Self.start(root)
        defer { s.stop() }

        let listing = Self.object(try Self.call(s, "/api/project").body)
        let sources = (listing["sources"] as? [[String: Any]]) ?? []
        #expect(sources.map { "\($0["path"] ?? "")=\($0["task"] ?? "")" } == ["boxes=detect", "tags.conllu=tagger"])
        let boxes = Self.summary(try Self.call(s, "/api/data?path=boxes").body)
        #expect(((boxes["classes"] as? [[String: Any]]) ?? []).map { "\($0["label"] ?? "")=\($0["count"] ?? "")" } == ["cat=2", "dog=1"])
        let photos = (boxes["photos"] as? [[String: Any]]) ?? []
        #expect(photos.map { $0["path"] as? String } == ["boxes/0.png", "boxes/1.png"])
        let first = (photos.first?["objects"] as? [[String: Any]]) ?? []
        #expect(first.map { $0["label"] as? String } == ["cat", "dog"])
        #expect(((first.first?["box"] as? [String: Any])?["x"] as? Double) == 5)   // centre 10, width 10: left edge 5, pixels
        let bad = (boxes["badFiles"] as? [String]) ?? []
        #expect(bad.count == 1 && bad.first?.contains("outside") == true, "\(bad)")
        let tags = Self.summary(try Self.call(s, "/api/data?path=tags.conllu").body)
        #expect(((tags["classes"] as? [[String: Any]]) ?? []).map { "\($0["label"] ?? "")=\($0["count"] ?? "")" } == ["NOUN=2", "PUNCT=1", "VERB=2"])
        let sentences = (tags["sentences"] as? [[String: Any]]) ?? []
        #expect(sentences.first?["words"] as? [String] == ["Dogs", "bark", "."] && sentences.first?["tags"] as? [String] == ["NOUN", "VERB", "PUNCT"])
    }

    /// A table (PimaIndiansDiabetes2 from datasets/tabular.sh) is tabular data: its columns as training reads them and
    /// what each would be as the target; a copy with one typo in a numeric column names the field; training on the
    /// picked target makes the model.
    @Test func dataViewOfATableAndTrainingOnThePickedTarget() throws {
        let pima = SharedDatasets.repository.appendingPathComponent("datasets/tabular/pima/train.csv").path
        guard FileManager.default.fileExists(atPath: pima) else { return Oracles.missing("datasets/tabular (bash datasets/tabular.sh)") }
        let dir = try TempDir(); defer { dir.cleanup() }
        let root = dir.file("project")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: pima, toPath: root + "/pima.csv")
        var lines = try String(contentsOfFile: pima, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var fields = lines[3].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        fields[1] = "high"   // glucose, line 4
        lines[3] = fields.joined(separator: ",")
        try lines.joined(separator: "\n").write(toFile: root + "/typo.csv", atomically: true, encoding: .utf8)
        let s = try Self.start(root)
        defer { s.stop() }

        let listing = Self.object(try Self.call(s, "/api/project").body)
        let sources = (listing["sources"] as? [[String: Any]]) ?? []
        #expect(sources.map { "\($0["path"] ?? "")=\($0["task"] ?? "")" } == ["pima.csv=tabular", "typo.csv=tabular"])
        let view = Self.summary(try Self.call(s, "/api/data?path=pima.csv").body)
        #expect(view["rows"] as? Int == 540)
        let columns = Dictionary(uniqueKeysWithValues: ((view["columns"] as? [[String: Any]]) ?? []).map { ($0["name"] as? String ?? "", $0) })
        #expect(columns.count == 9)
        // Counted with Python's csv module on the same file: missing glucose 4, triceps 152, insulin 261; 2 diabetes values.
        #expect(columns["glucose"]?["kind"] as? String == "numeric" && columns["glucose"]?["missing"] as? Int == 4)
        #expect(columns["insulin"]?["missing"] as? Int == 261)
        #expect(columns["triceps"]?["asTarget"] as? String == "not a target: 152 rows have no value")
        #expect(columns["pedigree"]?["asTarget"] as? String == "regression")
        #expect(columns["diabetes"]?["kind"] as? String == "categorical" && columns["diabetes"]?["asTarget"] as? String == "2 classes")
        #expect((columns["diabetes"]?["top"] as? [String])?.count == 2)
        #expect((view["badFiles"] as? [String])?.isEmpty == true)
        let typo = Self.summary(try Self.call(s, "/api/data?path=typo.csv").body)
        let bad = (typo["badFiles"] as? [String]) ?? []
        #expect(bad.count == 1 && bad.first?.contains("line 4, column 2 (glucose): \"high\" is not a number") == true, "\(bad)")

        let started = try Self.post(s, "/api/train", "{\"data\": \"pima.csv\", \"task\": \"tabular\", \"options\": {\"--target\": \"diabetes\"}}")
        #expect(started.status == 202, "\(started.body)")
        let finished = try Self.waitForRun(s, seconds: 60)
        let after = Self.object(try Self.call(s, "/api/project").body)
        let trained = ((after["models"] as? [[String: Any]]) ?? []).first { $0["path"] as? String == "models/pima.bin" }
        #expect(finished && trained?["task"] as? String == "tabular", "\(String(describing: trained))")
        // Its preview asks for a row of the columns it reads (the target is not one), and answers a row with the
        // classes' probabilities.
        let preview = trained?["preview"] as? [String: Any]
        let previewColumns = ((preview?["columns"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
        #expect(preview?["takes"] as? String == "rows" && previewColumns.count == 8 && !previewColumns.contains("diabetes"), "\(String(describing: preview))")
        let row = #"{"row": {"pregnant": 8, "glucose": 183, "pressure": 64, "mass": 23.3, "pedigree": 0.672, "age": 32}}"#
        let answer = Self.object(try Self.call(s, "/api/predict?model=models/pima.bin", ["-H", "Content-Type: application/json", "-H", "Origin: \(Self.base(s))", "-d", row]).body)
        let probabilities = answer["probabilities"] as? [String: Double] ?? [:]
        #expect(Set(probabilities.keys) == ["neg", "pos"] && abs(probabilities.values.reduce(0, +) - 1) < 1e-5, "\(answer)")
        // It is not offered Quantize (the listing says why), and a quantize request gets the CLI's words.
        #expect((trained?["quantizeRefusal"] as? String)?.hasPrefix("a tabular model holds split thresholds") == true, "\(String(describing: trained))")
        let q = try Self.post(s, "/api/quantize", #"{"model": "models/pima.bin", "options": {"--bits": "8"}}"#)
        #expect(q.status == 400 && q.body.contains("a tabular model holds split thresholds"), "\(q.body)")
    }

    /// A detector trained in the studio keeps its feature cache in the project (every task with a feature cache takes
    /// --cache, which the studio sets): the project's cache holds one entry per photo afterwards, so nothing went to
    /// ~/.cache or $MLTOOL_CACHE.
    @Test func aDetectorsFeatureCacheStaysInTheProject() throws {
        guard BundledModel.extractor.locate() != nil else { return Oracles.missing("models/efficientnet-lite0.bin (make models)") }
        let dir = try TempDir(); defer { dir.cleanup() }
        let root = dir.file("project")
        try FileManager.default.createDirectory(atPath: root + "/boxes", withIntermediateDirectories: true)
        try TestPNG.boxedPhotos(in: root + "/boxes")
        let s = try Self.start(root)
        defer { s.stop() }
        let started = try Self.post(s, "/api/train", "{\"data\": \"boxes\", \"options\": {\"--epochs\": \"1\", \"--augment\": \"none\"}}")
        #expect(started.status == 202 && Self.object(started.body)["task"] as? String == "detect", "\(started.body)")
        let finished = try Self.waitForRun(s, seconds: 120)
        #expect(finished)
        let cache = root + "/" + StudioProject.cacheFolder
        let entries = FileManager.default.enumerator(atPath: cache)?.allObjects.compactMap { $0 as? String }
            .filter { !$0.hasPrefix(".") && $0.contains(".") } ?? []
        // 12 photos, 2 of them the holdout (evaluated through the model itself, never cached): 10 entries measured.
        #expect(entries.count == 10, "\(entries.count) cache files in \(cache)")
    }

    @Test func aPageCanSeeTrainTryQuantizeAndExport() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let (root, outside) = try Self.project(dir)
        let s = try Self.start(root)
        defer { s.stop() }

        // The project: the CSV is text data, the photo folders image data, the model listed with its summary.
        let listing = Self.object(try Self.call(s, "/api/project").body)
        let sources = (listing["sources"] as? [[String: Any]]) ?? []
        #expect(sources.map { "\($0["path"] ?? "")=\($0["task"] ?? "")" } == ["photos=image", "texts.csv=text"])
        let models = (listing["models"] as? [[String: Any]]) ?? []
        #expect(models.map { $0["path"] as? String } == ["models/tiny.bin"])

        // The data view: class counts, samples, and the broken file named as `train` names it.
        let photos = Self.summary(try Self.call(s, "/api/data?path=photos").body)
        let classes = (photos["classes"] as? [[String: Any]]) ?? []
        #expect(classes.map { "\($0["label"] ?? "")=\($0["count"] ?? "")" } == ["blue=3", "red=4"])
        #expect(classes.first?["samples"] as? [String] == ["photos/blue/0.png", "photos/blue/1.png", "photos/blue/2.png"])
        let bad = (photos["badFiles"] as? [String]) ?? []
        #expect(bad.count == 1 && bad.first?.contains("broken.png") == true, "\(bad)")
        let texts = Self.summary(try Self.call(s, "/api/data?path=texts.csv").body)
        #expect(((texts["classes"] as? [[String: Any]]) ?? []).map { $0["count"] as? Int } == [15, 15])

        // The form is the task's option table.
        let form = Self.object(try Self.call(s, "/api/options?task=text").body)
        let flags = ((form["fields"] as? [[String: Any]]) ?? []).compactMap { $0["flag"] as? String }
        #expect(flags.contains("--epochs") && flags.contains("--seed") && !flags.contains("--cache"))

        // Train: a run whose events arrive in several answers (each an SSE body), until it ends.
        let started = try Self.post(s, "/api/train", "{\"data\": \"texts.csv\", \"options\": {\"--epochs\": \"5\", \"--max-iterations\": \"10\"}}")
        #expect(started.status == 202, "\(started.body)")
        #expect(Self.object(started.body)["output"] as? String == "models/texts.bin")
        var last = -1, iterations = 0, answers = 0, ended = false, finished = false
        let deadline = Date().addingTimeInterval(60)
        while !ended && Date() < deadline {
            let r = try Self.call(s, "/api/runs/1/events?after=\(last)")
            #expect(r.status == 200)
            answers += 1
            for line in r.body.split(separator: "\n") {
                if line.hasPrefix("id: ") { last = Int(line.dropFirst(4)) ?? last }
                if line.hasPrefix("data: {\"iteration\"") || line.contains("\"type\":\"iteration\"") { iterations += 1 }
                if line.contains("\"type\":\"finished\"") { finished = true }
                if line == "event: end" { ended = true }
            }
        }
        #expect(finished && iterations >= 2, "\(iterations) iterations in \(answers) answers")
        // A page that reconnects from the start gets every event again.
        let replay = try Self.call(s, "/api/runs/1/events?after=-1")
        #expect(replay.body.contains("\"type\":\"finished\"") && replay.body.contains("event: end"))
        let after = Self.object(try Self.call(s, "/api/project").body)
        let trained = ((after["models"] as? [[String: Any]]) ?? []).first { $0["path"] as? String == "models/texts.bin" }
        #expect((trained?["summary"] as? String)?.hasPrefix("Text classification, 2 labels") == true, "\(String(describing: trained))")
        #expect((trained?["preview"] as? [String: Any])?["takes"] as? String == "texts", "\(String(describing: trained))")
        #expect(trained?["quantizeRefusal"] == nil, "a text classifier is offered Quantize: \(String(describing: trained))")

        // Evaluate (the HTML report into reports/), try a sentence, quantize, export.
        let evaluated = try Self.post(s, "/api/evaluate", "{\"model\": \"models/texts.bin\"}")
        #expect(evaluated.status == 200, "\(evaluated.body)")
        #expect(FileManager.default.fileExists(atPath: root + "/reports/texts.html"))
        let report = try Self.call(s, "/api/file?path=reports/texts.html")
        #expect(report.status == 200 && report.body.contains("<html"))
        let sentence = try Self.post(s, "/api/predict?model=models/texts.bin", "{\"text\": \"rain and snow and wind\"}")
        #expect(sentence.status == 200 && ServeTests.topLabel(sentence.body) == "weather", "\(sentence.body)")
        let exported = try Self.post(s, "/api/export", "{\"model\": \"models/tiny.bin\", \"to\": \"onnx\"}")
        #expect(exported.status == 200 && Self.object(exported.body)["file"] as? String == "models/tiny.onnx", "\(exported.body)")
        let download = try Self.call(s, "/api/file?path=models/tiny.onnx&download=1", ["-D", "-"])
        #expect(download.body.lowercased().contains("content-disposition: attachment; filename=\"tiny.onnx\""))
        let lite = try Self.post(s, "/api/export", "{\"model\": \"models/tiny.bin\", \"to\": \"tflite\"}")
        #expect(lite.status == 200 && Self.object(lite.body)["file"] as? String == "models/tiny.tflite", "\(lite.body)")
        let liteBytes = try Data(contentsOf: URL(fileURLWithPath: root + "/models/tiny.tflite"))
        #expect(liteBytes.count > 8 && String(decoding: liteBytes[4..<8], as: UTF8.self) == "TFL3")   // the flatbuffer's file identifier
        let quantized = try Self.post(s, "/api/quantize", "{\"model\": \"models/tiny.bin\", \"options\": {\"--bits\": \"8\", \"--min-elements\": \"1\"}}")
        #expect(quantized.status == 200, "\(quantized.body)")
        #expect(Self.object(quantized.body)["output"] as? String == "models/tiny.int8.bin")
        // An error is the CLI's text: the option's own refusal ends the run, in the words `mltool train` prints.
        let wrong = try Self.post(s, "/api/train", "{\"data\": \"texts.csv\", \"options\": {\"--epochs\": \"many\"}}")
        #expect(wrong.status == 202, "\(wrong.body)")
        var failed = ""
        while !failed.contains("event: end") && Date() < deadline { failed = try Self.call(s, "/api/runs/2/events?after=-1").body }
        #expect(failed.contains("\"error\":\"--epochs: 'many' is not an integer\"") && failed.contains("\"type\":\"failed\""), "\(failed)")

        // Nothing was written outside the project.
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == ["secret.txt"])
    }
}
