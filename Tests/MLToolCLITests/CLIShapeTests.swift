import Foundation
import Testing

/// The CLI is a shell: it parses, calls one library entry and prints. It imports only Foundation and `MLTool`
/// (so every pipeline is reachable from the library); its files stay short, and train, eval and predict know tasks
/// only through the library's task table.
struct CLIShapeTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/MLToolCLI")
    static let fileLimit = 200

    static func files() throws -> [URL] {
        let names = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        return names.sorted().map { sources.appendingPathComponent($0) }
    }

    @Test func importsOnlyFoundationAndTheLibrary() throws {
        let files = try Self.files()
        #expect(files.count > 5, "no CLI sources found at \(Self.sources.path)")
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let t = line.trimmingCharacters(in: .whitespaces)
                // `import X`, `@testable import X`, `@_exported import X`, `import struct X.Y`
                guard let range = t.range(of: #"^(@\w+\s+)*import(\s+(struct|class|enum|func|protocol|typealias|var|let))?\s+"#,
                                          options: .regularExpression) else { continue }
                let module = t[range.upperBound...].split(separator: ".").first.map(String.init) ?? ""
                #expect(["Foundation", "MLTool"].contains(module),
                        "\(file.lastPathComponent) imports \(module): the CLI may import only Foundation and MLTool")
            }
        }
    }

    /// A command file parses, calls and prints: when one grows past this, pipeline code is creeping back in.
    @Test func noCommandFileIsLong() throws {
        for file in try Self.files() {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count - 1
            #expect(lines > 0 && lines <= Self.fileLimit, "\(file.lastPathComponent) has \(lines) lines (limit \(Self.fileLimit)): move pipeline code into the library")
        }
    }

    /// train, eval and predict consult the task table (`TaskRegistry`) and name no task: a new task needs no CLI edit.
    @Test func trainEvalAndPredictNameNoTask() throws {
        let taskWords = ["ImageClassif", "TextClassif", "Detector", "Detection", "WordTag", "Tagger", "Trainer"]
        for name in ["TrainCommand.swift", "EvalCommand.swift", "PredictCommand.swift"] {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(name), encoding: .utf8)
            #expect(text.contains("TaskRegistry"), "\(name) does not consult the task table")
            for word in taskWords { #expect(!text.contains(word), "\(name) names \(word): a task's code belongs in its folder") }
        }
    }

    /// The library's facade calls the modules below it, never a C library (those are the modules' business).
    @Test func theFacadeImportsNoCLibrary() throws {
        let facade = Self.sources.deletingLastPathComponent().appendingPathComponent("MLTool")
        let walk = FileManager.default.enumerator(atPath: facade.path)
        var files = 0
        while let path = walk?.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            files += 1
            let text = try String(contentsOf: facade.appendingPathComponent(path), encoding: .utf8)
            for line in text.split(separator: "\n") where line.range(of: #"^(@\w+\s+)*import\s+C"#, options: .regularExpression) != nil {
                Issue.record("Sources/MLTool/\(path): \(line): the facade imports a C library")
            }
        }
        #expect(files > 30, "only \(files) files under \(facade.path)")
    }
}
