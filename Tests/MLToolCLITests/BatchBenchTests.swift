import Foundation
import MLToolTestSupport
import MLTool
import Testing

/// `mltool bench MODEL --images DIR`: one call per file against one batch call, on the same files.
@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct BatchBenchTests {
    @Test func comparesOneByOneWithABatchCall() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try Make.colourFolders(in: dir.file("images"), perClass: 6)
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let r = try Tool.run(["bench", dir.file("tiny.bin"), "--images", dir.file("images"), "--threads", "1", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let j = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(j["images"] as? Int == 12)
        #expect(j["threads"] as? Int == 1)
        #expect((j["one_by_one_images_per_second"] as? Double ?? 0) > 0)
        #expect((j["batch_images_per_second"] as? Double ?? 0) > 0)

        // A file that is not an image fails the run, naming it.
        try Data("not an image".utf8).write(to: URL(fileURLWithPath: dir.file("images/red/zz.png")))
        let bad = try Tool.run(["bench", dir.file("tiny.bin"), "--images", dir.file("images")])
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("zz.png"), "\(bad.stderr)")
    }
}
