import Foundation
import MLToolTestSupport
@testable import MLToolData

/// The committed fixtures (written by Fixtures/make_fixtures.py).
enum Fixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures").path
    static func path(_ name: String) -> String { directory + "/" + name }
    static func bytes(_ name: String) throws -> [UInt8] { try ImageDecoder.readFile(path(name)) }
}

