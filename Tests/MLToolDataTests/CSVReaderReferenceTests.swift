import Testing
@testable import MLToolData

/// The byte-at-a-time parser `CSVReader.parse` replaced (runs of plain bytes are now copied at once): the plain
/// reference the fast one must match, records and errors alike.
enum CSVReference {
    static func parse(bytes: [UInt8], file: String, delimiter: UInt8 = UInt8(ascii: ",")) throws -> [CSVReader.Record] {
        let quote = UInt8(ascii: "\""), cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
        var records = [CSVReader.Record]()
        var fields = [String]()
        var field = [UInt8]()
        var i = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var line = 1, lineStart = i
        var recordLine = 1
        var quoted = false        // inside a quoted field
        var wasQuoted = false     // the current field was quoted (so an empty one still counts)
        func column(_ at: Int) -> Int {  // characters from the line start, 1-based
            1 + bytes[lineStart..<at].reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
        }
        func endField() { fields.append(String(decoding: field, as: UTF8.self)); field.removeAll(keepingCapacity: true) }
        func endRecord() {
            endField()
            if !(fields.count == 1 && fields[0].isEmpty && !wasQuoted) {
                records.append(CSVReader.Record(fields: fields, line: recordLine))
            }
            fields.removeAll(keepingCapacity: true)
            wasQuoted = false
        }
        var quoteLine = 0, quoteColumn = 0
        while i < bytes.count {
            let c = bytes[i]
            if quoted {
                if c == quote {
                    if i + 1 < bytes.count, bytes[i + 1] == quote { field.append(quote); i += 2; continue }
                    quoted = false
                    i += 1
                    if i < bytes.count, bytes[i] != delimiter, bytes[i] != cr, bytes[i] != lf {
                        throw DataError.csvSyntax(file: file, line: line, column: column(i),
                                                  message: "unexpected character after closing quote")
                    }
                    continue
                }
                if c == lf { line += 1; lineStart = i + 1 }
                field.append(c)
                i += 1
                continue
            }
            if c == quote && field.isEmpty && !wasQuoted {
                quoted = true; wasQuoted = true
                quoteLine = line; quoteColumn = column(i)
                i += 1
            } else if c == delimiter {
                endField(); wasQuoted = false
                i += 1
            } else if c == cr || c == lf {
                endRecord()
                i += (c == cr && i + 1 < bytes.count && bytes[i + 1] == lf) ? 2 : 1
                line += 1; lineStart = i; recordLine = line
            } else {
                field.append(c)
                i += 1
            }
        }
        if quoted {
            throw DataError.csvSyntax(file: file, line: quoteLine, column: quoteColumn, message: "unterminated quote")
        }
        if !field.isEmpty || !fields.isEmpty || wasQuoted { endRecord() }
        return records
    }
}

@Suite struct CSVReaderReferenceTests {
    /// Random documents over the bytes that steer the state machine (delimiter, quote, CR, LF, a multi-byte
    /// character, plain letters): the fast parser gives the reference's records, or throws the reference's error.
    @Test(arguments: [UInt8(ascii: ","), UInt8(ascii: "\t")])
    func fastParserMatchesReference(delimiter: UInt8) throws {
        let alphabet: [[UInt8]] = [[delimiter], [UInt8(ascii: "\"")], [13], [10], Array("é".utf8), Array("ab".utf8),
                                   Array("x".utf8), Array("hello world".utf8), [0xEF, 0xBB, 0xBF]]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15 &+ UInt64(delimiter)
        func next() -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(truncatingIfNeeded: state >> 33)
        }
        var errors = 0, parsed = 0
        for _ in 0..<3000 {
            let length = next() % 40
            // Mostly balanced documents: quotes are rarer than text so that many parse.
            var bytes: [UInt8] = []
            for _ in 0..<length {
                let r = next() % 20
                bytes += alphabet[r < 9 ? r : (r < 14 ? 5 : (r < 18 ? 7 : 0))]
            }
            let expected = Result { try CSVReference.parse(bytes: bytes, file: "f.csv", delimiter: delimiter) }
            let actual = Result { try CSVReader.parse(bytes: bytes, file: "f.csv", delimiter: delimiter) }
            switch (expected, actual) {
            case (.success(let e), .success(let a)):
                parsed += 1
                #expect(a == e, "\(bytes)")
            case (.failure(let e), .failure(let a)):
                errors += 1
                #expect((a as? DataError) == (e as? DataError), "\(bytes): \(a) vs \(e)")
            default:
                Issue.record("\(bytes): reference \(expected), fast \(actual)")
            }
        }
        #expect(errors > 100 && parsed > 100, "both outcomes exercised: \(parsed) parsed, \(errors) errors")
    }
}
