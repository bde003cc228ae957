import Foundation
import MLToolCore
import MLToolData

/// A `mltool studio` project: one folder holding data sources (label folders, tables, annotated photos), the models
/// trained from them (models/), their reports (reports/) and exports. Every path a request names goes through
/// `resolve`, which refuses one that leads outside the folder: absolute, through `..`, or through a symbolic link
/// out of it.
public struct StudioProject: Sendable {
    /// The folder, with its symbolic links resolved.
    public let root: String
    public let tasks: TaskRegistry

    /// Where trained models, reports and the feature cache go.
    public static let modelsFolder = "models", reportsFolder = "reports", cacheFolder = ".mltool-cache"

    public init(folder: String, tasks: TaskRegistry = .standard) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else {
            throw PipelineError.missingInput(file: folder, reason: "no such folder")
        }
        guard isDirectory.boolValue, let real = Self.realPath(folder) else {
            throw PipelineError.badInput(file: folder, reason: "not a folder: a project is a folder")
        }
        root = real
        self.tasks = tasks
    }

    static func realPath(_ path: String) -> String? {
        guard let r = realpath(path, nil) else { return nil }
        defer { free(r) }
        return String(cString: r)
    }

    /// `path` (relative to the project, as the request named it in `field`) as an absolute path inside the project.
    /// The deepest part of it that exists is resolved (symbolic links followed) and must stay inside. With
    /// `creating`, the file need not exist yet, but its folder must (models/ and reports/ are made when missing).
    public func resolve(_ path: String, field: String, creating: Bool = false) throws -> String {
        func refuse(_ reason: String) -> PipelineError {
            PipelineError.outsideFolder(field: field, path: path, folder: root, reason: reason)
        }
        guard !path.isEmpty else { throw refuse("empty") }
        guard !path.hasPrefix("/") else { throw refuse("an absolute path") }
        guard !path.contains("\0") else { throw refuse("holds a NUL byte") }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." }
        guard !parts.contains("..") else { throw refuse("through '..'") }
        // The longest prefix that exists, with its links resolved, must be inside the project.
        var existing = parts.count
        var real: String?
        while existing >= 0 {
            real = Self.realPath(([root] + parts.prefix(existing)).joined(separator: "/"))
            if real != nil { break }
            existing -= 1
        }
        guard let inside = real, inside == root || inside.hasPrefix(root + "/") else {
            throw refuse("a symbolic link to \(real ?? "?")")
        }
        if existing == parts.count { return inside }
        let missing = parts[existing...]
        guard creating, missing.count == 1 || (missing.count == 2 && existing == 0
                                                && [Self.modelsFolder, Self.reportsFolder].contains(missing.first ?? "")) else {
            throw PipelineError.missingInput(file: path, reason: "no such file or folder in the project")
        }
        if missing.count == 2 {
            try? FileManager.default.createDirectory(atPath: root + "/" + parts[0], withIntermediateDirectories: false)
        }
        return ([inside] + missing).joined(separator: "/")
    }

    /// `absolute` (a path `resolve` gave) relative to the project.
    public func relative(_ absolute: String) -> String {
        absolute == root ? "." : absolute.hasPrefix(root + "/") ? String(absolute.dropFirst(root.count + 1)) : absolute
    }

    // MARK: - What the project holds

    /// One data source: a folder or table at the project's top level (or below models/ for none).
    public struct Source: Codable, Sendable, Equatable {
        public var path: String
        public var isFolder: Bool
        /// The task `TaskRegistry.recognizing` tells from its content, and the rule it goes by (the task's help).
        public var task: String
        public var title: String
        public var why: String
    }

    /// One file in models/ or at the top level that mltool reads as a model, or an exported model to download.
    public struct ModelEntry: Codable, Sendable, Equatable {
        public var path: String
        public var kind: String
        public var bytes: Int
        public var task: String?
        public var summary: String?
        /// What its preview takes (nil: no preview, e.g. a sound classifier or an export).
        public var preview: PreviewInput?
        /// Why it cannot be quantized (nil: it can; the page then offers *Quantize*).
        public var quantizeRefusal: String?
    }

    public struct Listing: Codable, Sendable {
        public var root: String
        public var sources: [Source]
        public var models: [ModelEntry]
        public var reports: [String]
        public var tasks: [String]
    }

    static let tableExtensions: Set<String> = ["csv", "tsv", "jsonl", "json", "conll", "conllu", "txt"]
    static let exportExtensions: Set<String> = ["onnx", "mlmodel", "tflite"]

    /// The project's data sources, models and reports.
    public func listing() -> Listing {
        let fm = FileManager.default
        let names = ((try? fm.contentsOfDirectory(atPath: root)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        var sources = [Source](), models = [ModelEntry]()
        for name in names where ![Self.modelsFolder, Self.reportsFolder].contains(name) {
            let path = root + "/" + name
            // A symbolic link out of the project is not listed (and `resolve` refuses it).
            guard let real = Self.realPath(path), real.hasPrefix(root + "/") else { continue }
            var isDirectory: ObjCBool = false
            _ = fm.fileExists(atPath: real, isDirectory: &isDirectory)
            let ext = URL(fileURLWithPath: name).pathExtension.lowercased()
            if !isDirectory.boolValue, let m = modelEntry(real) {
                models.append(m)
            } else if isDirectory.boolValue || Self.tableExtensions.contains(ext) {
                let task = tasks.recognizing(data: real)
                sources.append(Source(path: name, isFolder: isDirectory.boolValue, task: task.name, title: task.title,
                                      why: Self.firstSentence(task.trainingHelp)))
            }
        }
        let modelNames = ((try? fm.contentsOfDirectory(atPath: root + "/" + Self.modelsFolder)) ?? []).sorted()
        for name in modelNames where !name.hasPrefix(".") {
            if let m = modelEntry(root + "/" + Self.modelsFolder + "/" + name) { models.append(m) }
        }
        let reports = ((try? fm.contentsOfDirectory(atPath: root + "/" + Self.reportsFolder)) ?? [])
            .filter { $0.hasSuffix(".html") }.sorted().map { Self.reportsFolder + "/" + $0 }
        return Listing(root: root, sources: sources, models: models, reports: reports, tasks: tasks.names)
    }

    /// A model file's entry: mltool's own models with their task and `mltool info`'s summary line, exports by kind.
    func modelEntry(_ path: String) -> ModelEntry? {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        let bytes = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
        if Self.exportExtensions.contains(ext) {
            return ModelEntry(path: relative(path), kind: ext, bytes: bytes, task: nil, summary: nil)
        }
        guard ext == "bin", (try? FileKind.detect(path: path)) == .mltool else { return nil }
        guard let model = try? ModelLoader.load(path) else {
            return ModelEntry(path: relative(path), kind: "mltool", bytes: bytes, task: nil, summary: "cannot be read")
        }
        let task = tasks.handling(model: model)
        let labels = model.metadata.labels
        let summary = "\(task.title), \(labels.count) label\(labels.count == 1 ? "" : "s")" + (labels.isEmpty ? "" : ": " + labels.prefix(8).joined(separator: ", ")
            + (labels.count > 8 ? ", …" : ""))
        return ModelEntry(path: relative(path), kind: "mltool", bytes: bytes, task: task.name, summary: summary,
                          preview: task.previewInput(model: model), quantizeRefusal: task.quantizationRefusal(model: model))
    }

    static func firstSentence(_ text: String) -> String {
        let flat = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        guard let end = flat.range(of: ". ") else { return flat }
        return String(flat[..<end.lowerBound]) + "."
    }
}
