import Foundation
import MLToolCore
import MLToolData

/// Turns a model's recorded holdout items back into items to evaluate, checking that nothing changed since
/// training: a file is re-hashed (sha256 of its bytes); a table record `data.csv#row=N` (text models) is re-read and
/// one of its fields must still hash to the recorded sha256 of the document text.
public final class HoldoutResolver {
    public enum Outcome {
        case item(LabeledItem)
        /// Why the item cannot be used ("missing: …", "changed since training …").
        case problem(String)
    }

    private let root: String?
    private var tables: [String: [[String]]] = [:]

    public init(root: String?) { self.root = root }

    public func resolve(_ item: SplitManifest.Item) throws -> Outcome {
        var path = item.path, row: Int?
        if let marker = path.range(of: "#row=", options: .backwards), let n = Int(path[marker.upperBound...]), n >= 1 {
            row = n
            path = String(path[..<marker.lowerBound])
        }
        let full = root.map { URL(fileURLWithPath: $0).appendingPathComponent(path).path } ?? path
        guard FileManager.default.fileExists(atPath: full) else { return .problem("missing: \(full)") }
        guard let row else {
            let digest = try SHA256.hex(fileAt: full)
            guard digest == item.sha256 else {
                return .problem("changed since training (sha256 \(digest.prefix(12))…, recorded \(item.sha256.prefix(12))…): \(full)")
            }
            return .item(LabeledItem(path: full, label: item.label))
        }
        let records: [[String]]
        if let cached = tables[full] { records = cached } else {
            records = try TextDataset.recordFields(full)
            tables[full] = records
        }
        let reference = "\(full)#row=\(row)"
        guard row <= records.count else {
            return .problem("missing: \(reference) (the file has \(records.count) records)")
        }
        guard let text = records[row - 1].first(where: { SHA256.hex(Array($0.utf8)) == item.sha256 }) else {
            return .problem("changed since training (no field hashes to the recorded sha256 \(item.sha256.prefix(12))…): \(reference)")
        }
        return .item(LabeledItem(path: reference, label: item.label, text: text))
    }
}
