import Foundation

/// Memory budgets (`mltool train --memory 2G`): the text a user writes, and the default a machine gives.
public enum MemoryBudget {
    /// Bytes from "2G", "512M", "1.5G", "64K", "3T" (powers of 1,024, as Slurm's `--mem`; an optional "B" or "iB"
    /// after the letter) or a plain number of bytes; nil for anything else, for zero and for more than 2^62.
    public static func parse(_ text: String) -> Int? {
        var t = text.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["IB", "B"] where t.hasSuffix(suffix) && t.count > suffix.count { t.removeLast(suffix.count) }
        let units: [Character: Double] = ["K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024,
                                          "T": 1024 * 1024 * 1024 * 1024]
        var scale = 1.0
        if let last = t.last, let u = units[last] { scale = u; t.removeLast() }
        guard !t.isEmpty, t.allSatisfy({ $0.isNumber || $0 == "." }), let v = Double(t), v.isFinite else { return nil }
        let bytes = (v * scale).rounded(.down)
        guard bytes >= 1, bytes <= 0x1p62 else { return nil }
        return Int(bytes)
    }

    /// Half of what this process may use: the machine's memory (`/proc/meminfo` MemTotal) or the cgroup's limit
    /// (v2 `memory.max`, v1 `memory.limit_in_bytes`: a container's or a Slurm job's), whichever is smaller; 4 GiB
    /// where none can be read.
    public static func machineDefault() -> Int {
        var limits = [Int]()
        if let info = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8),
           let line = info.split(separator: "\n").first(where: { $0.hasPrefix("MemTotal:") }),
           let kib = Int(line.split(separator: " ").dropFirst().first ?? "") {
            limits.append(kib * 1024)
        }
        for file in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
            if let text = try? String(contentsOfFile: file, encoding: .utf8),
               let v = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), v > 0 {
                limits.append(v)
            }
        }
        return (limits.min() ?? 8 << 30) / 2
    }
}
