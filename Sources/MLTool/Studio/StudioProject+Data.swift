import Foundation
import MLToolData

extension StudioProject {
    /// One class of a data source: its count and a few of its items (image paths in the project, or text snippets).
    public struct DataClass: Codable, Sendable, Equatable {
        public var label: String
        public var count: Int
        public var samples: [String]
    }

    /// What the data view shows of one source: its task and why, its classes, and the files training would skip
    /// (with the reason `train` prints for each).
    public struct DataView: Codable, Sendable {
        public var source: StudioProject.Source
        public var classes: [DataClass]
        public var badFiles: [String]
        /// Images whose headers were checked (the first `checkedImages` of the source; 0 for text).
        public var checkedImages: Int
        /// What the view does not show yet for this task.
        public var note: String?
    }

    /// The most images whose headers the data view reads, and samples shown per class.
    public static let maxCheckedImages = 5000, samplesPerClass = 4

    /// The data view of `path` (a source of this project), read through the data set readers training uses.
    public func dataView(_ path: String) throws -> DataView {
        let real = try resolve(path, field: "path")
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: real, isDirectory: &isDirectory)
        let task = tasks.recognizing(data: real)
        let source = Source(path: relative(real), isFolder: isDirectory.boolValue, task: task.name, title: task.title,
                            why: Self.firstSentence(task.trainingHelp))
        switch task.name {
        case ImageClassificationTask.name:
            let data = try ImageDataset.load(real)
            var bad = [String](), checked = 0
            for item in data.items.prefix(Self.maxCheckedImages) {
                checked += 1
                do { _ = try ImageDecoder.size(path: item.path) } catch { bad.append(Self.describe(error)) }
            }
            var samples = [String: [String]]()
            for item in data.items where samples[item.label, default: []].count < Self.samplesPerClass {
                samples[item.label, default: []].append(relative(Self.realPath(item.path) ?? item.path))
            }
            let classes = data.counts().map { DataClass(label: $0.label, count: $0.count, samples: samples[$0.label] ?? []) }
            return DataView(source: source, classes: classes, badFiles: bad, checkedImages: checked, note: nil)
        case TextClassificationTask.name:
            let data = try TextDataset.load(real)
            var counts = [String: Int](), samples = [String: [String]]()
            for item in data.items {
                counts[item.label, default: 0] += 1
                if samples[item.label, default: []].count < Self.samplesPerClass {
                    samples[item.label, default: []].append(TaskOutput.snippet(item.text))
                }
            }
            let classes = data.labels.map { DataClass(label: $0, count: counts[$0] ?? 0, samples: samples[$0] ?? []) }
            let bad = data.skippedEmpty > 0 ? ["\(source.path): \(data.skippedEmpty) empty documents skipped"] : []
            return DataView(source: source, classes: classes, badFiles: bad, checkedImages: 0, note: nil)
        default:
            return DataView(source: source, classes: [], badFiles: [], checkedImages: 0,
                            note: "not yet supported: the data view of \(task.title.lowercased()) data (training it is)")
        }
    }

    /// An error as `mltool` prints it.
    static func describe(_ error: Error) -> String { (error as? MLToolError)?.description ?? "\(error)" }
}
