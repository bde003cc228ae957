import Foundation
import MLToolCore
import Testing
@testable import MLToolData

/// A fresh temporary directory for one test.
struct TextTempDir {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "mltool-text-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    @discardableResult
    func file(_ relative: String, _ bytes: [UInt8]) throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: full))
        return full
    }
    @discardableResult
    func file(_ relative: String, _ text: String) throws -> String { try file(relative, Array(text.utf8)) }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The message of the error `body` throws, or "no error".
func message(_ body: () throws -> Any) -> String {
    do { _ = try body(); return "no error" } catch let e as MLToolError { return e.description } catch { return "\(error)" }
}

@Suite struct TextDatasetTests {
    func csv(_ text: String) throws -> TextDataset { try TextDataset.csv(bytes: Array(text.utf8), file: "data.csv") }

    @Test func unterminatedQuoteNamesLineAndColumn() {
        #expect(message { try csv("text,label\nfine,a\nx,b\n\"never closed,a\nmore\n") }
                == "data.csv:4:1: unterminated quote")
        #expect(message { try csv("text,label\nok,\"b\n") } == "data.csv:2:4: unterminated quote")
    }

    @Test func shortAndLongRowsNameTheLine() {
        #expect(message { try csv("text,label\nhello,a\nlonely\n") } == "data.csv:3: 1 field, expected 2")
        #expect(message { try csv("text,label\n\"two\nlines\",a\nx,y,z\n") } == "data.csv:4: 3 fields, expected 2")
    }

    @Test func invalidUTF8GivesTheByteOffset() throws {
        let bytes = Array("text,label\nab".utf8) + [0xFF] + Array("c,x\n".utf8)
        #expect(message { try TextDataset.checkUTF8(bytes, file: "data.csv") }
                == "data.csv:2: invalid UTF-8 at byte offset 13")
        let dir = try TextTempDir(); defer { dir.remove() }
        let path = try dir.file("bad.csv", bytes)
        #expect(message { try TextDataset.table(path) } == "\(path):2: invalid UTF-8 at byte offset 13")
        let doc = try dir.file("t/a/doc.txt", [0x68, 0x69, 0x0A, 0xE2, 0x82])  // "hi\n" + truncated €
        #expect(message { try TextDataset.readDocument(doc) } == "\(doc):2: invalid UTF-8 at byte offset 3")
    }

    @Test(arguments: [
        ([0xC0, 0x80], 0),             // overlong NUL
        ([0x41, 0xED, 0xA0, 0x80], 1), // UTF-16 surrogate
        ([0xF4, 0x90, 0x80, 0x80], 0), // above U+10FFFF
        ([0xE2, 0x28, 0xA1], 0),       // bad continuation
        ([0x61, 0xF0, 0x9F, 0x98], 1), // truncated at the end
    ] as [([UInt8], Int)])
    func utf8ValidatorRejects(bytes: [UInt8], offset: Int) {
        #expect(TextDataset.firstInvalidUTF8(bytes) == offset)
    }

    /// The eight-bytes-at-a-time ASCII skip against the byte-at-a-time path it shortcuts: inputs under 8 bytes never
    /// take it, so the same inputs behind 0…19 ASCII bytes must give the same offset shifted; validity also agrees with
    /// the standard library's UTF-8 validation.
    @Test func utf8ValidatorFastPathMatchesByteLoop() {
        let pieces: [[UInt8]] = [[0x61], [0x41], [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0xC0],
                                 [0x80], [0xED, 0xA0], [0xF4, 0x90], [0xE2, 0x28]]
        var state: UInt64 = 77
        for _ in 0..<3000 {
            var short: [UInt8] = []
            while short.count < 7 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let r = Int(state >> 33) % 30
                let piece = pieces[r < 10 ? r : (r < 20 ? 0 : 1)]
                if short.count + piece.count > 7 { break }
                short += piece
            }
            let expected = TextDataset.firstInvalidUTF8(short)
            #expect((expected == nil) == (String(validating: short, as: UTF8.self) != nil), "\(short)")
            for pad in 0..<20 {
                let padded = [UInt8](repeating: 0x78, count: pad) + short + [UInt8](repeating: 0x79, count: pad % 11)
                #expect(TextDataset.firstInvalidUTF8(padded) == expected.map { $0 + pad }, "\(pad) + \(short)")
            }
        }
    }

    @Test func utf8ValidatorAcceptsValidText() {
        #expect(TextDataset.firstInvalidUTF8(Array("héllo € 😀 日本語 \u{10FFFF}".utf8)) == nil)
    }

    @Test func byteOrderMarkAndCRLFParseRight() throws {
        let text = "\u{FEFF}text,label\r\n\"multi\r\nline, \"\"quoted\"\"\",a\r\nsecond,b\r\n\r\nthird , c \r\n"
        let d = try csv(text)
        #expect(d.items.map(\.text) == ["multi\r\nline, \"quoted\"", "second", "third "])
        #expect(d.items.map(\.label) == ["a", "b", "c"])
        #expect(d.items.map(\.row) == [1, 2, 3])
        #expect(d.items[0].reference == "data.csv#row=1")
        #expect(d.labels == ["a", "b", "c"])
    }

    @Test func aLabelWithOneDocumentFailsPreflight() throws {
        let d = try csv("text,label\none,a\ntwo,a\nthree,b\n")
        #expect(message { try d.preflight() } == "data.csv: every class needs at least 2 documents: b (1 document)")
        let single = try csv("text,label\none,a\ntwo,a\n")
        #expect(message { try single.preflight() } == "data.csv: found only 1 class (a); need at least 2")
    }

    @Test func emptyFileAndHeaderOnlyFile() throws {
        let dir = try TextTempDir(); defer { dir.remove() }
        let empty = try dir.file("empty.csv", [UInt8]())
        #expect(message { try TextDataset.table(empty) } == "\(empty): empty file (0 bytes)")
        #expect(message { try csv("text,label\n") } == "data.csv: no documents: header row only")
        #expect(message { try csv("text,label\r\n\r\n") } == "data.csv: no documents: header row only")
    }

    @Test func missingColumnAndEmptyLabel() {
        #expect(message { try csv("body,label\nx,a\n") } == "data.csv: no column 'text' (columns: body, label)")
        #expect(message { try csv("text,label\nx, \n") } == "data.csv:2:1: empty label")
    }

    @Test func emptyDocumentsAreSkippedAndCounted() throws {
        let d = try csv("text,label\n,a\n  ,a\nreal,b\n\" \n \",b\n")
        #expect(d.skippedEmpty == 3)
        #expect(d.items.map(\.row) == [3])
    }

    @Test func tsvAndJSONLines() throws {
        let dir = try TextTempDir(); defer { dir.remove() }
        let tsv = try dir.file("d.tsv", "label\ttext\nx\thello, world\ny\tbye\n")
        #expect(try TextDataset.table(tsv).items.map(\.text) == ["hello, world", "bye"])
        let jl = try dir.file("d.jsonl", "{\"text\": \"one\", \"label\": \"a\"}\n\n{\"text\": \"two\", \"label\": 7}\n")
        let d = try TextDataset.table(jl)
        #expect(d.items.map(\.label) == ["a", "7"])
        #expect(d.items.map(\.row) == [1, 2])
        let bad = try dir.file("bad.jsonl", "{\"text\": \"one\", \"label\": \"a\"}\n[1, 2]\n")
        #expect(message { try TextDataset.table(bad) } == "\(bad):2: not a JSON object")
        let broken = try dir.file("broken.jsonl", "{\"text\": \"one\", \"label\": \"a\"}\n{\"text\": \n")
        #expect(message { try TextDataset.table(broken) } == "\(broken):2: invalid JSON")
        let noText = try dir.file("notext.jsonl", "{\"body\": \"one\", \"label\": \"a\"}\n")
        #expect(message { try TextDataset.table(noText) } == "\(noText):1: no string field 'text'")
    }

    @Test func folderOfTextFiles() throws {
        let dir = try TextTempDir(); defer { dir.remove() }
        try dir.file("t/spam/b.txt", "win money")
        try dir.file("t/spam/a.txt", "\u{FEFF}free offer")
        try dir.file("t/spam/.hidden.txt", "ignored")
        try dir.file("t/spam/notes.md", "not a document")
        try dir.file("t/ham/x/deep.txt", "lunch at noon")
        try dir.file("t/ham/blank.txt", " \n")
        try dir.file("t/.git/HEAD.txt", "ignored")
        let d = try TextDataset.load(dir.path + "/t")
        #expect(d.labels == ["ham", "spam"])
        #expect(d.items.map(\.text) == ["lunch at noon", "free offer", "win money"])
        #expect(d.items.allSatisfy { $0.row == nil })
        #expect(d.skippedEmpty == 1)
        #expect(TextDataset.looksLikeText(dir.path + "/t"))
    }

    @Test func recordFieldsFindRowsAgain() throws {
        let dir = try TextTempDir(); defer { dir.remove() }
        let path = try dir.file("d.csv", "text,label\n,a\nsecond,b\n")
        let d = try TextDataset.table(path)
        let fields = try TextDataset.recordFields(path)
        #expect(d.items.count == 1)
        #expect(fields[d.items[0].row! - 1].contains(d.items[0].text))
    }

    @Test func taskDetection() throws {
        let dir = try TextTempDir(); defer { dir.remove() }
        #expect(TextDataset.looksLikeText(try dir.file("t.csv", "\u{FEFF}label,text\na,b\n")))
        #expect(!TextDataset.looksLikeText(try dir.file("i.csv", "path,label\na.png,b\n")))
        #expect(TextDataset.looksLikeText(try dir.file("c.csv", "body,label\na,b\n"), textColumn: "body"))
        try dir.file("img/cat/a.png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A])
        try dir.file("img/dog/b.jpg", [0xFF, 0xD8, 0xFF])
        #expect(!TextDataset.looksLikeText(dir.path + "/img"))
    }
}
