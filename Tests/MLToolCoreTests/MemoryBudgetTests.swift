import Foundation
import Testing
@testable import MLToolCore

@Suite struct MemoryBudgetTests {
    @Test(arguments: [
        ("2G", 2 << 30), ("2g", 2 << 30), ("512M", 512 << 20), ("1.5G", 3 << 29), ("64K", 64 << 10), ("3T", 3 << 40),
        ("2GB", 2 << 30), ("2GiB", 2 << 30), ("100", 100), (" 8M ", 8 << 20), ("0.5K", 512),
    ])
    func sizesParse(text: String, bytes: Int) {
        #expect(MemoryBudget.parse(text) == bytes)
    }

    @Test(arguments: ["", "G", "0", "0G", "-1G", "2X", "1e3", "two", "2 G", "nanG", "9999999999T", "1..5G", "B"])
    func nonsenseIsRefused(text: String) {
        #expect(MemoryBudget.parse(text) == nil, "'\(text)'")
    }

    /// Half of the smaller of MemTotal and the cgroup's limit, read here the same way by hand.
    @Test func defaultIsHalfOfWhatTheProcessMayUse() throws {
        let d = MemoryBudget.machineDefault()
        #expect(d > 0)
        let info = try String(contentsOfFile: "/proc/meminfo", encoding: .utf8)
        let total = try #require(info.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .flatMap { Int($0.split(separator: " ")[1]) }) * 1024
        #expect(d <= total / 2)
        #expect(d >= min(total / 2, 1 << 20))
    }
}
