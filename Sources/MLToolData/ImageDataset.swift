import Foundation

/// One labelled image file.
public struct ImageItem: Hashable, Sendable {
    /// The path to open (the folder or the CSV's directory joined with the relative path).
    public var path: String
    public var label: String
    public init(path: String, label: String) { self.path = path; self.label = label }
}

/// A labelled image collection: a folder whose immediate subfolders are the labels, or a CSV with a path and a
/// label column. Files are not opened here (the decoder recognises images by content later), so listing is cheap.
public struct ImageDataset: Sendable {
    /// The folder or CSV it came from, for messages.
    public var source: String
    /// Every class found, sorted, including classes with no images.
    public var labels: [String]
    /// The items: for a folder sorted by label, then path; for a CSV in file order.
    public var items: [ImageItem]

    public init(source: String, labels: [String], items: [ImageItem]) {
        self.source = source; self.labels = labels; self.items = items
    }

    /// A folder (`folder(_:)`) or, for a file, a CSV (`csv(_:pathColumn:labelColumn:)`).
    public static func load(_ path: String, pathColumn: String = "path",
                            labelColumn: String = "label") throws -> ImageDataset {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw DataError.cannotRead(file: path, reason: "No such file or directory")
        }
        return isDirectory.boolValue ? try folder(path)
            : try csv(path, pathColumn: pathColumn, labelColumn: labelColumn)
    }

    /// A label-folder tree: each immediate subfolder of `root` is a label and every file below it (at any depth)
    /// belongs to it. Hidden files and folders (leading '.') are ignored, files directly in `root` too. The walk is
    /// sorted, so the order never depends on the file system.
    public static func folder(_ root: String) throws -> ImageDataset {
        var labels = [String]()
        var items = [ImageItem]()
        for name in try DirectoryWalk.listing(root) {
            let dir = root + "/" + name
            guard DirectoryWalk.isDirectory(dir) else { continue }
            labels.append(name)
            for file in try DirectoryWalk.files(under: dir, depth: 0) { items.append(ImageItem(path: file, label: name)) }
        }
        return ImageDataset(source: root, labels: labels, items: items)
    }

    /// A CSV with a header row naming `pathColumn` and `labelColumn`; relative paths are relative to the CSV's
    /// folder. Every named file must exist (`DataError.missingFile` names the line and path).
    public static func csv(_ path: String, pathColumn: String = "path", labelColumn: String = "label",
                           delimiter: UInt8 = UInt8(ascii: ",")) throws -> ImageDataset {
        let table = try CSVReader.table(path: path, delimiter: delimiter)
        let pc = try table.column(pathColumn), lc = try table.column(labelColumn)
        let base = (path as NSString).deletingLastPathComponent
        var items = [ImageItem]()
        for row in table.rows {
            let relative = row.fields[pc], label = row.fields[lc].trimmingSpaces()
            guard !label.isEmpty else {
                throw DataError.csvSyntax(file: path, line: row.line, column: 1, message: "empty \(labelColumn)")
            }
            guard !relative.isEmpty else {
                throw DataError.csvSyntax(file: path, line: row.line, column: 1, message: "empty \(pathColumn)")
            }
            let full = relative.hasPrefix("/") || base.isEmpty ? relative : base + "/" + relative
            guard FileManager.default.fileExists(atPath: full) else {
                throw DataError.missingFile(file: path, line: row.line, path: relative)
            }
            items.append(ImageItem(path: full, label: label))
        }
        return ImageDataset(source: path, labels: Array(Set(items.map(\.label))).sorted(), items: items)
    }

    /// Image counts per label, in `labels` order (zero for empty classes).
    public func counts(excluding unusable: Set<String> = []) -> [(label: String, count: Int)] {
        var n = [String: Int]()
        for item in items where !unusable.contains(item.path) { n[item.label, default: 0] += 1 }
        return labels.map { ($0, n[$0] ?? 0) }
    }

    /// Checks, before any feature is extracted, that the data can train a classifier: at least 2 classes and at
    /// least `minimum` usable images in each (paths in `unusable` do not count). Throws naming every class that
    /// falls short; returns warnings for classes under `warnBelow` images.
    public func preflight(unusable: Set<String> = [], minimum: Int = 2, warnBelow: Int = 10) throws -> [String] {
        guard labels.count >= 2 else { throw DataError.tooFewClasses(source: source, labels: labels) }
        let counts = counts(excluding: unusable)
        let small = counts.filter { $0.count < minimum }
        if !small.isEmpty {
            throw DataError.classesTooSmall(source: source, classes: small.map {
                "\($0.label) (\($0.count) image\($0.count == 1 ? "" : "s"))" }, minimum: minimum)
        }
        return counts.filter { $0.count < warnBelow }.map {
            "\(source): class '\($0.label)' has only \($0.count) images; \(warnBelow) or more train better"
        }
    }

    /// Throws `DataError.tooManyBadImages` when more than `limitPercent` % of the items failed to decode;
    /// `failures` are the decoders' errors in data set order (the first is quoted).
    public func checkBadImages(_ failures: [DataError], limitPercent: Int = 10) throws {
        guard let first = failures.first, failures.count * 100 > items.count * limitPercent else { return }
        throw DataError.tooManyBadImages(source: source, bad: failures.count, total: items.count,
                                         limitPercent: limitPercent, first: first.description)
    }
}
