import Foundation
import MLToolFuzzEntries
import Testing

/// The fuzzing record can be re-checked: every round `fuzz/run.sh` ran is a row of the committed `fuzz/rounds.tsv`,
/// every target has at least one, and docs/SECURITY.md's totals table (between its `fuzz-totals` markers, written by
/// `fuzz/totals.sh`) is what the rows add up to: deleting or editing a row without regenerating the table fails here.
@Suite struct FuzzRoundsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    struct Round { let ended, target, commit: String; let cpu, executions: Int }

    static func rounds() throws -> [Round] {
        let text = try String(contentsOf: root.appendingPathComponent("fuzz/rounds.tsv"), encoding: .utf8)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        #expect(lines.first == "ended_utc\ttarget\tcommit\twall_s\tcpu_s\texecutions\tcov\tft\tcorpus\tfindings\tnote")
        var out: [Round] = []
        for (i, line) in lines.enumerated().dropFirst() {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 11, let cpu = Int(f[4]), let executions = Int(f[5]), Int(f[3]) != nil, Int(f[9]) != nil else {
                Issue.record("fuzz/rounds.tsv line \(i + 1): expected 11 tab-separated fields with numbers: \(line)")
                continue
            }
            out.append(Round(ended: f[0], target: f[1], commit: f[2], cpu: cpu, executions: executions))
        }
        return out
    }

    /// fuzz/totals.sh's table, computed here from the rows.
    static func totals(_ rounds: [Round]) -> String {
        var order: [String] = [], by: [String: [Round]] = [:]
        for r in rounds {
            if by[r.target] == nil { order.append(r.target) }
            by[r.target, default: []].append(r)
        }
        var lines = ["| target | rounds | executions | CPU seconds | last fuzzed at | last round ended |", "|---|--:|--:|--:|---|---|"]
        for t in order {
            let rs = by[t] ?? [], last = rs[rs.count - 1]
            lines.append("| `\(t)` | \(rs.count) | \(rs.map(\.executions).reduce(0, +)) | \(rs.map(\.cpu).reduce(0, +)) | \(last.commit) | \(last.ended) |")
        }
        return lines.joined(separator: "\n")
    }

    @Test func everyTargetHasARecordedRound() throws {
        let fuzzed = Set(try Self.rounds().filter { $0.executions > 0 }.map(\.target))
        for t in FuzzTarget.all { #expect(fuzzed.contains(t.name), "fuzz/rounds.tsv has no round of '\(t.name)' with executions") }
    }

    @Test func securityTotalsAreTheRoundsSums() throws {
        let doc = try String(contentsOf: Self.root.appendingPathComponent("docs/SECURITY.md"), encoding: .utf8)
        let start = try #require(doc.range(of: "<!-- fuzz-totals: fuzz/totals.sh writes this table from fuzz/rounds.tsv -->\n"))
        let end = try #require(doc.range(of: "\n<!-- /fuzz-totals -->", range: start.upperBound..<doc.endIndex))
        #expect(String(doc[start.upperBound..<end.lowerBound]) == Self.totals(try Self.rounds()),
                "docs/SECURITY.md's fuzz totals differ from fuzz/rounds.tsv's rows: run fuzz/totals.sh and paste its table")
    }
}
