import Foundation
import MLToolData

extension StudioProject {
    /// What the data view shows of one source: its task and why, and the task's summary of it (`TaskKind.dataSummary`)
    /// with every file path relative to the project.
    public struct DataView: Codable, Sendable {
        public var source: StudioProject.Source
        public var summary: DataSummary
    }

    /// The data view of `path` (a source of this project), read by the task that recognises it, as training reads it.
    public func dataView(_ path: String) throws -> DataView {
        let real = try resolve(path, field: "path")
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: real, isDirectory: &isDirectory)
        let task = tasks.recognizing(data: real)
        let source = Source(path: relative(real), isFolder: isDirectory.boolValue, task: task.name, title: task.title,
                            why: Self.firstSentence(task.trainingHelp))
        var summary = try task.dataSummary(real)
        if summary.samplesAreFiles {
            for i in summary.classes.indices { summary.classes[i].samples = summary.classes[i].samples.map(projectPath) }
        }
        for i in summary.photos.indices { summary.photos[i].path = projectPath(summary.photos[i].path) }
        return DataView(source: source, summary: summary)
    }

    /// A file of a data source as a path in the project (its real path: a data folder may hold symbolic links).
    private func projectPath(_ path: String) -> String { relative(Self.realPath(path) ?? path) }
}

extension StudioProject {
    /// An error as `mltool` prints it.
    static func describe(_ error: Error) -> String { DataSummary.describe(error) }
}
