import Foundation
import Testing

/// Every float comparison in the tests goes through `assertClose` / `Closeness` (Tests/MLToolTestSupport): a test that
/// folds differences into a running maximum itself (`worst = max(worst, abs(a - b))`) lets a NaN through, since Swift's
/// `max` keeps whichever operand compares greater and a NaN never does. This test reads every Swift file under Tests/
/// (but the support library, where the one comparison lives, and this file) and fails on each such loop, by line.
@Suite struct HandRolledComparisonTests {
    /// The shapes of a hand-rolled maximum difference: a variable kept as the maximum of itself and an `abs(`, a
    /// `worst…` variable kept as a maximum, and the largest of a mapped list of differences. Comments are not read.
    static let patterns: [(what: String, regex: String)] = [
        ("a running maximum of differences", #"([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*max\(\s*\1\s*,[^\n]*abs\("#),
        ("a running 'worst' value", #"\b(?i:worst)[A-Za-z0-9_.]*\s*=\s*max\("#),
        ("max(worst, …)", #"max\(\s*(?i:worst)"#),
        ("the largest of a list of differences", #"abs\(\$0\s*-\s*\$1\)\s*\}\s*\.max\(\)"#),
        ("the largest of a list of differences", #"-[^\n\]]*\]\s*\.map\(abs\)\.max\(\)"#),
    ]

    static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    /// The offending lines of `text`, as "line: what".
    static func offences(in text: String) throws -> [String] {
        var found: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let s = String(line)
            if s.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
            for (what, pattern) in patterns {
                let regex = try NSRegularExpression(pattern: pattern)
                if regex.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil {
                    found.append("\(number + 1): \(what): \(s.trimmingCharacters(in: .whitespaces))")
                    break
                }
            }
        }
        return found
    }

    @Test func noTestComputesAMaximumDifferenceItself() throws {
        let files = try #require(FileManager.default.enumerator(atPath: Self.tests.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix("MLToolTestSupport/") && !$0.hasSuffix("/HandRolledComparisonTests.swift") }
        #expect(files.count > 100, "only \(files.count) test files found under \(Self.tests.path)")
        for file in files.sorted() {
            let text = try String(contentsOfFile: Self.tests.appendingPathComponent(file).path, encoding: .utf8)
            for offence in try Self.offences(in: text) {
                Issue.record("Tests/\(file):\(offence): compare with assertClose (Tests/MLToolTestSupport)")
            }
        }
    }

    /// The patterns catch the loops this test was written against, and leave alone what only looks like them.
    @Test func patternsCatchTheLoopsTheyAreFor() throws {
        let caught = [
            "worst = max(worst, abs(got - acc))",
            "worstScore = max(worstScore, abs(x.score - y.score) / max(abs(x.score), 1e-6))",
            "cmp.maxScore = max(cmp.maxScore, abs(Double(d.score) - scores[j]))",
            "worst.corner = max(worst.corner, corners.max() ?? .infinity)",
            "maxCoordinate = max(maxCoordinate, zip(truth, coords[d.index]).map { abs($0 - $1) }.max() ?? .infinity)",
            "let diff = zip(corners, boxes[j]).map { abs($0 - $1) }.max() ?? .infinity",
            "let d = [x.box.x - y.box.x, x.box.y - y.box.y].map(abs).max() ?? 0",
            "for (p, q) in zip(u.data, v.data) { r = max(r, Double(abs(p - q)) / max(Double(abs(p)), 1e-6)) }",
        ]
        for line in caught { #expect(try Self.offences(in: line).count == 1, "not caught: \(line)") }
        let fine = [
            "if act == Int32(MLK_ACT_RELU) { acc = max(acc, 0) }",
            "tallies[c].maxTemps = max(tallies[c].maxTemps, temps.count)",
            "/// what a `max(worst, |a − b|)` loop lets through",
            "for (i, v) in w.enumerated() { scales[i % n] = max(scales[i % n], abs(v)) }",
            "let scale = refGrad.map(abs).max() ?? 1",
            "worstIoU = min(worstIoU, iou)",
        ]
        for line in fine { #expect(try Self.offences(in: line).isEmpty, "caught: \(line)") }
    }
}
