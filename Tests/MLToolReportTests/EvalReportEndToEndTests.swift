import Foundation
import MLToolCore
import MLToolData
import Testing

/// `mltool train` on a tiny noise data set (so the holdout has mistakes), then `mltool eval --report`, as a user
/// would run them. Needs MLTOOL_BIN (set by `make test`) and models/efficientnet-lite0.bin; skips loudly otherwise.
@Suite struct EvalReportEndToEndTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
    static let extractor = root.appendingPathComponent("models/efficientnet-lite0.bin").path
    static let binary: String? = {
        guard let bin = ProcessInfo.processInfo.environment["MLTOOL_BIN"], FileManager.default.isExecutableFile(atPath: bin) else {
            print("EvalReportEndToEndTests: SKIPPED: MLTOOL_BIN is not set (make test sets it)")
            return nil
        }
        guard FileManager.default.fileExists(atPath: extractor) else {
            print("EvalReportEndToEndTests: SKIPPED: \(extractor) is missing (make models)")
            return nil
        }
        return bin
    }()

    @discardableResult
    static func run(_ args: [String], in dir: URL) throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try #require(binary))
        p.arguments = args
        p.currentDirectoryURL = dir
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let data = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(.enabled(if: binary != nil, "needs MLTOOL_BIN and models/efficientnet-lite0.bin"))
    func trainThenEvalWritesASelfContainedReport() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mltool-e2e-report-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        var rng = SplitMix64(seed: 11)
        for label in ["red <&>", "green", "blue"] {
            let folder = dir.appendingPathComponent("data/\(label)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for i in 0..<8 {
                let px = (0..<(40 * 30 * 3)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                let png = try PNGEncoder.encode(RGBImage(width: 40, height: 30, pixels: px))
                try Data(png).write(to: folder.appendingPathComponent("\(i).png"))
            }
        }
        let train = try Self.run(["train", "data", "-o", "model.bin", "--holdout", "0.5", "--validation", "none",
                                  "--extractor", Self.extractor, "--quiet"], in: dir)
        try #require(train.status == 0, "train failed: \(train.stderr)")
        let model = try Data(contentsOf: dir.appendingPathComponent("model.bin"))

        let eval = try Self.run(["eval", "--report", "report.html", "--quiet"], in: dir)
        try #require(eval.status == 0, "eval failed: \(eval.stderr)")
        let html = try String(contentsOf: dir.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(html.contains("red &lt;&amp;&gt;") && !html.contains("red <&>"))
        #expect(html.components(separatedBy: "<rect class=\"cell\"").count - 1 == 9)
        // Noise cannot be learnt: the holdout has mistakes, each shown as an embedded ≤ 96 px thumbnail.
        let uris = html.components(separatedBy: "src=\"data:image/png;base64,").count - 1
        #expect(uris > 0 && uris <= 24)
        #expect(!html.contains("http://") && !html.contains("https://"))

        // The report never replaces an input.
        let clobber = try Self.run(["eval", "model.bin", "--report", "model.bin", "--quiet"], in: dir)
        #expect(clobber.status != 0 && clobber.stderr.contains("model.bin"))
        #expect(try Data(contentsOf: dir.appendingPathComponent("model.bin")) == model)
    }
}
