import Foundation
import Testing

/// The CLI is a shell: it parses, calls one library entry and prints. It imports only Foundation and `MLTool`
/// (so every pipeline is reachable from the library) and stays small (so pipelines do not grow back into it).
struct CLIShapeTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/MLToolCLI")
    static let lineBudget = 1300

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

    @Test func staysWithinItsLineBudget() throws {
        var total = 0
        for file in try Self.files() {
            total += try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count - 1
        }
        #expect(total > 100)
        #expect(total <= Self.lineBudget, "Sources/MLToolCLI has \(total) lines; the budget is \(Self.lineBudget): move pipeline code into the library")
    }
}
