import Foundation

/// What this process holds in memory, from Linux's /proc/self/smaps.
public enum ResidentMemory {
    /// Resident kilobytes of this process's mappings of the file at `path` (every mapping of it, summed); 0 when
    /// it is not mapped, -1 when smaps cannot be read.
    public static func kilobytes(mappedFrom path: String) -> Int {
        // Read to the end: /proc files report a size of 0.
        guard let h = FileHandle(forReadingAtPath: "/proc/self/smaps") else { return -1 }
        let smaps = String(decoding: h.readDataToEndOfFile(), as: UTF8.self)
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var inside = false, kb = 0
        for line in smaps.split(separator: "\n") {
            // A mapping's first line: start-end perms offset dev inode [path]; then "Key: value kB" lines.
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            if let first = fields.first, !first.hasSuffix(":") {
                inside = fields.count == 6 && fields[5].trimmingCharacters(in: .whitespaces) == real
            } else if inside, fields.first == "Rss:", fields.count >= 2, let v = Int(fields[1]) {
                kb += v
            }
        }
        return kb
    }
}
