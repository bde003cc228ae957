import Foundation
import Glibc
import MLTool
import MLToolFormat
import MLToolTestSupport
import Testing

/// `mltool serve` under full load (Debian's wrk, 64 connections on 2 threads, keep-alive, each posting a photo as fast
/// as it is answered): a model swapped on disk mid-load, and SIGTERM mid-load. wrk's Lua counts every response by its
/// status and top label, and its socket errors; the server's own count of what it answered (its "stopped" line) must
/// equal what wrk received.
@Suite(.serialized, .enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct ServeLoadTests {
    /// What one wrk run saw: responses by "STATUS LABEL", socket errors by kind.
    struct Load {
        var responses: [String: Int] = [:]
        var errors: [String: Int] = [:]
        var output = ""
        var total: Int { responses.values.reduce(0, +) }
    }

    static var wrk: String? { ["/usr/bin/wrk", "/usr/local/bin/wrk"].first { FileManager.default.isExecutableFile(atPath: $0) } }

    /// The Lua script: the photo as the POST body; per-thread tallies joined in `done`.
    static func script(photo: String, in dir: TempDir) throws -> String {
        let lua = """
            local f = io.open("\(photo)", "rb"); wrk.body = f:read("*a"); f:close()
            wrk.method = "POST"; wrk.headers["Content-Type"] = "image/png"
            local threads = {}
            function setup(thread) table.insert(threads, thread) end
            function init(args) counts = {} end
            function response(status, headers, body)
              local label = body:match('"top"%s*:%s*%[%s*{%s*"label"%s*:%s*"([^"]*)"') or "?"
              local key = status .. " " .. label
              counts[key] = (counts[key] or 0) + 1
            end
            function done(summary, latency, requests)
              local all = {}
              for _, t in ipairs(threads) do
                for k, v in pairs(t:get("counts")) do all[k] = (all[k] or 0) + v end
              end
              for k, v in pairs(all) do io.write("response ", k, " ", v, "\\n") end
              local e = summary.errors
              io.write("error connect ", e.connect, "\\nerror read ", e.read, "\\nerror write ", e.write,
                       "\\nerror timeout ", e.timeout, "\\n")
            end
            """
        let path = dir.file("load.lua")
        try lua.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Starts wrk against `url` for `seconds`; `during` runs while it loads; then its tallies.
    static func load(_ url: String, script: String, seconds: Int, during: () throws -> Void) throws -> Load {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: wrk ?? "/nonexistent")
        p.arguments = ["-t", "2", "-c", "64", "-d", "\(seconds)s", "--timeout", "20s", "-s", script, url]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        try during()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        var load = Load(output: text)
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count >= 3, let n = Int(f[f.count - 1]) else { continue }
            let key = f[1..<(f.count - 1)].joined(separator: " ")
            if f[0] == "response" { load.responses[key] = n } else if f[0] == "error" { load.errors[key] = n }
        }
        return load
    }

    /// --watch: the model file replaced atomically (a rename over it) 1.5 s into 4 s of full load. Every response is a
    /// 200 with the old model's top label or the new one's, both are seen, and wrk has no socket error.
    @Test func aModelSwappedUnderFullLoadGivesOnlyOldOrNewAnswers() throws {
        guard Self.wrk != nil else { return Oracles.missing("wrk (apt install wrk)") }
        let dir = try TempDir(); defer { dir.cleanup() }
        try ServeTests.models(dir)
        try ModelFile.write(Make.tinyClassifier(labels: ["cold", "warm"]), to: dir.file("next.bin"))
        let server = try ServeTests.Server([dir.file("tiny.bin"), "--watch"])
        let load = try Self.load(server.url + "/v1/models/tiny/predict", script: try Self.script(photo: dir.file("red.png"), in: dir),
                                 seconds: 4) {
            Thread.sleep(forTimeInterval: 1.5)
            #expect(rename(dir.file("next.bin"), dir.file("tiny.bin")) == 0)
        }
        print("ServeLoadTests swap: \(load.responses) errors \(load.errors)")
        #expect(Set(load.responses.keys) == ["200 red", "200 warm"], "\(load.output)")
        #expect(load.errors.values.allSatisfy { $0 == 0 } && load.errors.count == 4, "\(load.output)")
        #expect(try ServeTests.curl([server.url + "/metrics"]).body.contains("mltool_model_reloads_total{model=\"tiny\",result=\"ok\"} 1"))
        #expect(server.stop() == 0)
    }

    /// SIGTERM 1.5 s into full load: the server stops accepting, answers what it received and exits 0. Every response
    /// wrk got is a 200 with the model's answer, none timed out, and the server's count of requests answered equals
    /// the responses wrk received: no accepted request went unanswered or was answered twice.
    @Test func sigtermUnderFullLoadAnswersEveryAcceptedRequest() throws {
        guard Self.wrk != nil else { return Oracles.missing("wrk (apt install wrk)") }
        let dir = try TempDir(); defer { dir.cleanup() }
        try ServeTests.models(dir)
        let server = try ServeTests.Server([dir.file("tiny.bin")])
        var status: Int32 = -1
        let load = try Self.load(server.url + "/v1/models/tiny/predict", script: try Self.script(photo: dir.file("red.png"), in: dir),
                                 seconds: 3) {
            Thread.sleep(forTimeInterval: 1.5)
            status = server.stop()
        }
        let stderr = String(decoding: server.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        print("ServeLoadTests SIGTERM: \(load.responses) errors \(load.errors); server: \(stderr.split(separator: "\n").last ?? "")")
        #expect(status == 0, "\(stderr)")
        #expect(Set(load.responses.keys) == ["200 red"] && load.total > 100, "\(load.output)")
        #expect(load.errors["timeout"] == 0, "\(load.output)")
        #expect(stderr.contains("mltool: stopped; answered \(load.total) × 200\n"), "wrk received \(load.total): \(stderr)")
    }
}
