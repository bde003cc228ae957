import Foundation
import Testing
import MLToolCore
@testable import MLToolData

/// The limits' checks at their edges (the hostile files themselves are in MLToolCLITests/ResourceLimitTests).
@Suite struct InputLimitTests {
    @Test func tableLinesUpToTheLimitAreReadAndTheFirstLongerOneIsNamed() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let text = "ab,c\n12345678\n\nxyz,123456789\nlast"   // line 2 is 8 bytes, line 4 is 13
        let path = try dir.file("t.csv", text: text)
        #expect(try TableFile.read(path, maxLineBytes: 13) == Array(text.utf8))
        #expect(throws: DataError.lineTooLong(file: path, line: 4, offset: 15, limit: 12)) {
            try TableFile.read(path, maxLineBytes: 12)
        }
        #expect(throws: DataError.lineTooLong(file: path, line: 2, offset: 5, limit: 7)) {
            try TableFile.read(path, maxLineBytes: 7)
        }
        // The last line has no line end; it counts too.
        let unterminated = try dir.file("u.csv", text: "a\n123456")
        #expect(throws: DataError.lineTooLong(file: unterminated, line: 2, offset: 2, limit: 5)) {
            try TableFile.read(unterminated, maxLineBytes: 5)
        }
        #expect(try TableFile.read(unterminated, maxLineBytes: 6).count == 8)
    }

    @Test func aLineAcrossReadChunksIsMeasuredWhole() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        // 3 MiB of one line after a short one: the reader's 1 MiB chunks must not reset the count.
        let bytes = Array("h\n".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 3 << 20) + [0x0A]
        let path = try dir.file("long.csv", bytes)
        #expect(throws: DataError.lineTooLong(file: path, line: 2, offset: 2, limit: 2 << 20)) {
            try TableFile.read(path, maxLineBytes: 2 << 20)
        }
        #expect(try TableFile.read(path, maxLineBytes: 3 << 20) == bytes)
    }

    @Test func jsonDepthIsCountedOutsideStringsOnly() {
        func deep(_ text: String, limit: Int) -> Int? {
            Array(text.utf8).withUnsafeBytes { InputLimits.firstTooDeepJSON($0, limit: limit) }
        }
        #expect(deep("[[1]]", limit: 2) == nil)
        #expect(deep("[[[1]]]", limit: 2) == 2)
        #expect(deep("[{\"a\": [ ]}]", limit: 2) == 7)
        #expect(deep("[\"[[[\", \"\\\"[[[\", [2]]", limit: 2) == nil)   // brackets inside strings, an escaped quote
        #expect(deep("[] [] [[]]", limit: 1) == 7)                    // depth goes back down
        #expect(deep("[\"unterminated [[[", limit: 1) == nil)         // never reads past the end
        #expect(InputLimits.maxJSONDepth == 512)
    }
}
