import Foundation
import MLToolFuzzEntries
import XCTest

/// Replays every committed fuzz input through the entry the fuzzer ran it on (`FuzzTarget.all`): the seeds
/// (`Tests/Fixtures/fuzz/<target>/seeds/`, real files each reader accepts) and every crash, leak, hang or
/// sanitizer report the fuzzer found (`.../regressions/`, minimized; each is listed in docs/SECURITY.md, "Fuzzing").
/// A regression that traps again ends this test process; one that hangs runs into the time asserted here.
final class FuzzRegressionTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fuzz").path
    static let dictionaries = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fuzz/dicts").path

    static func inputs(_ target: String, _ kind: String) -> [(name: String, bytes: [UInt8])] {
        let dir = fixtures + "/" + target + "/" + kind
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        return names.compactMap { name in
            FileManager.default.contents(atPath: dir + "/" + name).map { (kind + "/" + name, [UInt8]($0)) }
        }
    }

    /// Every target has seeds and its dictionary; every folder of fixtures belongs to a target.
    func testEveryTargetHasSeedsAndADictionary() throws {
        XCTAssertEqual(Set(FuzzTarget.all.map(\.name)).count, FuzzTarget.all.count, "target names are unique")
        for t in FuzzTarget.all {
            XCTAssertFalse(Self.inputs(t.name, "seeds").isEmpty, "\(t.name): no seeds in Tests/Fixtures/fuzz/\(t.name)/seeds")
            XCTAssertTrue(FileManager.default.fileExists(atPath: Self.dictionaries + "/" + t.dictionary + ".dict"),
                          "\(t.name): no fuzz/dicts/\(t.dictionary).dict")
        }
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures).filter { !$0.hasPrefix(".") }
        XCTAssertEqual(Set(folders), Set(FuzzTarget.all.map(\.name)), "Tests/Fixtures/fuzz holds one folder per target")
    }

    /// Each target's seeds reach its reader: at least one is read without an error (an entry that refuses every
    /// input, e.g. a broken temporary file, would fuzz nothing).
    func testSeedsReachTheReaders() {
        for t in FuzzTarget.all {
            let seeds = Self.inputs(t.name, "seeds")
            let accepted = seeds.filter { t.run($0.bytes) }.map(\.name)
            XCTAssertFalse(accepted.isEmpty, "\(t.name): none of \(seeds.count) seeds is read without an error")
        }
    }

    /// Every regression input the fuzzer found runs to an answer (read or refused with an error), within time.
    func testRegressionsEndInAnAnswer() {
        for t in FuzzTarget.all {
            for input in Self.inputs(t.name, "regressions") {
                let start = Date()
                _ = t.run(input.bytes)
                XCTAssertLessThan(Date().timeIntervalSince(start), 5, "\(t.name) \(input.name) takes too long")
            }
        }
    }

    /// The native-model entry's checksum repair makes a mutated file fail for its content, not its checksums.
    func testChecksumRepairRestoresAValidFile() throws {
        let seed = try XCTUnwrap(Self.inputs("native-model", "seeds").first)
        var damaged = seed.bytes
        damaged[120] ^= 0xFF                      // the header checksum
        damaged[damaged.count - 1] ^= 0xFF        // the file checksum
        XCTAssertNotEqual(damaged, seed.bytes)
        XCTAssertEqual(FuzzEntries.withChecksumsFixed(damaged), seed.bytes)
    }
}
