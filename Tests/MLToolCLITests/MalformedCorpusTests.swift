import Foundation
import MLToolCore
import MLToolData
import MLToolFormat
import MLToolImport
import MLToolTestSupport
import Testing

/// Issue 19 item 2, the malformed corpus. Two halves:
///
/// - `Tests/Fixtures/malformed/run_corpus.py` writes hand-made bad files and seeded mutants (bit flips, byte runs,
///   truncations, smashed length fields, insertions, deletions, bad UTF-8, shuffled lines) of a small valid file of
///   each format the CLI reads, and runs each through the command that reads it. Each must exit 65 naming the file
///   and a place, or exit 0 (for the checksummed native `.bin`: with `mltool info` output identical to the
///   original's), within 1 s of CPU time.
/// - Every truncated prefix of a small valid file of each format goes through the library reader in-process: each
///   must throw an error naming the file and a place, or (binary formats) load exactly what the whole file loads.
@Suite struct MalformedCorpusTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    struct Result: Decodable {
        var format: String, name: String, origin: String, verdict: String, stderr: String
        var wall_s: Double, cpu_s: Double, bytes: Int
    }
    struct Original: Decodable { var status: Int32; var stderr: String }
    struct Report: Decodable { var results: [Result]; var originals: [String: Original] }

    @Test(.enabled(if: Tool.available, "needs MLTOOL_BIN (run `make test`)"))
    func everyBadFileIsRefusedWithAPlaceOrLoads() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let out = dir.file("corpus.json")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Self.fixtures.appendingPathComponent("malformed/run_corpus.py").path, Tool.path ?? "/nonexistent",
                       out, "--seed", "19", "--mutants", "45", "--jobs", "2"]
        let err = Pipe()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        try p.run()
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        try #require(p.terminationStatus == 0, "run_corpus.py failed (python3, numpy, onnx and Pillow are needed): \(errText)")
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: URL(fileURLWithPath: out)))
        for (format, o) in report.originals { #expect(o.status == 0, "the valid \(format) file fails: \(o.stderr)") }
        #expect(report.originals.count == 10)
        #expect(report.results.count >= 500, "only \(report.results.count) files")
        for r in report.results {
            let allowed: Set<String> = r.format == "bin" ? ["refused", "identical"] : ["refused", "refused-dataset", "identical", "loaded"]
            #expect(allowed.contains(r.verdict), "\(r.format) \(r.name) (\(r.bytes) bytes): \(r.verdict), \(r.cpu_s) s CPU: \(r.stderr)")
        }
        // The corpus does reach the readers: most files of every format are refused.
        for format in Set(report.results.map(\.format)) {
            let rs = report.results.filter { $0.format == format }
            #expect(rs.filter { $0.verdict == "refused" }.count * 3 >= rs.count, "\(format): too few refusals")
        }
    }

    // MARK: - every prefix, in-process

    /// The message of `body`'s error, or nil when it returns.
    static func failure(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch { return "\(error)" }
    }

    /// Checks one prefix's outcome: an error naming `file` and matching `place`, or nil (loaded).
    static func check(_ message: String?, file: String, place: String, prefix: Int, format: String) -> Bool {
        guard let message else { return true }
        let ok = message.contains(file) && message.range(of: place, options: .regularExpression) != nil
        if !ok { Issue.record("\(format) prefix of \(prefix) bytes: no file or place in \"\(message)\"") }
        return ok
    }

    @Test func everyPrefixOfANativeModelIsRefused() throws {
        let bytes = try ModelFile.serialize(Make.tinyClassifier())
        let place = #"byte \d+|bytes \[|header|metadata|section|tensor|field|checksum|magic|version"#
        for n in 0..<bytes.count {
            let m = Self.failure { _ = try ModelFile.read(bytes: Array(bytes[0..<n]), name: "p.bin") }
            // A checksummed format: no prefix may load.
            #expect(m != nil, "a \(n)-byte prefix of a \(bytes.count)-byte model loads")
            _ = Self.check(m, file: "p.bin", place: place, prefix: n, format: "bin")
        }
    }

    @Test func everyPrefixOfAnImageIsRefused() throws {
        let png = Make.png(width: 12, height: 10, rgb: (200, 30, 30), noiseSeed: 1)
        let jpeg = try [UInt8](Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("MLToolDataTests/Fixtures/quad.jpg")))
        let whole = [("p.png", png), ("p.jpg", jpeg)].map { name, b in (name, b, try? ImageDecoder.decode(bytes: b, name: name)) }
        for (name, bytes, full) in whole {
            let image = try #require(full, "\(name) does not decode")
            for n in 0..<bytes.count {
                var loaded: RGBImage?
                let m = Self.failure { loaded = try ImageDecoder.decode(bytes: Array(bytes[0..<n]), name: name) }
                if let loaded { #expect(loaded.pixels == image.pixels, "\(name): a \(n)-byte prefix decodes to another image") }
                _ = Self.check(m, file: name, place: #"truncated|empty|byte \d+|IHDR|IDAT|IEND|chunk|CRC|signature|marker|JPEG|PNG"#,
                               prefix: n, format: name)
            }
        }
    }

    @Test func everyPrefixOfAnONNXModelIsRefusedOrLoadsTheSame() throws {
        let source = Self.fixtures.appendingPathComponent("onnx/mlp_opset9.onnx").path
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source)))
        let full = try ModelFile.serialize(ONNXImporter.importModel(path: source, options: ImportOptions()))
        let dir = try TempDir()
        defer { dir.cleanup() }
        var loadedSame = 0
        for n in 0..<bytes.count {
            let path = dir.file("p\(n).onnx")
            try Data(bytes[0..<n]).write(to: URL(fileURLWithPath: path))
            var model: Model?
            let m = Self.failure { model = try ONNXImporter.importModel(path: path, options: ImportOptions()) }
            if let model {
                #expect(try ModelFile.serialize(model) == full, "a \(n)-byte prefix loads another model")
                loadedSame += 1
            }
            _ = Self.check(m, file: path, place: #"byte \d+|initializer|node|graph|input|output|opset|ModelProto|ir_version"#,
                           prefix: n, format: "onnx")
            try? FileManager.default.removeItem(atPath: path)
        }
        #expect(loadedSame < bytes.count / 10)
    }

    @Test func everyPrefixOfACoreMLModelIsRefusedOrLoadsTheSame() throws {
        let source = Self.fixtures.appendingPathComponent("coreml/small_cnn.mlmodel").path
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source)))
        let full = try ModelFile.serialize(CoreMLImporter.importModel(path: source))
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.file("p.mlmodel")
        for n in 0..<bytes.count {
            try Data(bytes[0..<n]).write(to: URL(fileURLWithPath: path))
            var model: Model?
            let m = Self.failure { model = try CoreMLImporter.importModel(path: path) }
            if let model { #expect(try ModelFile.serialize(model) == full, "a \(n)-byte prefix loads another model") }
            _ = Self.check(m, file: path, place: #"byte \d+|field|layer|op |spec|input|output|weights|shape|parse|empty|description"#,
                           prefix: n, format: "mlmodel")
        }
    }

    @Test func everyPrefixOfATextTableIsRefusedWithALineOrLoads() throws {
        var rows = "text,label\n"
        for i in 0..<12 { rows += i % 2 == 0 ? "goal match team \(i),sport\n" : "\"bread, soup\" cheese \(i),food\n" }
        let jsonl = (0..<12).map { #"{"text": "doc \#($0) \#($0 % 2 == 0 ? "goal" : "soup")", "label": "\#($0 % 2 == 0 ? "sport" : "food")"}"# }
            .joined(separator: "\n") + "\n"
        let dir = try TempDir()
        defer { dir.cleanup() }
        for (name, text) in [("p.csv", rows), ("p.tsv", rows.replacingOccurrences(of: ",", with: "\t")), ("p.jsonl", jsonl)] {
            let bytes = Array(text.utf8)
            let path = dir.file(name)
            for n in 0..<bytes.count {
                try Data(bytes[0..<n]).write(to: URL(fileURLWithPath: path))
                let m = Self.failure { _ = try TextDataset.table(path) }
                _ = Self.check(m, file: path, place: #":\d+:|line \d+|byte \d+|column|header|empty"#, prefix: n, format: name)
            }
        }
    }

    @Test func everyPrefixOfATaggedCorpusIsRefusedWithAPlaceOrLoads() throws {
        var conllu = ""
        for s in 0..<4 {
            conllu += "# sent_id = s\(s)\n1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_\n"
            conllu += "3\tsleeps\tsleep\tVERB\t_\t_\t2\tdep\t_\t_\n\n"
        }
        let json = #"[{"tokens": ["The", "cat"], "labels": ["DET", "NOUN"]}, {"tokens": ["A", "dog", "runs"], "labels": ["DET", "NOUN", "VERB"]}]"#
        let c = Array(conllu.utf8), j = Array(json.utf8)
        for n in 0..<c.count {
            let m = Self.failure { _ = try TaggedCorpus.conllu(bytes: Array(c[0..<n]), file: "p.conllu") }
            _ = Self.check(m, file: "p.conllu", place: #":\d+:|line \d+|byte \d+|column|sentence|token|empty"#, prefix: n, format: "conllu")
        }
        for n in 0..<j.count {
            let m = Self.failure { _ = try TaggedCorpus.json(bytes: Array(j[0..<n]), file: "p.json") }
            _ = Self.check(m, file: "p.json", place: #"byte \d+|line \d+|\[\d+\]|sentence|tokens|labels|empty"#, prefix: n, format: "tagjson")
        }
    }
}
