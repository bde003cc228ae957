import Foundation
import MLToolCore
import MLToolTrain

/// `mltool bench --head ROWSxCOLS [--memory SIZE] [--json]`: the image head's fit on synthetic rows
/// (`HeadBenchmark`), in memory or, past the budget, out of core, with its scratch file in $TMPDIR. bench/run.py's
/// scale part runs it on 2,000,000 × 1,280 rows and on the largest size the in-memory path fits.
public enum HeadScaleBenchmark {
    /// Runs the benchmark and returns its report: one JSON object, or lines for people.
    public static func report(shape: String, memory: String?, json: Bool) throws -> String {
        guard let (rows, cols) = HeadBenchmark.parseShape(shape) else {
            throw PipelineError.invalidParameter(name: "head", reason: "--head: '\(shape)', expected ROWSxCOLS such as 2000000x1280")
        }
        let budget = try memory.map { try ParameterText.memory($0) } ?? MemoryBudget.machineDefault()
        let r = try HeadBenchmark.run(rows: rows, cols: cols, budget: budget, directory: NSTemporaryDirectory())
        if json {
            return String(format: "{\"rows\": %d, \"cols\": %d, \"classes\": %d, \"memory_budget_bytes\": %d, \"out_of_core\": %@, "
                          + "\"fill_seconds\": %.3f, \"standardize_seconds\": %.3f, \"best_pass_seconds\": %.3f, "
                          + "\"mean_pass_seconds\": %.3f, \"passes\": %d, \"peak_rss_bytes\": %d}",
                          r.rows, r.cols, r.classes, budget, r.outOfCore ? "true" : "false", r.fillSeconds,
                          r.standardizeSeconds, r.bestPassSeconds, r.meanPassSeconds, r.passes, r.peakRSSBytes)
        }
        let gib = Double(r.rows) * Double(r.cols) * 4 / Double(1 << 30)
        return """
            head on \(r.rows) × \(r.cols) synthetic rows (\(r.classes) classes, \(String(format: "%.2f", gib)) GiB of float32), \
            \(r.outOfCore ? "out of core" : "in memory") under a \(budget >> 20) MiB budget
            \(String(format: "  rows made      %.1f s", r.fillSeconds))
            \(String(format: "  standardised   %.1f s", r.standardizeSeconds))
            \(String(format: "  one pass       %.2f s best, %.2f s mean of %d (loss + gradient over every row)", r.bestPassSeconds, r.meanPassSeconds, r.passes))
            \(String(format: "  peak RSS       %.0f MiB", Double(r.peakRSSBytes) / Double(1 << 20)))
            """
    }
}
