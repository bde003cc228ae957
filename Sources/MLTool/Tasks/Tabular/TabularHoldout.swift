import Foundation
import MLToolCore
import MLToolTabular

/// The rows a tabular model was evaluated on at training, recorded in its split manifest so that `mltool eval MODEL`
/// finds them again: one item per row, `table.csv#row=N` (N the row's number among the table's records, from 1)
/// relative to the table's folder, labelled with the row's target field, hashed as the SHA-256 of its fields joined
/// by U+001F. A row whose table is gone or whose fields changed is named, never silently used.
enum TabularHoldout {
    /// The manifest of `rows` (indices into `table.rows`).
    static func manifest(_ table: RawTable, rows: [Int], target: String, trainCount: Int, validationCount: Int,
                         seed: UInt64) throws -> SplitManifest {
        let root = RecordedPath.directory(of: table.file)
        let path = RecordedPath.relative(table.file, from: root), t = try table.column(target)
        return SplitManifest(root: root, holdout: rows.map { r in
            SplitManifest.Item(path: "\(path)#row=\(r + 1)", label: table.rows[r][t], sha256: digest(table.rows[r]))
        }, trainCount: trainCount, validationCount: validationCount, seed: seed)
    }

    static func digest(_ fields: [String]) -> String { SHA256.hex(Array(fields.joined(separator: "\u{1F}").utf8)) }

    /// The recorded rows of `model`, as one table (the first table's header; every table must have the same).
    static func table(_ model: Model, modelPath: String) throws -> RawTable {
        guard let split = model.metadata.split, !split.holdout.isEmpty else {
            throw PipelineError.invalidParameter(name: "data", reason: "\(modelPath) records no holdout rows; give a TABLE with the target column")
        }
        var tables: [String: RawTable] = [:], header: [String]?
        var rows: [[String]] = [], lines: [Int] = [], problems: [String] = [], file = ""
        for item in split.holdout {
            guard let marker = item.path.range(of: "#row=", options: .backwards), let n = Int(item.path[marker.upperBound...]), n >= 1 else {
                problems.append("not a table row: \(item.path)")
                continue
            }
            let part = String(item.path[..<marker.lowerBound])
            let full = split.root.map { URL(fileURLWithPath: $0).appendingPathComponent(part).path } ?? part
            guard FileManager.default.fileExists(atPath: full) else { problems.append("missing: \(full)"); continue }
            let table = try tables[full] ?? RawTable.read(full)
            tables[full] = table
            guard header == nil || header == table.header else { problems.append("other columns than the first table's: \(full)"); continue }
            header = table.header; file = full
            guard n <= table.rows.count, digest(table.rows[n - 1]) == item.sha256 else {
                problems.append("changed since training: \(full)#row=\(n)")
                continue
            }
            rows.append(table.rows[n - 1]); lines.append(table.lines[n - 1])
        }
        guard problems.isEmpty else {
            let list = problems.prefix(20).map { "  " + $0 }.joined(separator: "\n")
                + (problems.count > 20 ? "\n  … and \(problems.count - 20) more" : "")
            throw PipelineError.missingInput(file: modelPath, reason: "\(problems.count) of \(split.holdout.count) recorded holdout rows "
                + "cannot be used:\n\(list)\nRestore the table or give it: mltool eval MODEL TABLE")
        }
        return RawTable(file: file, header: header ?? [], rows: rows, lines: lines)
    }
}
