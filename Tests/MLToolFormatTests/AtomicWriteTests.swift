import Foundation
import MLToolTestSupport
import Testing
import MLToolCore
@testable import MLToolFormat

@Suite struct AtomicWriteTests {
    let dir: String
    init() throws { dir = try TempDir(tag: "format").path }

    func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }
    func entries() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir).sorted() }

    @Test func refusesToOverwriteAnInputByPathHardLinkOrSymlink() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = dir + "/in.mlt"
        try ModelFile.write(TestModels.small(), to: input)
        let before = contents(input)
        try FileManager.default.linkItem(atPath: input, toPath: dir + "/hard.mlt")
        try FileManager.default.createSymbolicLink(atPath: dir + "/soft.mlt", withDestinationPath: input)
        for target in [input, dir + "/hard.mlt", dir + "/soft.mlt", dir + "/./in.mlt"] {
            #expect(throws: FormatError.overwritesInput(file: target, input: input)) {
                try ModelFile.write(TestModels.tiny(), to: target, inputs: [dir + "/other.onnx", input])
            }
            #expect(FormatError.overwritesInput(file: target, input: input).exitStatus == .cannotCreate)
        }
        #expect(contents(input) == before)
        #expect(try entries() == ["hard.mlt", "in.mlt", "soft.mlt"])   // no temporary file left behind
    }

    @Test func replacingAnEarlierOutputIsFine() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = dir + "/out.mlt"
        try ModelFile.write(TestModels.small(), to: out, inputs: [dir + "/in.onnx"])
        try ModelFile.write(TestModels.tiny(), to: out, inputs: [dir + "/in.onnx"])
        #expect(contents(out) == (try ModelFile.serialize(TestModels.tiny())))
        #expect(try entries() == ["out.mlt"])
    }

    @Test func failedWriteLeavesNoTemporaryFileAndTheTargetUntouched() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A directory in the way: rename(2) fails after the temporary file was written.
        try FileManager.default.createDirectory(atPath: dir + "/taken", withIntermediateDirectories: false)
        try "keep".write(toFile: dir + "/taken/file", atomically: false, encoding: .utf8)
        #expect(throws: FormatError.self) { try ModelFile.write(TestModels.small(), to: dir + "/taken") }
        #expect(try entries() == ["taken"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/taken") == ["file"])
        // A missing directory.
        do {
            try ModelFile.write(TestModels.small(), to: dir + "/missing/m.mlt")
            Issue.record("write into a missing directory succeeded")
        } catch let e as FormatError {
            guard case .cannotWrite(dir + "/missing/m.mlt", _) = e else { Issue.record("got \(e)"); return }
            #expect(e.exitStatus == .cannotCreate)
        }
        // An invalid model is refused before anything is written; the existing file stays.
        try ModelFile.write(TestModels.tiny(), to: dir + "/m.mlt")
        var bad = TestModels.small()
        bad.tensors[2].quant = nil
        #expect(throws: FormatError.self) { try ModelFile.write(bad, to: dir + "/m.mlt") }
        #expect(contents(dir + "/m.mlt") == (try ModelFile.serialize(TestModels.tiny())))
        #expect(try entries() == ["m.mlt", "taken"])
    }

    @Test func damagedFilesOnDiskAreRejected() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/m.mlt"
        try ModelFile.write(TestModels.small(), to: path)
        let fh = try #require(FileHandle(forUpdatingAtPath: path))
        try fh.truncate(atOffset: 1000)
        try fh.close()
        #expect(throws: FormatError.truncated(file: path, expected: 1040, actual: 1000)) { try ModelFile.read(path: path) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        #expect(throws: FormatError.truncated(file: path, expected: 208, actual: 0)) { try ModelFile.read(path: path) }
        #expect(throws: FormatError.cannotOpen(file: dir, reason: "not a regular file")) { try ModelFile.read(path: dir) }
    }

    @Test func missingFileIsNoInput() {
        do {
            _ = try ModelFile.read(path: dir + "/nope.mlt")
            Issue.record("read of a missing file succeeded")
        } catch let e as FormatError {
            guard case .cannotOpen = e else { Issue.record("got \(e)"); return }
            #expect(e.exitStatus == .noInput)
        } catch { Issue.record("got \(error)") }
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A killed writer's temporary file (`.<name>.tmp-<pid>@<host>-XXXXXX`, this host, pid no longer alive; or the
    /// older `.<name>.tmp-<pid>-XXXXXX`) is removed by the next write of the same name; a live process's temporary
    /// file, another host's (a shared cache: its pid means nothing here) and other names' files are left alone.
    @Test func nextWriteRemovesADeadWritersTemporaryFile() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var dead: pid_t = 4_000_000
        while kill(dead, 0) == 0 || errno != ESRCH { dead -= 1 }
        let live = getppid()
        let host = AtomicReplace.host
        let names = [".m.mlt.tmp-\(dead)-AbC123", ".m.mlt.tmp-\(dead)@\(host)-DeF456", ".m.mlt.tmp-\(dead)@other-node-7-GhI789",
                     ".m.mlt.tmp-\(live)-XyZ789", ".m.mlt.tmp-\(live)@\(host)-JkL012", ".other.mlt.tmp-\(dead)-QqQ000", "m.mlt.tmp-\(dead)-x"]
        for n in names { try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir + "/" + n)) }
        try ModelFile.write(TestModels.tiny(), to: dir + "/m.mlt")
        #expect(try entries() == ([".m.mlt.tmp-\(dead)@other-node-7-GhI789", ".m.mlt.tmp-\(live)-XyZ789", ".m.mlt.tmp-\(live)@\(host)-JkL012",
                                   ".other.mlt.tmp-\(dead)-QqQ000", "m.mlt", "m.mlt.tmp-\(dead)-x"]).sorted())
        #expect(contents(dir + "/m.mlt") == (try ModelFile.serialize(TestModels.tiny())))
    }

    /// An existing directory is never replaced: exit 73 with the reason, and its content stays.
    @Test func anExistingDirectoryIsRefused() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/m.mlpackage", withIntermediateDirectories: false)
        #expect(throws: FormatError.cannotWrite(file: dir + "/m.mlpackage",
                                                reason: "it is a directory (mltool writes single files and never replaces a directory)")) {
            try AtomicFile.write([1, 2, 3], to: dir + "/m.mlpackage")
        }
        #expect(try entries() == ["m.mlpackage"])
    }
}
