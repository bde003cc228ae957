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
            // Every refusal names a place, also where a C library parses the format (protobuf-c, libpng,
            // libjpeg-turbo): "refused-unlocalised" (run_corpus.py's UNLOCALISED) is a failure. Formats without a
            // checksum may load a mutant as another valid file ("loaded").
            let allowed: Set<String> = switch r.format {
            case "bin": ["refused", "identical"]
            case "onnx", "mlmodel", "png", "jpeg": ["refused", "identical", "loaded"]
            default: ["refused", "refused-dataset", "identical", "loaded"]
            }
            #expect(allowed.contains(r.verdict), "\(r.format) \(r.name) (\(r.bytes) bytes): \(r.verdict), \(r.cpu_s) s CPU: \(r.stderr)")
        }
        // The corpus does reach the readers: most files of every format are refused.
        for format in Set(report.results.map(\.format)) {
            let rs = report.results.filter { $0.format == format }
            #expect(rs.filter { $0.verdict.hasPrefix("refused") }.count * 2 >= rs.count, "\(format): too few refusals")
        }
    }

    // MARK: - every prefix, in-process

    /// The message of `body`'s error, or nil when it returns.
    static func failure(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch { return "\(error)" }
    }

    /// Classifies one prefix's outcome: "loaded" (no error), "refused" (an error naming `file` and matching
    /// `place`), "unlocalised" (naming `file`, matching only `unlocalised`: a C library's error without an offset);
    /// anything else is recorded as an issue.
    static func check(_ message: String?, file: String, place: String, unlocalised: String? = nil, prefix: Int,
                      format: String, counts: inout [String: Int]) {
        let outcome: String
        if let message {
            if message.contains(file), message.range(of: place, options: .regularExpression) != nil {
                outcome = "refused"
            } else if message.contains(file), let u = unlocalised, message.range(of: u, options: .regularExpression) != nil {
                outcome = "unlocalised"
            } else {
                outcome = "bad"
                Issue.record("\(format) prefix of \(prefix) bytes: no file or place in \"\(message)\"")
            }
        } else {
            outcome = "loaded"
        }
        counts[outcome, default: 0] += 1
    }

    static func report(_ format: String, _ counts: [String: Int]) {
        print("MalformedCorpusTests: \(format) prefixes: \(counts.values.reduce(0, +)) \(counts.sorted { $0.key < $1.key })")
    }

    @Test func everyPrefixOfANativeModelIsRefused() throws {
        let bytes = try ModelFile.serialize(Make.tinyClassifier())
        let place = #"byte \d+"#
        var counts: [String: Int] = [:]
        for n in 0..<bytes.count {
            let m = Self.failure { _ = try ModelFile.read(bytes: Array(bytes[0..<n]), name: "p.bin") }
            // A checksummed format: no prefix may load.
            #expect(m != nil, "a \(n)-byte prefix of a \(bytes.count)-byte model loads")
            Self.check(m, file: "p.bin", place: place, prefix: n, format: "bin", counts: &counts)
        }
        Self.report("bin", counts)
    }

    @Test func everyPrefixOfAnImageIsRefused() throws {
        let png = TestPNG.solid(width: 12, height: 10, rgb: (200, 30, 30), noiseSeed: 1)
        let jpeg = try [UInt8](Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("MLToolDataTests/Fixtures/quad.jpg")))
        let whole = [("p.png", png), ("p.jpg", jpeg)].map { name, b in (name, b, try? ImageDecoder.decode(bytes: b, name: name)) }
        for (name, bytes, full) in whole {
            let image = try #require(full, "\(name) does not decode")
            var counts: [String: Int] = [:]
            for n in 0..<bytes.count {
                var loaded: RGBImage?
                let m = Self.failure { loaded = try ImageDecoder.decode(bytes: Array(bytes[0..<n]), name: name) }
                if let loaded { #expect(loaded.pixels == image.pixels, "\(name): a \(n)-byte prefix decodes to another image") }
                // libpng and libjpeg-turbo say what failed, ImageStructure says where (a chunk or segment and its byte).
                Self.check(m, file: name, place: #"empty file|byte \d+|\d+×\d+"#, prefix: n, format: name, counts: &counts)
            }
            Self.report(name, counts)
        }
    }

    @Test func everyPrefixOfAnONNXModelIsRefusedOrLoadsTheSame() throws {
        let source = Self.fixtures.appendingPathComponent("onnx/mlp_opset9.onnx").path
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source)))
        let full = try ModelFile.serialize(ONNXImporter.importModel(path: source, options: ImportOptions()))
        let dir = try TempDir()
        defer { dir.cleanup() }
        var loadedSame = 0
        var counts: [String: Int] = [:]
        for n in 0..<bytes.count {
            let path = dir.file("p\(n).onnx")
            try Data(bytes[0..<n]).write(to: URL(fileURLWithPath: path))
            var model: Model?
            let m = Self.failure { model = try ONNXImporter.importModel(path: path, options: ImportOptions()) }
            if let model {
                #expect(try ModelFile.serialize(model) == full, "a \(n)-byte prefix loads another model")
                loadedSame += 1
            }
            // What protobuf-c refuses, ProtobufWire has named first (byte and field path).
            Self.check(m, file: path, place: #"bytes? \d+|initializer '|node '|graph (input|output) '|opset_import|ir_version|empty"#,
                       prefix: n, format: "onnx", counts: &counts)
            try? FileManager.default.removeItem(atPath: path)
        }
        Self.report("onnx", counts)
        #expect(loadedSame < bytes.count / 10)
    }

    @Test func everyPrefixOfACoreMLModelIsRefusedOrLoadsTheSame() throws {
        let source = Self.fixtures.appendingPathComponent("coreml/small_cnn.mlmodel").path
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source)))
        let full = try ModelFile.serialize(CoreMLImporter.importModel(path: source))
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.file("p.mlmodel")
        var counts: [String: Int] = [:]
        for n in 0..<bytes.count {
            try Data(bytes[0..<n]).write(to: URL(fileURLWithPath: path))
            var model: Model?
            let m = Self.failure { model = try CoreMLImporter.importModel(path: path) }
            if let model { #expect(try ModelFile.serialize(model) == full, "a \(n)-byte prefix loads another model") }
            Self.check(m, file: path, place: #"bytes? \d+|layer '|op '|input '|output '|description: |model type: |empty"#,
                       prefix: n, format: "mlmodel", counts: &counts)
        }
        Self.report("mlmodel", counts)
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
            var counts: [String: Int] = [:]
            for n in 0..<bytes.count {
                try Data(bytes[0..<n]).write(to: URL(fileURLWithPath: path))
                let m = Self.failure { _ = try TextDataset.table(path) }
                Self.check(m, file: path, place: #":\d+:|byte \d+|no column '|empty file|no documents"#, prefix: n, format: name,
                           counts: &counts)
            }
            Self.report(name, counts)
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
        var cc: [String: Int] = [:], jc: [String: Int] = [:]
        for n in 0..<c.count {
            let m = Self.failure { _ = try TaggedCorpus.conllu(bytes: Array(c[0..<n]), file: "p.conllu") }
            Self.check(m, file: "p.conllu", place: #":\d+:|byte \d+|empty file|no sentences|no documents"#, prefix: n, format: "conllu",
                       counts: &cc)
        }
        Self.report("conllu", cc)
        for n in 0..<j.count {
            let m = Self.failure { _ = try TaggedCorpus.json(bytes: Array(j[0..<n]), file: "p.json") }
            Self.check(m, file: "p.json", place: #"byte \d+|sentence \d+|empty file|no documents"#, prefix: n, format: "tagjson",
                       counts: &jc)
        }
        Self.report("tagjson", jc)
    }
}
