import MLToolCore
import MLToolTrain

/// Parameter values written as text (command-line flags), parsed where the parameters live. A refusal is
/// `PipelineError.invalidParameter`, which `mltool` reports as a usage error (exit 64) of the command.
public enum ParameterText {
    /// `--l2 auto|X`: auto, or a finite strength ≥ 0.
    public static func l2(_ text: String?) throws -> LogisticRegressionOptions.L2 {
        let text = text ?? "auto"
        if text == "auto" { return .auto }
        guard let v = Double(text), v >= 0, v.isFinite else {
            throw PipelineError.invalidParameter(name: "l2", reason: "--l2 must be auto or a number ≥ 0")
        }
        return .fixed(v)
    }

    /// `--memory SIZE`: bytes, from "2G", "512M", … (`MemoryBudget.parse`).
    public static func memory(_ text: String) throws -> Int {
        guard let v = MemoryBudget.parse(text) else {
            throw PipelineError.invalidParameter(name: "memory", reason: "--memory: '\(text)', expected a size such as 2G, 512M or a number of bytes")
        }
        return v
    }

    /// `--ngrams MIN-MAX` and the like: N or MIN-MAX with 1 ≤ MIN ≤ MAX ≤ 32, as [MIN, MAX]; nil for nil.
    public static func range(_ text: String?, option: String) throws -> [Int]? {
        guard let text else { return nil }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
        guard (1...2).contains(parts.count), let lo = parts[0], let hi = parts.count == 2 ? parts[1] : lo,
              lo >= 1, lo <= hi, hi <= 32 else {
            throw PipelineError.invalidParameter(name: option, reason: "\(option): '\(text)', expected N or MIN-MAX with 1 ≤ MIN ≤ MAX ≤ 32")
        }
        return [lo, hi]
    }
}
