import Foundation

/// A fresh temporary directory, removed by `cleanup()`.
public struct TempDir: Sendable {
    public let path: String
    public init() throws {
        path = NSTemporaryDirectory() + "mltool-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    public func file(_ name: String) -> String { path + "/" + name }
    public func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}
