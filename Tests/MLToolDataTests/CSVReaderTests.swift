import Testing
@testable import MLToolData

@Suite struct CSVReaderTests {
    private func parse(_ text: String, _ delimiter: Character = ",") throws -> [[String]] {
        try CSVReader.parse(bytes: Array(text.utf8), file: "data.csv", delimiter: delimiter.asciiValue!).map(\.fields)
    }

    @Test func quotingEscapesAndNewlines() throws {
        let text = "path,label\n\"a,b.jpg\",\"say \"\"hi\"\"\"\n\"two\nlines.png\",x\n,\"\"\n5\" screen.jpg,y\n"
        #expect(try parse(text) == [["path", "label"], ["a,b.jpg", "say \"hi\""], ["two\nlines.png", "x"], ["", ""],
                                    ["5\" screen.jpg", "y"]])
    }

    @Test func bomCRLFAndBlankLines() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("path,label\r\nä.jpg,cat\r\n\r\nb.jpg,dog".utf8)
        let records = try CSVReader.parse(bytes: bytes, file: "data.csv")
        #expect(records.map(\.fields) == [["path", "label"], ["ä.jpg", "cat"], ["b.jpg", "dog"]])
        #expect(records.map(\.line) == [1, 2, 4])
        #expect(try parse("a\tb\n\"x\ty\"\tz\n", "\t") == [["a", "b"], ["x\ty", "z"]])
    }

    @Test func lineNumbersCountQuotedNewlines() throws {
        let records = try CSVReader.parse(bytes: Array("h\n\"a\nb\nc\"\nd\n".utf8), file: "data.csv")
        #expect(records.map(\.line) == [1, 2, 5])
    }

    @Test func unterminatedQuoteNamesLineAndColumn() {
        let text = "path,label\n" + String(repeating: "a.jpg,x\n", count: 10) + "b.jpg,\"cat\n"
        #expect(throws: DataError.csvSyntax(file: "data.csv", line: 12, column: 7, message: "unterminated quote")) {
            try parse(text)
        }
        #expect(DataError.csvSyntax(file: "data.csv", line: 12, column: 7, message: "unterminated quote").description
                == "data.csv:12:7: unterminated quote")
        #expect(throws: DataError.csvSyntax(file: "data.csv", line: 1, column: 4,
                                            message: "unexpected character after closing quote")) {
            try parse("\"a\"b,c\n")
        }
    }

    @Test func shortAndLongRowsNameTheLine() {
        #expect(throws: DataError.csvFieldCount(file: "data.csv", line: 3, expected: 2, actual: 1)) {
            try CSVReader.table(bytes: Array("path,label\na.jpg,x\nb.jpg\n".utf8), file: "data.csv")
        }
        #expect(throws: DataError.csvFieldCount(file: "data.csv", line: 2, expected: 2, actual: 3)) {
            try CSVReader.table(bytes: Array("path,label\na.jpg,x,y\n".utf8), file: "data.csv")
        }
        #expect(DataError.csvFieldCount(file: "data.csv", line: 3, expected: 2, actual: 1).description
                == "data.csv:3: 1 field, expected 2")
    }

    @Test func missingColumn() throws {
        let t = try CSVReader.table(bytes: Array("file,class\n".utf8), file: "d.csv")
        #expect(throws: DataError.csvMissingColumn(file: "d.csv", column: "path", available: ["file", "class"])) {
            try t.column("path")
        }
        #expect(try t.column("class") == 1)
    }
}
