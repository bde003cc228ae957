import Foundation
import Testing
import MLToolCore

/// The paths a model file records (docs/FORMAT.md, "Paths"): relative to the file's folder, never absolute.
@Suite struct RecordedPathTests {
    @Test func relativePathsClimbAndDescend() {
        #expect(RecordedPath.absolute("a/./b/../c", base: "/x/y") == "/x/y/a/c")
        #expect(RecordedPath.absolute("/a//b/", base: "/ignored") == "/a/b")
        #expect(RecordedPath.absolute("../../..", base: "/x") == "/")
        #expect(RecordedPath.relative("/data/photos", from: "/data/models") == "../photos")
        #expect(RecordedPath.relative("/data/models/m.bin", from: "/data/models") == "m.bin")
        #expect(RecordedPath.relative("/data", from: "/data") == ".")
        #expect(RecordedPath.relative("/", from: "/a/b") == "../..")
        #expect(RecordedPath.relative("/ab/c", from: "/a") == "../ab/c")   // components, not characters
        #expect(RecordedPath.directory(of: "/data/models/m.bin") == "/data/models")
    }

    func metadata() -> ModelMetadata {
        var md = ModelMetadata(task: .imageClassifier, provenance: Provenance(
            sources: [.init(path: "/srv/me/extractor.bin", sha256: "ab")], seed: 7,
            command: "mltool train /srv/me/data/photos --test /srv/me/data/test -o m.bin"))
        md.split = SplitManifest(root: "/srv/me/data/test", holdout: [
            .init(path: "cat/1.jpg", label: "cat", sha256: "01"), .init(path: "/srv/me/elsewhere/2.jpg", label: "dog", sha256: "02"),
        ], trainCount: 10, validationCount: 2, seed: 7)
        return md
    }

    @Test func aWrittenFileHoldsNoAbsolutePathAndReadsBackTheSameFiles() throws {
        let md = metadata()
        let file = "/srv/me/models/m.bin"
        let recorded = md.recordingPaths(forFileAt: file, policy: .relative)
        #expect(recorded.provenance.sources.map(\.path) == ["../extractor.bin"])
        #expect(recorded.split?.root == "../data/test")
        #expect(recorded.split?.holdout.map(\.path) == ["cat/1.jpg", "../../elsewhere/2.jpg"])
        #expect(recorded.provenance.command == "mltool train ../data/photos --test ../data/test -o m.bin")
        let encoded = String(decoding: try JSONEncoder().encode(recorded), as: UTF8.self)
        #expect(!encoded.contains("\"/") && !encoded.contains(" /"), "\(encoded)")
        // Read back at the same place: the same files. Moved with its data: the new place's files.
        let read = recorded.resolvingPaths(forFileAt: file)
        #expect(read.provenance.sources.map(\.path) == ["/srv/me/extractor.bin"])
        #expect(read.split?.root == "/srv/me/data/test")
        #expect(recorded.resolvingPaths(forFileAt: "/mnt/copy/models/m.bin").split?.root == "/mnt/copy/data/test")
        // Written again elsewhere (quantize to another folder): relative to the new folder.
        #expect(read.recordingPaths(forFileAt: "/srv/me/data/q.bin", policy: .relative).split?.root == "test")
    }

    @Test func noProvenanceKeepsOnlyVersionSeedAndHoldoutInsideItsFolder() {
        let recorded = metadata().recordingPaths(forFileAt: "/srv/me/models/m.bin", policy: .none)
        #expect(recorded.provenance.sources.isEmpty && recorded.provenance.command == nil)
        #expect(recorded.provenance.seed == 7 && recorded.provenance.toolVersion == MLToolInfo.version)
        #expect(recorded.split?.root == nil)
        #expect(recorded.split?.holdout.allSatisfy { !$0.path.hasPrefix("/") } == true)
        // Exports: file names only, or nothing.
        let md = metadata()
        #expect(md.provenance.exported(.relative).sources.map(\.path) == ["extractor.bin"])
        #expect(md.provenance.exported(.relative).command == "mltool train photos --test test -o m.bin")
        #expect(md.provenance.exported(.none).sources.isEmpty && md.provenance.exported(.none).command == nil)
    }
}
