import Foundation
import MLTool

/// Progress on stderr for long work: on a terminal a bar with count, rate and ETA redrawn in place; otherwise a
/// plain line every few seconds. Silent when `quiet`, and silent for work that ends within ~2 s.
final class Progress: @unchecked Sendable {
    private let label: String
    private let total: Int
    private let quiet: Bool
    private let isTTY = isatty(2) != 0
    private let start = Date()
    private var lastDraw = Date.distantPast
    private var done = 0
    private var drew = false
    private let lock = NSLock()

    init(_ label: String, total: Int, quiet: Bool) {
        self.label = label; self.total = total; self.quiet = quiet
    }

    /// Records `n` more finished items.
    func advance(_ n: Int = 1) {
        lock.lock(); defer { lock.unlock() }
        done += n
        guard !quiet else { return }
        let now = Date()
        let elapsed = now.timeIntervalSince(start)
        guard elapsed > 2, now.timeIntervalSince(lastDraw) >= (isTTY ? 0.2 : 5) else { return }
        lastDraw = now
        draw(elapsed: elapsed)
    }

    private func draw(elapsed: Double) {
        let rate = Double(done) / max(elapsed, 1e-9)
        let eta = rate > 0 ? Double(total - done) / rate : 0
        let fraction = total > 0 ? Double(done) / Double(total) : 1
        if isTTY {
            let width = 28
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            let line = String(format: "\r%@ %@ %d/%d  %.1f/s  ETA %@ ", label, bar, done, total, rate, Progress.clock(eta))
            FileHandle.standardError.write(Data(line.utf8))
        } else {
            let line = String(format: "%@: %d/%d (%.0f%%), %.1f/s, ETA %@\n", label, done, total, fraction * 100, rate,
                              Progress.clock(eta))
            FileHandle.standardError.write(Data(line.utf8))
        }
        drew = true
    }

    /// Ends the bar (a final newline on a terminal).
    func finish() {
        lock.lock(); defer { lock.unlock() }
        if drew && isTTY && !quiet {
            draw(elapsed: Date().timeIntervalSince(start))
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }

    static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}

/// Writes a line to stderr (messages that are not the command's result).
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}


/// Prints a pipeline's events on stderr: warnings always; notes, status lines, progress bars, the feature summary
/// and the optimiser table unless quiet; phase times when MLTOOL_PHASES is set.
final class EventPrinter: @unchecked Sendable {
    private let quiet: Bool
    private var bars: [String: Progress] = [:]
    private let phases = ProcessInfo.processInfo.environment["MLTOOL_PHASES"] != nil
    private let lock = NSLock()

    init(quiet: Bool) { self.quiet = quiet }

    func handle(_ event: PipelineEvent) {
        lock.lock(); defer { lock.unlock() }
        switch event {
        case .warning(let w): note("mltool: warning: \(w)")
        case .note(let n): if !quiet { note("mltool: note: \(n)") }
        case .status(let s): if !quiet { note(s) }
        case let .progress(label, advanced, total):
            let bar = bars[label] ?? Progress(label, total: total, quiet: quiet)
            bars[label] = bar
            bar.advance(advanced)
        case .progressFinished(let label): bars.removeValue(forKey: label)?.finish()
        case .skippedImages(let failures):
            note("mltool: \(failures.count) image\(failures.count == 1 ? "" : "s") skipped:")
            for f in failures.prefix(20) { note("  \(f.description)") }
            if failures.count > 20 { note("  … and \(failures.count - 20) more") }
        case let .skippedDocuments(source, count):
            note("mltool: \(source): \(count) empty document\(count == 1 ? "" : "s") skipped")
        case let .featuresReady(extracted, cached, seconds):
            if !quiet { note(String(format: "features: %d extracted, %d from cache, %.1f s", extracted, cached, seconds)) }
        case .fitStarted: if !quiet { note("  l2        iter        loss   train acc   valid acc   seconds") }
        case .iteration(let r): if !quiet && r.iteration % 10 == 0 { note(Self.row(r)) }
        case .detectorEpoch(let r):
            if !quiet {
                note(String(format: "  epoch %3d/%d  class loss %.4f  box loss %.4f  validation mAP@0.5 %@  %.1f s", r.epoch, r.epochs,
                            r.classLoss, r.boxLoss, r.validationMAP50.map { String(format: "%.4f", $0) } ?? "-", r.elapsed))
            }
        case .taggerEpoch(let r):
            if !quiet {
                note(String(format: "  epoch %3d  train accuracy %.4f  validation accuracy %@  %.1f s", r.epoch, r.trainAccuracy,
                            r.validationAccuracy.map { String(format: "%.4f", $0) } ?? "-", r.seconds))
            }
        case let .phase(name, seconds): if phases { note(String(format: "phase %-12@ %6.1f ms", name, seconds * 1000)) }
        case .inputFailed(let message): note("mltool: error: \(message)")
        }
    }

    /// One line of the optimiser table (printed every 10th iteration); a value that is missing or NaN shows as "-".
    static func row(_ r: IterationRecord) -> String {
        func cell(_ v: Double?, _ format: String) -> String {
            let text = v.flatMap { $0.isNaN ? nil : String(format: format, $0) } ?? "-"
            return String(repeating: " ", count: max(0, 10 - text.count)) + text
        }
        return String(format: "  %-8.0e  %4d  ", r.l2, r.iteration) + cell(r.loss, "%.5f") + "  "
            + cell(r.trainAccuracy, "%.4f") + "  " + cell(r.validationAccuracy, "%.4f") + String(format: "  %7.2f", r.elapsed)
    }
}
