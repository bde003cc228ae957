import Foundation
import Testing

/// docs/ARCHITECTURE.md cannot drift from the tree: every file or folder it names in backquotes exists, and every
/// "uses …" list of its target diagram is what Package.swift gives that target (beside MLToolCore and C libraries).
struct ArchitectureDocTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    /// Backquoted words that name a file (a known extension) or a folder path (ending in "/").
    static func namedPaths(_ doc: String) -> [String] {
        let spans = doc.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        let pattern = #"^[A-Za-z0-9_.+/-]+(\.(swift|c|h|md|py|sh|sbatch|yaml|json|txt|supp|proto)|/)$"#
        return spans.filter { $0.range(of: pattern, options: .regularExpression) != nil && !$0.hasPrefix("-") }
    }

    /// Every file below the folders a bare name may live in.
    static func fileNames() -> Set<String> {
        var names = Set<String>()
        for folder in ["Sources", "Tests", "fuzz", "deploy", "docs", "Examples", "recipes", "datasets", "bench"] {
            let base = root.appendingPathComponent(folder)
            guard let walk = FileManager.default.enumerator(atPath: base.path) else { continue }
            for case let path as String in walk { names.insert((path as NSString).lastPathComponent) }
        }
        return names
    }

    static func exists(_ path: String, names: Set<String>) -> Bool {
        // "+Scatter.swift" stands for the file of that suffix beside the one the sentence names.
        if path.hasPrefix("+") { return names.contains { $0.hasSuffix(path) } }
        if !path.contains("/") || path.hasSuffix("/") && path.dropLast().contains("/") == false {
            let bare = path.hasSuffix("/") ? String(path.dropLast()) : path
            if names.contains(bare) { return true }
        }
        return ["", "Sources/", "Tests/"].contains { prefix in
            FileManager.default.fileExists(atPath: root.appendingPathComponent(prefix + path).path)
        }
    }

    @Test func everyPathItNamesExists() throws {
        let doc = try Self.text("docs/ARCHITECTURE.md"), names = Self.fileNames()
        let paths = Self.namedPaths(doc)
        #expect(paths.count > 80, "only \(paths.count) paths found in docs/ARCHITECTURE.md")
        let missing = paths.filter { !Self.exists($0, names: names) }
        #expect(missing.isEmpty, "docs/ARCHITECTURE.md names what is not in the tree: \(missing)")
    }

    /// Package.swift's targets and their MLTool* dependencies.
    static func packageDependencies() throws -> [String: Set<String>] {
        let package = try text("Package.swift")
        let regex = try NSRegularExpression(pattern: #"\.target\(name: "(\w+)", dependencies: \[([^\]]*)\]"#)
        var deps: [String: Set<String>] = [:]
        for m in regex.matches(in: package, range: NSRange(package.startIndex..., in: package)) {
            guard let name = Range(m.range(at: 1), in: package), let list = Range(m.range(at: 2), in: package) else { continue }
            let names = package[list].components(separatedBy: "\"").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
            deps[String(package[name])] = Set(names.filter { $0.hasPrefix("MLTool") && $0 != "MLToolCore" })
        }
        return deps
    }

    @Test func everyUsesListMatchesPackageSwift() throws {
        let doc = try Self.text("docs/ARCHITECTURE.md"), deps = try Self.packageDependencies()
        #expect(deps.count > 10)
        let lines = doc.components(separatedBy: "\n")
        var checked = 0, lastTarget: String?
        for line in lines {
            let words = line.components(separatedBy: CharacterSet.alphanumerics.inverted).filter { $0.hasPrefix("MLTool") && deps[$0] != nil }
            if let w = words.first { lastTarget = w }
            guard let r = line.range(of: #"uses ([A-Za-z, ]+)\)"#, options: .regularExpression), let target = lastTarget else { continue }
            let listed = line[r].dropFirst(5).dropLast().components(separatedBy: ",")
                .map { "MLTool" + $0.trimmingCharacters(in: .whitespaces) }
            #expect(Set(listed) == deps[target], "docs/ARCHITECTURE.md says \(target) uses \(listed.sorted()); Package.swift: \((deps[target] ?? []).sorted())")
            checked += 1
        }
        #expect(checked >= 3, "only \(checked) uses lists found")
    }
}
