import Foundation
import MLToolCore
import MLToolData
import Testing
@testable import MLToolEval

/// Renders reports in headless Chromium (Debian `chromium`) and checks, as a person would, that a page came out:
/// a screenshot of the expected size that is not blank. Skipped, loudly, when no Chromium is installed.
/// Set MLTOOL_REPORT_SCREENSHOTS=DIR to keep the pages and screenshots for a look.
@Suite struct ChromiumRenderTests {
    static let chromium: String? = {
        let candidates = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        for name in candidates {
            for dir in dirs where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") { return "\(dir)/\(name)" }
        }
        print("ChromiumRenderTests: SKIPPED: no chromium on PATH (Debian: apt-get install -y chromium)")
        return nil
    }()

    /// Runs Chromium on `html` and returns the decoded screenshot.
    static func screenshot(_ html: String, name: String, width: Int, height: Int) throws -> RGBImage {
        let chromium = try #require(Self.chromium)
        let keep = ProcessInfo.processInfo.environment["MLTOOL_REPORT_SCREENSHOTS"]
        let dir = keep.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("mltool-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { if keep == nil { try? FileManager.default.removeItem(at: dir) } }
        let page = dir.appendingPathComponent("\(name).html"), shot = dir.appendingPathComponent("\(name).png")
        try? FileManager.default.removeItem(at: shot)
        try html.write(to: page, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: chromium)
        p.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-extensions",
                       "--user-data-dir=\(dir.appendingPathComponent("profile-\(name)").path)",
                       "--screenshot=\(shot.path)", "--window-size=\(width),\(height)", page.absoluteString]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(120)
        while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        if p.isRunning { p.terminate(); Issue.record("chromium did not finish within 120 s") }
        p.waitUntilExit()
        #expect(FileManager.default.fileExists(atPath: shot.path), "chromium wrote no screenshot (exit \(p.terminationStatus))")
        return try ImageDecoder.decode(path: shot.path)
    }

    /// Distinct colours (quantised to 4 bits a channel) and the luminance variance.
    static func stats(_ image: RGBImage, rows: Range<Int>) -> (colors: Int, variance: Double) {
        var seen = Set<Int>()
        var sum = 0.0, sumSq = 0.0, n = 0.0
        for y in rows {
            for x in 0..<image.width {
                let (r, g, b) = image.pixel(x: x, y: y)
                seen.insert(Int(r >> 4) << 8 | Int(g >> 4) << 4 | Int(b >> 4))
                let l = 0.2126 * Double(r) + 0.7152 * Double(g) + 0.0722 * Double(b)
                sum += l; sumSq += l * l; n += 1
            }
        }
        let mean = sum / n
        return (seen.count, sumSq / n - mean * mean)
    }

    @Test(.enabled(if: chromium != nil, "chromium not installed (apt-get install -y chromium)"),
          arguments: [(10, false), (36, false), (6, true), (120, false)])
    func reportRenders(classes: Int, compare: Bool) throws {
        let html = try ReportFixture.report(k: classes, compare: compare).html()
        let image = try Self.screenshot(html, name: "report-\(classes)\(compare ? "-compare" : "")", width: 1200, height: 2000)
        #expect(image.width == 1200 && image.height == 2000)
        // Not blank anywhere: the header band, the matrix region and the bottom of the page all have content.
        for band in [0..<400, 400..<1200, 1200..<2000] {
            let s = Self.stats(image, rows: band)
            #expect(s.colors >= 8, "rows \(band): only \(s.colors) colours")
            #expect(s.variance > 50, "rows \(band): luminance variance \(s.variance)")
        }
        // The confusion matrix's blue diagonal is there: pixels close to the darkest diagonal colour.
        let blue = (0..<image.height).reduce(0) { acc, y in
            acc + (0..<image.width).filter { x in
                let (r, g, b) = image.pixel(x: x, y: y)
                return b > 110 && r < 60 && g < 100
            }.count
        }
        #expect(blue > 200, "no dark-blue diagonal cells found (\(blue) pixels)")
    }

    @Test(.enabled(if: chromium != nil, "chromium not installed (apt-get install -y chromium)"))
    func blankPageIsDetectedAsBlank() throws {
        // The checks above can fail: an empty page has one colour and no variance.
        let image = try Self.screenshot("<!DOCTYPE html><html><body></body></html>", name: "blank", width: 400, height: 300)
        #expect(image.width == 400 && image.height == 300)
        let s = Self.stats(image, rows: 0..<300)
        #expect(s.colors == 1 && s.variance < 1)
    }
}
