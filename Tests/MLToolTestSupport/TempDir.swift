import Foundation

/// A fresh temporary directory (`mltool-<tag>-<UUID>` under the system's), removed by `cleanup()`: the one helper
/// every test target makes its scratch folders with.
public struct TempDir: Sendable {
    public let path: String
    public init(tag: String = "test") throws {
        path = NSTemporaryDirectory() + "mltool-\(tag)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    public var url: URL { URL(fileURLWithPath: path) }
    /// The path of `name` inside the directory (nothing is written).
    public func file(_ name: String) -> String { path + "/" + name }
    /// Writes `contents` to `relative` (its folders made as needed); returns its path.
    @discardableResult
    public func file(_ relative: String, _ contents: [UInt8]) throws -> String {
        let full = file(relative)
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(contents).write(to: URL(fileURLWithPath: full))
        return full
    }
    @discardableResult
    public func file(_ relative: String, text: String) throws -> String { try file(relative, Array(text.utf8)) }
    public func mkdir(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: file(relative), withIntermediateDirectories: true)
    }
    public func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}
