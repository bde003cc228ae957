import Foundation

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

/// `s` as a JSON string literal.
func jsonString(_ s: String) -> String {
    let e = JSONEncoder()
    e.outputFormatting = [.withoutEscapingSlashes]
    let data = (try? e.encode(s)) ?? Data("\"\"".utf8)
    return String(decoding: data, as: UTF8.self)
}
