import Foundation
@testable import MLToolData

/// The committed fixtures (written by Fixtures/make_fixtures.py).
enum Fixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures").path
    static func path(_ name: String) -> String { directory + "/" + name }
    static func bytes(_ name: String) throws -> [UInt8] { try ImageDecoder.readFile(path(name)) }
}

/// A fresh temporary directory, removed by the caller with `remove()`.
struct TempDir {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "mltool-data-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func file(_ relative: String, _ contents: [UInt8]) throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(contents).write(to: URL(fileURLWithPath: full))
        return full
    }
    func file(_ relative: String, text: String) throws -> String { try file(relative, Array(text.utf8)) }
    func mkdir(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path + "/" + relative, withIntermediateDirectories: true)
    }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
