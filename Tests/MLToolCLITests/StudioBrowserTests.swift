import Foundation
import MLTool
import MLToolTestSupport
import Testing

/// `mltool studio` in a real browser: headless Chromium (Debian's `chromium`) driven over the DevTools protocol by
/// Tests/Fixtures/studio/drive_studio.py (standard library only) opens `mltool studio` (run with a HOME and TMPDIR of
/// its own, which must stay empty) on a temporary project holding a Fashion-MNIST subset and a text CSV, then: pick the data, Train, watch the curve, pick a photo, Quantize, compare
/// the quantized model with the trained one on that photo, Export ONNX, download; then train the text CSV and try a
/// sentence. Set MLTOOL_STUDIO_SCREENSHOTS=DIR to keep one screenshot per screen (docs/ holds them).
@Suite(.serialized)
struct StudioBrowserTests {
    /// The first `n` training images of each class of datasets/fashion-mnist-small, copied into `project`/fashion.
    static func fashion(into project: String, perClass n: Int) throws -> String? {
        let source = SharedDatasets.repository.appendingPathComponent("datasets/fashion-mnist-small/train").path
        guard let labels = try? FileManager.default.contentsOfDirectory(atPath: source).sorted(), labels.count == 10 else { return nil }
        for label in labels {
            let dir = project + "/fashion/" + label
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for f in try FileManager.default.contentsOfDirectory(atPath: source + "/" + label).sorted().prefix(n) {
                try FileManager.default.copyItem(atPath: source + "/" + label + "/" + f, toPath: dir + "/" + f)
            }
        }
        return try FileManager.default.contentsOfDirectory(atPath: source + "/" + labels[0]).sorted().last.map { source + "/" + labels[0] + "/" + $0 }
    }

    /// The address `mltool studio` prints on its standard output ("mltool: studio on URL"), or nil if it exits first.
    static func address(_ pipe: Pipe) -> String? {
        var text = ""
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            text += String(decoding: chunk, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("mltool: studio on ") }) {
                return String(line.dropFirst("mltool: studio on ".count))
            }
        }
        return nil
    }

    @Test func trainTryQuantizeExportInTenClicks() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let project = dir.file("project")
        try FileManager.default.createDirectory(atPath: project + "/downloads", withIntermediateDirectories: true)
        guard let photo = try Self.fashion(into: project, perClass: 20) else {
            return Oracles.missing("datasets/fashion-mnist-small (make test builds it: datasets/fashion-mnist.sh --small)")
        }
        guard BundledModel.extractor.locate() != nil else { return Oracles.missing("models/efficientnet-lite0.bin (make models)") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") else { return Oracles.missing("chromium (apt-get install -y chromium)") }
        var csv = "label,text\n"
        for i in 0..<12 { csv += "cooking,\"bake bread \(i) in the oven\"\nweather,\"rain and wind \(i) today\"\n" }
        try csv.write(toFile: project + "/texts.csv", atomically: true, encoding: .utf8)
        // The photo is the user's own, picked from outside the project: it is uploaded, not read by the studio.
        try FileManager.default.copyItem(atPath: photo, toPath: dir.file("photo.png"))

        // `mltool studio` as a user runs it, with a HOME and a TMPDIR of its own: both must stay empty (nothing written
        // outside the project: no feature cache in ~/.cache, no temporary file).
        guard let mltool = Tool.path else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let home = dir.file("home"), tmp = dir.file("tmp")
        for d in [home, tmp] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        let studio = Process()
        studio.executableURL = URL(fileURLWithPath: mltool)
        studio.arguments = ["studio", project, "--port", "0"]
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home; environment["TMPDIR"] = tmp
        environment["MLTOOL_CACHE"] = nil; environment["XDG_CACHE_HOME"] = nil
        studio.environment = environment
        let announced = Pipe()
        studio.standardOutput = announced
        studio.standardError = FileHandle.nullDevice
        try studio.run()
        defer { if studio.isRunning { studio.terminate(); studio.waitUntilExit() } }
        let address = try #require(Self.address(announced), "mltool studio printed no address")
        let driver = SharedDatasets.repository.appendingPathComponent("Tests/Fixtures/studio/drive_studio.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", driver, address, dir.file("photo.png"), "fashion", project + "/downloads"]
            + (ProcessInfo.processInfo.environment["MLTOOL_STUDIO_SCREENSHOTS"].map { [$0] } ?? [])
        let out = Pipe()
        process.standardOutput = out
        let started = Date()
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(started)
        let result = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        if let missing = result["missing"] as? String { return Oracles.missing(missing) }
        #expect(result["error"] is NSNull, "\(result)")
        // ≤ 10 clicks from the open page to a trained, tried, compared and exported classifier (measured: 7).
        let clicks = result["clicksToExport"] as? Int ?? 99
        #expect(clicks <= 10, "\(clicks) clicks: \(result)")
        #expect(result["bars"] as? Int == 10)
        // The curve was seen to grow at least twice while training ran.
        let curve = result["curve"] as? [Int] ?? []
        #expect(curve.count >= 2, "curve point counts seen: \(curve)")
        let predictions = result["predictions"] as? [String] ?? []
        #expect(predictions.count == 3 && predictions.allSatisfy { $0.contains("%") }, "\(predictions)")
        #expect((result["quantize"] as? String)?.isEmpty == false, "\(result)")
        // The comparison: the quantized model's top 3 beside the trained model's, on the same photo.
        let comparison = result["comparison"] as? [Any] ?? []
        let compared = result["compared"] as? String ?? ""
        #expect(compared.hasPrefix("models/") && compared.contains(".int8"), "\(result)")
        #expect(comparison.first as? String == compared, "\(comparison)")
        let theirs = comparison.dropFirst().first as? [String] ?? [], ours = comparison.last as? [String] ?? []
        #expect(theirs.count == 3 && theirs.allSatisfy { $0.contains("%") } && ours == predictions, "\(comparison)")
        #expect((result["downloaded"] as? [String]) == ["fashion.onnx"], "\(result)")
        #expect(FileManager.default.fileExists(atPath: project + "/models/fashion.onnx"))
        // Then the text CSV, trained with the form's defaults and tried on a sentence: its top label first.
        #expect(result["textRun"] as? String == "finished", "\(result)")
        let text = result["textPredictions"] as? [String] ?? []
        #expect(text.count == 2 && text.first?.hasPrefix("weather") == true, "\(text)")
        studio.terminate()
        studio.waitUntilExit()
        let outside = [home, tmp].flatMap { d in
            (FileManager.default.enumerator(atPath: d)?.allObjects.compactMap { $0 as? String } ?? []).map { d + "/" + $0 }
        }
        #expect(outside.isEmpty, "mltool studio wrote outside the project: \(outside)")
        print("StudioBrowserTests: \(clicks) clicks, curve \(curve), \(String(format: "%.1f", seconds)) s")
    }
}
