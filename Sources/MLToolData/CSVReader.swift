/// An RFC 4180 reader for CSV and TSV: quoted fields (which may hold the delimiter, newlines and `""` escaped
/// quotes), a UTF-8 byte-order mark, CRLF or LF line ends. Blank lines are skipped. A quote inside an unquoted field
/// is kept as text (common in the wild, e.g. `5" screen`). Errors name the file, line and column (1-based; the
/// column counts characters).
public enum CSVReader {
    /// One record and the line it starts on.
    public struct Record: Equatable, Sendable {
        public var fields: [String]
        public var line: Int
        public init(fields: [String], line: Int) { self.fields = fields; self.line = line }
    }

    /// A header row and the records below it, each with exactly as many fields as the header.
    public struct Table: Equatable, Sendable {
        public var file: String
        public var header: [String]
        public var rows: [Record]

        /// The index of the column named `name`, or `DataError.csvMissingColumn`.
        public func column(_ name: String) throws -> Int {
            guard let i = header.firstIndex(of: name) else {
                throw DataError.csvMissingColumn(file: file, column: name, available: header)
            }
            return i
        }
    }

    /// Reads a file with a header row; every record must have the header's field count.
    public static func table(path: String, delimiter: UInt8 = UInt8(ascii: ",")) throws -> Table {
        try table(bytes: TableFile.read(path), file: path, delimiter: delimiter)
    }

    /// Parses `bytes` with a header row; `file` names it in errors.
    public static func table(bytes: [UInt8], file: String, delimiter: UInt8 = UInt8(ascii: ",")) throws -> Table {
        var records = try parse(bytes: bytes, file: file, delimiter: delimiter)
        guard !records.isEmpty else { throw DataError.csvSyntax(file: file, line: 1, column: 1, message: "no header row") }
        let header = records.removeFirst().fields.map { $0.trimmingSpaces() }
        for r in records where r.fields.count != header.count {
            throw DataError.csvFieldCount(file: file, line: r.line, expected: header.count, actual: r.fields.count)
        }
        return Table(file: file, header: header, rows: records)
    }

    /// Parses every record of `bytes` (no header handling).
    public static func parse(bytes: [UInt8], file: String, delimiter: UInt8 = UInt8(ascii: ",")) throws -> [Record] {
        try bytes.withUnsafeBufferPointer { try parse(buffer: $0, file: file, delimiter: delimiter) }
    }

    /// The state machine of `parse`; runs of plain bytes are found in a tight loop and copied at once.
    static func parse(buffer b: UnsafeBufferPointer<UInt8>, file: String, delimiter: UInt8) throws -> [Record] {
        let quote = UInt8(ascii: "\""), cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
        let n = b.count
        var records = [Record]()
        var fields = [String]()
        var field = [UInt8]()
        var i = n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF ? 3 : 0
        var line = 1, lineStart = i
        var recordLine = 1
        var quoted = false        // inside a quoted field
        var wasQuoted = false     // the current field was quoted (so an empty one still counts)
        func column(_ at: Int, lineStart: Int) -> Int {  // characters from the line start, 1-based
            1 + b[lineStart..<at].reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
        }
        func endField() { fields.append(String(decoding: field, as: UTF8.self)); field.removeAll(keepingCapacity: true) }
        func endRecord() {
            endField()
            if !(fields.count == 1 && fields[0].isEmpty && !wasQuoted) {
                records.append(Record(fields: fields, line: recordLine))
            }
            fields.removeAll(keepingCapacity: true)
            wasQuoted = false
        }
        /// Appends b[from..<end of the run] to the field, the run ending before the first byte `stop` accepts.
        func appendRun(from: Int, stop: (UInt8) -> Bool) -> Int {
            var j = from &+ 1
            while j < n && !stop(b[j]) { j &+= 1 }
            field.append(contentsOf: UnsafeBufferPointer(rebasing: b[from..<j]))
            return j
        }
        var quoteLine = 0, quoteAt = 0, quoteLineStart = 0
        while i < n {
            let c = b[i]
            if quoted {
                if c == quote {
                    if i + 1 < n, b[i + 1] == quote { field.append(quote); i += 2; continue }
                    quoted = false
                    i += 1
                    if i < n, b[i] != delimiter, b[i] != cr, b[i] != lf {
                        throw DataError.csvSyntax(file: file, line: line, column: column(i, lineStart: lineStart),
                                                  message: "unexpected character after closing quote")
                    }
                    continue
                }
                if c == lf { line += 1; lineStart = i + 1; field.append(c); i += 1; continue }
                i = appendRun(from: i) { $0 == quote || $0 == lf }
                continue
            }
            if c == quote && field.isEmpty && !wasQuoted {
                quoted = true; wasQuoted = true
                quoteLine = line; quoteAt = i; quoteLineStart = lineStart
                i += 1
            } else if c == delimiter {
                endField(); wasQuoted = false
                i += 1
            } else if c == cr || c == lf {
                endRecord()
                i += (c == cr && i + 1 < n && b[i + 1] == lf) ? 2 : 1
                line += 1; lineStart = i; recordLine = line
            } else {
                i = appendRun(from: i) { $0 == delimiter || $0 == cr || $0 == lf || $0 == quote }
            }
        }
        if quoted {
            throw DataError.csvSyntax(file: file, line: quoteLine, column: column(quoteAt, lineStart: quoteLineStart),
                                      message: "unterminated quote")
        }
        if !field.isEmpty || !fields.isEmpty || wasQuoted { endRecord() }
        return records
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
