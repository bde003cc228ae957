import Foundation
import MLToolCore

/// Reads a line-oriented table (CSV, TSV, JSON Lines) whole, refusing it as soon as one line is longer than
/// `InputLimits.maxLineBytes`: a 1 GB line costs at most that many bytes of reading and memory, not the file.
public enum TableFile {
    /// The file's bytes, or `DataError.lineTooLong` naming the first line over `maxLineBytes` (1-based) and the byte
    /// offset where it starts.
    public static func read(_ path: String, maxLineBytes: Int = InputLimits.maxLineBytes) throws -> [UInt8] {
        guard let f = fopen(path, "rb") else {
            throw DataError.cannotRead(file: path, reason: String(cString: strerror(errno)))
        }
        defer { fclose(f) }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        // Room for the whole file up front when it is that small, else for the longest line allowed (a longer one is
        // refused before the array would have to grow): no doubling copies, and a bounded reservation.
        var info = stat()
        if fstat(fileno(f), &info) == 0, info.st_size > 0 {
            out.reserveCapacity(Int(min(Int64(info.st_size), Int64(maxLineBytes) + Int64(chunk.count))))
        }
        var line = 1, lineStart = 0   // the current line's number and first byte
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n > 0 {
                let from = out.count
                out.append(contentsOf: chunk[0..<n])
                try out.withUnsafeBytes { b in
                    guard let base = b.baseAddress else { return }
                    var i = from
                    while i < b.count, let p = memchr(base + i, 0x0A, b.count - i) {
                        let end = UnsafeRawPointer(p) - base
                        if end - lineStart > maxLineBytes {
                            throw DataError.lineTooLong(file: path, line: line, offset: lineStart, limit: maxLineBytes)
                        }
                        line += 1; lineStart = end + 1; i = end + 1
                    }
                }
                if out.count - lineStart > maxLineBytes {
                    throw DataError.lineTooLong(file: path, line: line, offset: lineStart, limit: maxLineBytes)
                }
            }
            if n < chunk.count {
                if ferror(f) != 0 { throw DataError.cannotRead(file: path, reason: String(cString: strerror(errno))) }
                return out
            }
        }
    }
}
