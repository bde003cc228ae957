import Foundation
import MLToolCore

/// One labelled document.
public struct TextItem: Hashable, Sendable {
    public var text: String
    public var label: String
    /// The file it came from: the document itself (folders) or the table holding it (CSV, TSV, JSON Lines).
    public var path: String
    /// For tables, the 1-based record number (records after the header; blank lines do not count); nil for files.
    public var row: Int?

    public init(text: String, label: String, path: String, row: Int? = nil) {
        self.text = text; self.label = label; self.path = path; self.row = row
    }

    /// `path`, or `path#row=N` for a table record: how messages and split manifests name the item.
    public var reference: String { row.map { "\(path)#row=\($0)" } ?? path }
}

/// A labelled text collection: a folder whose immediate subfolders are the labels (one UTF-8 `.txt` document per
/// file), or a table with a text and a label column: CSV (RFC 4180), TSV (`.tsv`, `.tab`) or JSON Lines
/// (`.jsonl`, `.ndjson`: one object per line). Every file is checked to be UTF-8 (errors give the byte offset);
/// documents that are empty or only white space are skipped and counted.
public struct TextDataset: Sendable {
    /// The folder or table it came from, for messages.
    public var source: String
    /// Every class found, sorted (for folders including classes with no documents).
    public var labels: [String]
    /// Folders: sorted by label, then path; tables: in file order.
    public var items: [TextItem]
    /// Documents skipped because they held no text.
    public var skippedEmpty: Int

    public init(source: String, labels: [String], items: [TextItem], skippedEmpty: Int = 0) {
        self.source = source; self.labels = labels; self.items = items; self.skippedEmpty = skippedEmpty
    }

    /// A folder (`folder(_:)`) or a table (`table(_:textColumn:labelColumn:)`).
    public static func load(_ path: String, textColumn: String = "text", labelColumn: String = "label") throws -> TextDataset {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw DataError.cannotRead(file: path, reason: "No such file or directory")
        }
        return isDirectory.boolValue ? try folder(path) : try table(path, textColumn: textColumn, labelColumn: labelColumn)
    }

    /// A label-folder tree: every `.txt` file below an immediate subfolder of `root` (at any depth) is one
    /// document of that label. Hidden files and folders are ignored; the walk is sorted.
    public static func folder(_ root: String) throws -> TextDataset {
        var labels = [String](), items = [TextItem]()
        var skipped = 0
        for name in try DirectoryWalk.listing(root) where DirectoryWalk.isDirectory(root + "/" + name) {
            labels.append(name)
            for file in try DirectoryWalk.files(under: root + "/" + name, depth: 0) where isTextFile(file) {
                let text = try readDocument(file)
                if isBlank(text) { skipped += 1; continue }
                items.append(TextItem(text: text, label: name, path: file))
            }
        }
        return TextDataset(source: root, labels: labels, items: items, skippedEmpty: skipped)
    }

    /// A CSV, TSV or JSON Lines file (by extension; CSV otherwise) with `textColumn` and `labelColumn`.
    public static func table(_ path: String, textColumn: String = "text", labelColumn: String = "label") throws -> TextDataset {
        let bytes = try TableFile.read(path)
        guard !bytes.isEmpty else { throw DataError.emptyFile(file: path) }
        try checkUTF8(bytes, file: path)
        let ext = (path as NSString).pathExtension.lowercased()
        if ext == "jsonl" || ext == "ndjson" {
            return try jsonLines(bytes: bytes, file: path, textColumn: textColumn, labelColumn: labelColumn)
        }
        let delimiter = ext == "tsv" || ext == "tab" ? UInt8(ascii: "\t") : UInt8(ascii: ",")
        return try csv(bytes: bytes, file: path, textColumn: textColumn, labelColumn: labelColumn, delimiter: delimiter)
    }

    /// Parses CSV/TSV `bytes` (already checked to be UTF-8); `file` names it in messages and items.
    public static func csv(bytes: [UInt8], file: String, textColumn: String = "text", labelColumn: String = "label",
                           delimiter: UInt8 = UInt8(ascii: ",")) throws -> TextDataset {
        let table = try CSVReader.table(bytes: bytes, file: file, delimiter: delimiter)
        let tc = try table.column(textColumn), lc = try table.column(labelColumn)
        guard !table.rows.isEmpty else { throw TextError.noDocuments(source: file, reason: "header row only") }
        var items = [TextItem](), skipped = 0
        for (i, record) in table.rows.enumerated() {
            let label = record.fields[lc].trimmingSpaces()
            guard !label.isEmpty else {
                throw DataError.csvSyntax(file: file, line: record.line, column: 1, message: "empty \(labelColumn)")
            }
            let text = record.fields[tc]
            if isBlank(text) { skipped += 1; continue }
            items.append(TextItem(text: text, label: label, path: file, row: i + 1))
        }
        return TextDataset(source: file, labels: Array(Set(items.map(\.label))).sorted(), items: items,
                           skippedEmpty: skipped)
    }

    /// Parses JSON Lines `bytes`: one object per non-blank line with a string `textColumn` and a string or number
    /// `labelColumn`.
    public static func jsonLines(bytes: [UInt8], file: String, textColumn: String = "text",
                                 labelColumn: String = "label") throws -> TextDataset {
        var items = [TextItem](), skipped = 0, row = 0
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0, line = 1
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            defer { start = end + 1; line += 1 }
            let slice = bytes[start..<end]
            guard slice.contains(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0D) }) else { continue }
            row += 1
            guard let object = try? JSONSerialization.jsonObject(with: Data(slice), options: [.fragmentsAllowed]) else {
                throw TextError.jsonLine(file: file, line: line, message: "invalid JSON")
            }
            guard let dict = object as? [String: Any] else {
                throw TextError.jsonLine(file: file, line: line, message: "not a JSON object")
            }
            guard let text = dict[textColumn] as? String else {
                throw TextError.jsonLine(file: file, line: line, message: "no string field '\(textColumn)'")
            }
            let label: String
            switch dict[labelColumn] {
            case let s as String: label = s.trimmingSpaces()
            case let n as NSNumber: label = n.stringValue
            default: throw TextError.jsonLine(file: file, line: line, message: "no string field '\(labelColumn)'")
            }
            guard !label.isEmpty else { throw TextError.jsonLine(file: file, line: line, message: "empty \(labelColumn)") }
            if isBlank(text) { skipped += 1; continue }
            items.append(TextItem(text: text, label: label, path: file, row: row))
        }
        guard row > 0 else { throw TextError.noDocuments(source: file, reason: "no records") }
        return TextDataset(source: file, labels: Array(Set(items.map(\.label))).sorted(), items: items,
                           skippedEmpty: skipped)
    }

    /// Every record of a table, in the numbering of `TextItem.row` (index row − 1), as its string values: a CSV/TSV
    /// record's fields, a JSON Lines object's string values (in key order). For re-finding recorded rows.
    public static func recordFields(_ path: String) throws -> [[String]] {
        let bytes = try TableFile.read(path)
        guard !bytes.isEmpty else { throw DataError.emptyFile(file: path) }
        try checkUTF8(bytes, file: path)
        let ext = (path as NSString).pathExtension.lowercased()
        if ext == "jsonl" || ext == "ndjson" {
            var out = [[String]]()
            for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            where line.contains(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0D) }) {
                let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] ?? [:]
                out.append(object.keys.sorted().compactMap { object[$0] as? String })
            }
            return out
        }
        let delimiter = ext == "tsv" || ext == "tab" ? UInt8(ascii: "\t") : UInt8(ascii: ",")
        return try CSVReader.table(bytes: bytes, file: path, delimiter: delimiter).rows.map(\.fields)
    }

    /// Checks before training that the data can train a classifier: at least 2 classes, at least `minimum`
    /// documents in each. Throws naming every class that falls short; returns warnings for classes under
    /// `warnBelow` documents.
    public func preflight(minimum: Int = 2, warnBelow: Int = 10) throws -> [String] {
        guard !items.isEmpty else { throw TextError.noDocuments(source: source, reason: "every document is empty") }
        guard labels.count >= 2 else { throw TextError.tooFewClasses(source: source, labels: labels) }
        var n = [String: Int]()
        for item in items { n[item.label, default: 0] += 1 }
        let counts = labels.map { ($0, n[$0] ?? 0) }
        let small = counts.filter { $0.1 < minimum }
        if !small.isEmpty {
            throw TextError.classesTooSmall(source: source, classes: small.map {
                "\($0.0) (\($0.1) document\($0.1 == 1 ? "" : "s"))" }, minimum: minimum)
        }
        return counts.filter { $0.1 < warnBelow }.map {
            "\(source): class '\($0.0)' has only \($0.1) documents; \(warnBelow) or more train better"
        }
    }

    // MARK: documents

    /// The contents of a UTF-8 text file (a leading byte-order mark dropped); invalid UTF-8 throws with the offset.
    public static func readDocument(_ path: String) throws -> String {
        var bytes = try ImageDecoder.readFile(path)
        try checkUTF8(bytes, file: path)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Throws `TextError.invalidUTF8` at the first byte that does not begin a valid UTF-8 sequence (RFC 3629: no
    /// overlong forms, no surrogates, nothing above U+10FFFF).
    public static func checkUTF8(_ bytes: [UInt8], file: String) throws {
        guard let offset = firstInvalidUTF8(bytes) else { return }
        let line = 1 + bytes[..<offset].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        throw TextError.invalidUTF8(file: file, offset: offset, line: line)
    }

    /// The offset of the first invalid UTF-8 sequence in `bytes`, or nil.
    public static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { b -> Int? in
            var i = 0
            let n = b.count
            guard let base = b.baseAddress else { return nil }
            while i < n {
                // Eight ASCII bytes at a time (most text is ASCII).
                while i &+ 8 <= n,
                      UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    i &+= 8
                }
                guard i < n else { break }
                let c = b[i]
                if c < 0x80 { i &+= 1; continue }
                let length: Int, low: UInt8, high: UInt8   // allowed range of the second byte
                switch c {
                case 0xC2...0xDF: length = 2; low = 0x80; high = 0xBF
                case 0xE0: length = 3; low = 0xA0; high = 0xBF
                case 0xE1...0xEC, 0xEE, 0xEF: length = 3; low = 0x80; high = 0xBF
                case 0xED: length = 3; low = 0x80; high = 0x9F
                case 0xF0: length = 4; low = 0x90; high = 0xBF
                case 0xF1...0xF3: length = 4; low = 0x80; high = 0xBF
                case 0xF4: length = 4; low = 0x80; high = 0x8F
                default: return i
                }
                guard i + length <= n, (low...high).contains(b[i &+ 1]) else { return i }
                for k in 2..<max(length, 2) where b[i &+ k] & 0xC0 != 0x80 { return i }
                i &+= length
            }
            return nil
        }
    }

    static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.properties.isWhitespace }
    }

    // MARK: telling text from images

    /// Whether `path` holds text data rather than images: a folder whose label subfolders hold more `.txt` files
    /// than JPEG/PNG images (by content), a JSON Lines file, or a CSV/TSV whose header names `textColumn`.
    public static func looksLikeText(_ path: String, textColumn: String = "text") -> Bool {
        if DirectoryWalk.isDirectory(path) {
            var text = 0, images = 0
            for name in (try? DirectoryWalk.listing(path)) ?? [] where DirectoryWalk.isDirectory(path + "/" + name) {
                for file in ((try? DirectoryWalk.files(under: path + "/" + name, depth: 0)) ?? []).prefix(16) {
                    if isTextFile(file) { text += 1 } else if startsLikeImage(file) { images += 1 }
                }
            }
            return text > images
        }
        let ext = (path as NSString).pathExtension.lowercased()
        if ext == "jsonl" || ext == "ndjson" { return true }
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 65536)) ?? Data())
        let firstLine = Array(head.prefix { $0 != UInt8(ascii: "\n") })
        let delimiter = ext == "tsv" || ext == "tab" ? UInt8(ascii: "\t") : UInt8(ascii: ",")
        guard let header = try? CSVReader.parse(bytes: firstLine, file: path, delimiter: delimiter).first else { return false }
        return header.fields.map { $0.trimmingSpaces() }.contains(textColumn)
    }

    static func startsLikeImage(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 4)) ?? Data())
        return head.starts(with: [0xFF, 0xD8]) || head.starts(with: [0x89, 0x50, 0x4E, 0x47])
    }

    static func isTextFile(_ path: String) -> Bool { (path as NSString).pathExtension.lowercased() == "txt" }
}
