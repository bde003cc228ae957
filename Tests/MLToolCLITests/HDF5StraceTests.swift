import Foundation
import MLToolTestSupport
import Testing

/// Issue 14's acceptance line, as a test: under `strace -f`, the process that reads the `.h5` file (the sandboxed
/// child, the one that installs the seccomp filter) opens no path at all — not even the input, which it inherits
/// open — starts no program and makes no socket; the parent opens the input once.
@Suite struct HDF5StraceTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/keras")

    @Test(.enabled(if: Tool.available && OracleAvailabilityTests.onPath("strace"),
                   "needs MLTOOL_BIN and strace (apt strace; make setup installs it)"))
    func theReaderOpensNothingAndStartsNothing() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let input = Self.fixtures.appendingPathComponent("k3_residual_cnn.h5").path
        let trace = dir.file("trace.txt")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["strace", "-f", "-qq", "-o", trace, "-e", "trace=%file,%process,%network,prctl",
                       Tool.path ?? "/nonexistent", "import", input, "-o", dir.file("out.bin")]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0, "strace mltool import failed")
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
        // The child is the process that installs the seccomp filter.
        let sandboxed = Set(lines.filter { $0.contains("prctl(PR_SET_SECCOMP") }.compactMap { $0.split(separator: " ").first.map(String.init) })
        try #require(sandboxed.count == 1, "expected one sandboxed reader, found \(sandboxed.count)")
        let child = sandboxed.first ?? ""
        let childLines = lines.filter { $0.hasPrefix(child + " ") }
        #expect(childLines.count >= 2)
        let forbidden = ["open(", "openat(", "openat2(", "creat(", "execve(", "execveat(", "socket(", "connect(",
                         "stat(", "newfstatat(", "statx(", "access(", "readlink("]
        for line in childLines {
            #expect(!forbidden.contains { line.contains(" " + $0) }, "the reader made a forbidden call: \(line)")
        }
        // The parent opens the input file (to check it and hand it to the reader), and mltool starts no program.
        #expect(lines.contains { !$0.hasPrefix(child + " ") && $0.contains("openat(") && $0.contains(input) })
        #expect(lines.filter { $0.contains("execve(") }.count == 1, "only strace's own start of mltool")
    }
}
