import Foundation
import MLToolTestSupport
import MLToolCore
import MLToolFormat
import Testing

/// What `mltool` prints, pinned: every command's `--help`, `info`, and the train / eval / predict / quantize reports
/// on small data made here (images with a tiny extractor, a three-topic text corpus), with their exit statuses.
/// Timings and the scratch folder are masked. `MLTOOL_RECORD_SNAPSHOTS=1` rewrites the files in Snapshots/ —
/// re-record on purpose only, and read the diff.
@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"), .serialized)
struct SnapshotTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Snapshots")
    static let recording = ProcessInfo.processInfo.environment["MLTOOL_RECORD_SNAPSHOTS"] == "1"
    static let commands = ["import", "train", "eval", "quantize", "export", "info", "predict", "run", "bench", "serve", "studio"]

    /// One command's run as a snapshot: the command line, exit status, stdout and stderr, masked.
    static func render(_ args: [String], _ r: Tool.Result, scratch: String) -> String {
        func mask(_ s: String) -> String {
            var t = s.replacingOccurrences(of: scratch, with: "$SCRATCH")
            t = t.replacingOccurrences(of: "/private$SCRATCH", with: "$SCRATCH")
            // Durations: "seconds ..." report lines, the last column of the progress table, "seconds" in JSON.
            let patterns: [(String, String)] = [
                (#"(?m)^(  seconds .*)$"#, "  seconds <masked>"),
                (#"(?m)^(  \S+\s+\d+\s+\S+\s+\S+\s+\S+\s+)\d+\.\d+$"#, "$1<s>"),
                (#""seconds":[0-9.e+-]+"#, #""seconds":0"#),
                (#"(features: \d+ extracted, \d+ from cache), [0-9.]+ s"#, "$1, <s> s"),
                // Quantization noise measured through the float network differs with the BLAS kernels OpenBLAS picks
                // for the CPU model (4.0114e-07 on Zen 4, 3.9930e-07 on an Intel Xeon, same ISA): a mean KL below 1e-4
                // is shown as such, an SNR to one decimal as the text report gives it.
                (#""meanKL":\d\.\d+e-(0[5-9]|[1-9]\d)"#, #""meanKL":<1e-4"#),
                (#"("snrDB":\d+\.\d)\d+"#, "$1…"),
                // Full-precision floats (JSON) differ in the last bits between SIMD levels: keep 4 decimals.
                (#"(\d\.\d{4})\d+(e-?\d+)?"#, "$1…$2"),
            ]
            for (pattern, template) in patterns {
                t = t.replacingOccurrences(of: pattern, with: template, options: .regularExpression)
            }
            return t
        }
        return "$ mltool \(args.joined(separator: " "))\nexit \(r.status)\n--- stdout\n\(mask(r.stdout))--- stderr\n\(mask(r.stderr))"
    }

    /// Compares `text` with Snapshots/`name`.txt (or writes it when recording).
    static func check(_ name: String, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let file = directory.appendingPathComponent(name + ".txt")
        if recording {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        guard let want = try? String(contentsOf: file, encoding: .utf8) else {
            Issue.record("no snapshot \(name).txt: record it with MLTOOL_RECORD_SNAPSHOTS=1", sourceLocation: sourceLocation)
            return
        }
        if want != text {
            let a = want.split(separator: "\n", omittingEmptySubsequences: false)
            let b = text.split(separator: "\n", omittingEmptySubsequences: false)
            let first = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
            Issue.record("snapshot \(name).txt differs at line \(first + 1):\n  recorded: \(first < a.count ? String(a[first]) : "<end>")\n  now:      \(first < b.count ? String(b[first]) : "<end>")",
                         sourceLocation: sourceLocation)
        }
    }

    @Test func helpOfEveryCommand() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        var all = [(String, [String])]()
        all.append(("help", ["--help"]))
        all.append(("help-bare", []))
        all.append(("help-unknown", ["frobnicate"]))
        all.append(("version", ["--version"]))
        for c in Self.commands { all.append(("help-\(c)", [c, "--help"])) }
        for (name, args) in all {
            try Self.check(name, Self.render(args, try Tool.run(args, in: dir.path), scratch: dir.path))
        }
    }

    @Test func imageTrainEvalPredictQuantize() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 10)
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let env = ["MLTOOL_CACHE": dir.file("cache"), "MLTOOL_EXTRACTOR": dir.file("tiny.bin")]
        let steps: [(String, [String])] = [
            ("info-tiny", ["info", "tiny.bin"]),
            ("train-images", ["train", "images/"]),
            ("train-images-warm", ["train", "images/", "-o", "again.bin", "--seed", "7", "--holdout", "0.3"]),
            ("train-images-usage", ["train", "images/", "--holdout", "1.5"]),
            ("info-trained", ["info", "model.bin"]),
            ("eval-images", ["eval"]),
            ("eval-images-json", ["eval", "model.bin", "--json", "--top", "1"]),
            ("predict-images", ["predict", "model.bin", "images/red/000.png", "images/blue", "--top", "2"]),
            ("predict-images-json", ["predict", "model.bin", "images/red/001.png", "--json"]),
            ("quantize-int8", ["quantize", "model.bin", "--bits", "8", "--min-elements", "1"]),
            ("quantize-int8-json", ["quantize", "model.bin", "--bits", "8", "--min-elements", "1", "--json", "-o", "q.bin"]),
            ("quantize-pal4", ["quantize", "model.bin", "--bits", "4", "--min-elements", "1", "--max-drop", "50"]),
            ("quantize-pal6-int8", ["quantize", "model.bin", "--bits", "6", "--lut", "int8", "--min-elements", "1", "-o", "model.pal6.bin"]),
            ("quantize-pal6-float", ["quantize", "model.bin", "--bits", "6", "--lut", "float", "--min-elements", "1", "-o", "model.pal6f.bin"]),
            ("info-pal6-int8", ["info", "model.pal6.bin"]),
            ("quantize-lut-usage", ["quantize", "model.bin", "--bits", "6", "--lut", "int4"]),
            ("quantize-lut-per-tensor", ["quantize", "model.bin", "--bits", "6", "--lut", "int8", "--per-tensor"]),
            ("eval-compare", ["eval", "model.bin", "model.int8.bin"]),
            ("export-onnx", ["export", "model.int8.bin", "--to", "onnx", "-o", "model.onnx"]),
            ("quantize-usage", ["quantize", "model.bin"]),
            ("predict-missing", ["predict", "model.bin", "nope.png"]),
        ]
        for (name, args) in steps {
            let result = try Tool.run(args, in: dir.path, env: env)
            try Self.check(name, Self.render(args, result, scratch: dir.path))
            if name == "quantize-int8-json" {
                // The report's size is the written file's (it once left out the paths the file records).
                let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
                #expect(report["fileBytesAfter"] as? Int == (try FileManager.default.attributesOfItem(atPath: dir.file("q.bin"))[.size] as? Int))
            }
        }
    }

    @Test func textTrainEvalPredictQuantize() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let topics: [(String, [String])] = [
            ("cooking", ["flour", "sugar", "oven", "bake", "bread", "butter", "recipe", "dough"]),
            ("football", ["goal", "match", "team", "striker", "referee", "league", "score", "pitch"]),
            ("weather", ["rain", "cloud", "storm", "forecast", "wind", "sunny", "snow", "humid"]),
        ]
        var csv = "label,text\n"
        for i in 0..<12 {
            for (label, words) in topics {
                var rng = SplitMix64(seed: UInt64(i) &* 7919 &+ UInt64(label.utf8.count))
                let picked = (0..<5).map { _ in words[Int(rng.next() % UInt64(words.count))] }
                csv += "\(label),\"The \(picked.joined(separator: " and ")) today, said the report.\"\n"
            }
        }
        try csv.write(toFile: dir.file("texts.csv"), atomically: true, encoding: .utf8)
        let steps: [(String, [String])] = [
            ("train-text", ["train", "texts.csv", "-o", "text.bin", "--min-count", "1"]),
            ("info-text", ["info", "text.bin"]),
            ("eval-text", ["eval", "text.bin"]),
            ("predict-text", ["predict", "text.bin", "--text", "a storm and rain", "--text", "the striker scored", "--top", "2"]),
            ("quantize-text", ["quantize", "text.bin", "--bits", "8", "--min-elements", "1"]),
            ("export-text", ["export", "text.bin", "--to", "onnx", "-o", "text.onnx"]),
        ]
        for (name, args) in steps {
            try Self.check(name, Self.render(args, try Tool.run(args, in: dir.path), scratch: dir.path))
        }
    }
}
