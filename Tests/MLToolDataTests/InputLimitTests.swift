import Foundation
import MLToolTestSupport
import Testing
import MLToolCore
@testable import MLToolData

/// The limits' checks at their edges (the hostile files themselves are in MLToolCLITests/ResourceLimitTests).
@Suite struct InputLimitTests {
    @Test func tableLinesUpToTheLimitAreReadAndTheFirstLongerOneIsNamed() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
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
        defer { dir.cleanup() }
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

    @Test func wholeFilesOverTheLimitAreRefusedBeforeReading() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let small = try dir.file("doc.txt", text: "0123456789")
        #expect(try ImageDecoder.readFile(small, limit: 10).count == 10)
        #expect(throws: DataError.fileTooLarge(file: small, size: 10, limit: 9)) { try ImageDecoder.readFile(small, limit: 9) }
        // A sparse file past the default limit is refused on its size: no byte of it is read.
        let huge = dir.path + "/huge.txt"
        #expect(FileManager.default.createFile(atPath: huge, contents: nil))
        #expect(truncate(huge, off_t(InputLimits.maxFileBytes) + 1) == 0)
        let started = Date()
        #expect(throws: DataError.fileTooLarge(file: huge, size: InputLimits.maxFileBytes + 1, limit: InputLimits.maxFileBytes)) {
            try TextDataset.readDocument(huge)
        }
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(InputLimits.maxFileBytes == 256 << 20)
    }

    @Test func taggedCorporaAndYOLOLabelsAreReadUnderTheLineLimit() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        // A CoNLL corpus whose third line is one byte over the limit: named by line and offset.
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: InputLimits.maxLineBytes + 1)
        let corpus = try dir.file("c.conll", Array("The\tDET\n\n".utf8) + long + [0x0A])
        #expect(throws: DataError.lineTooLong(file: corpus, line: 3, offset: 9, limit: InputLimits.maxLineBytes)) {
            try TaggedCorpus.load(corpus)
        }
        // A YOLO label file with a long line, in an otherwise valid folder.
        let png = try PNGEncoder.encode(RGBImage(width: 4, height: 4, pixels: [UInt8](repeating: 9, count: 48)))
        _ = try dir.file("yolo/images/a.png", png)
        let labels = try dir.file("yolo/labels/a.txt", Array("0 0.5 0.5 0.2 0.2\n".utf8) + long)
        #expect(throws: DataError.lineTooLong(file: labels, line: 2, offset: 18, limit: InputLimits.maxLineBytes)) {
            try DetectionDataset.yolo(dir.path + "/yolo")
        }
    }

}
