import Foundation
import Glibc
import Testing
import MLToolCore
import MLToolFormat
import MLToolTestSupport

/// Hostile inputs that claim huge sizes (issue 19, item 5; docs/SECURITY.md, "Resource limits"): each is built here,
/// given to the real `mltool` command a user would run on it, and must end as the documented error (exit 65 naming
/// the file and the place) within the budget below.
///
/// Budget: 1 s of CPU time (user + system), 256 MB peak RSS, and 5 s of wall time. The issue asks for 1 s; wall time
/// on the shared 2-core CI machine also counts time spent waiting for a core, so the 1 s is asserted on CPU time
/// and wall time gets a margin.
///
/// Measuring: `mltool` is started with `posix_spawn` and reaped with `wait4` by `Tests/Fixtures/limits/measure.py`,
/// which this test starts the same way; the numbers are the child's own rusage (the HDF5 sandbox's included, which
/// `mltool` reaps), whatever other tests run beside it. The trampoline is there because Linux keeps, in ru_maxrss,
/// the peak RSS of the image a process replaced at exec: spawned straight from this test process, `mltool` would
/// report at least this process's own peak (hundreds of MB in a full `swift test` run).
@Suite(.serialized) struct ResourceLimitTests {
    static let cpuLimit = 1.0, wallLimit = 5.0, rssLimitBytes = 256 << 20
    static let trampoline = SharedDatasets.repository.appendingPathComponent("Tests/Fixtures/limits/measure.py").path

    struct Run {
        var status: Int32       // exit status, or 128 + signal
        var stdout: String
        var stderr: String
        var wall: Double
        var cpu: Double
        var maxRSSBytes: Int
    }

    /// Runs `mltool args` (in the test process's directory; give paths whole) through the trampoline and returns
    /// its exit status, output and cost; nil when python3 cannot run the trampoline.
    static func measure(_ args: [String], in dir: TempDir, env: [String: String] = [:]) throws -> Run? {
        let tool = Tool.path ?? "/nonexistent"
        let out = dir.file("stdout.txt"), err = dir.file("stderr.txt"), report = dir.file("report.json")
        try? FileManager.default.removeItem(atPath: report)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var environment = ProcessInfo.processInfo.environment
        for (k, v) in env { environment[k] = v }
        let command = ["/usr/bin/env", "python3", trampoline, report, tool] + args
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EINVAL) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        guard status == 0, let data = FileManager.default.contents(atPath: report),
              let r = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let code = r["status"] as? Int, let cpu = r["cpu"] as? Double, let wall = r["wall"] as? Double,
              let rss = r["maxrss_kb"] as? Int else { return nil }
        return Run(status: Int32(code),
                   stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                   stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "",
                   wall: wall, cpu: cpu, maxRSSBytes: rss * 1024)  // Linux reports kilobytes
    }

    /// Runs the command and checks the exit status, that stderr holds every one of `mentions`, and the budget.
    @discardableResult
    static func expectRefused(_ name: String, _ args: [String], in dir: TempDir, status: Int32 = 65, mentions: [String],
                              env: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation) throws -> Run? {
        guard let r = try measure(args, in: dir, env: env) else {
            Oracles.missing("python3 could not run \(trampoline)", sourceLocation: sourceLocation)
            return nil
        }
        print(String(format: "ResourceLimitTests: %@: exit %d, %.3f s CPU, %.3f s wall, %.1f MB peak RSS: %@", name, r.status,
                     r.cpu, r.wall, Double(r.maxRSSBytes) / 1_048_576, r.stderr.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(r.status == status, "\(name): \(r.stderr)", sourceLocation: sourceLocation)
        for m in mentions { #expect(r.stderr.contains(m), "\(name): stderr lacks '\(m)': \(r.stderr)", sourceLocation: sourceLocation) }
        #expect(r.cpu < cpuLimit, "\(name): \(r.cpu) s of CPU time", sourceLocation: sourceLocation)
        #expect(r.wall < wallLimit, "\(name): \(r.wall) s of wall time", sourceLocation: sourceLocation)
        #expect(r.maxRSSBytes < rssLimitBytes, "\(name): peak RSS \(r.maxRSSBytes) bytes", sourceLocation: sourceLocation)
        return r
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    // MARK: images

    /// A 1×1 PNG whose IHDR is then made to claim `width` × `height` (CRCs valid, IDAT tiny).
    static func png(claiming width: Int, _ height: Int) -> [UInt8] {
        var b = TestPNG.solid(width: 1, height: 1, rgb: (10, 20, 30), noiseSeed: 1)
        let ihdr = TestPNG.chunk("IHDR", TestPNG.be32(UInt32(width)) + TestPNG.be32(UInt32(height)) + [8, 2, 0, 0, 0])
        b.replaceSubrange(8..<(8 + ihdr.count), with: ihdr)
        return b
    }

    @Test func pngHeaderOf100000By100000IsRefusedBeforeDecoding() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        try Self.write(Self.png(claiming: 100_000, 100_000), to: dir.file("huge.png"))
        try Self.expectRefused("PNG 100000×100000", ["predict", dir.file("tiny.bin"), dir.file("huge.png")], in: dir,
                               mentions: ["huge.png", "100000×100000", "over the limit of 64000000"])
    }

    /// JPEG segments for an 8×8 (or claimed) grayscale image: SOI, DQT, SOF (`sof` = 0xC0 baseline, 0xC2
    /// progressive) and a DC Huffman table with the single code `0` for category 0.
    static func jpegHead(sof: UInt8, width: Int, height: Int) -> [UInt8] {
        func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] {
            [0xFF, marker, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
        }
        var b: [UInt8] = [0xFF, 0xD8]
        b += segment(0xDB, [0x00] + [UInt8](repeating: 1, count: 64))
        b += segment(sof, [8, UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF),
                           1, 1, 0x11, 0])
        b += segment(0xC4, [0x00, 1] + [UInt8](repeating: 0, count: 15) + [0])                  // DC table 0
        b += segment(0xC4, [0x10, 1] + [UInt8](repeating: 0, count: 15) + [0])                  // AC table 0 (EOB)
        return b
    }

    static func sos(spectral: ClosedRange<UInt8>, ah: UInt8, al: UInt8) -> [UInt8] {
        [0xFF, 0xDA, 0, 8, 1, 1, 0x00, spectral.lowerBound, spectral.upperBound, ah << 4 | al]
    }

    @Test func jpegHeaderOf65500By65500IsRefusedBeforeDecoding() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let jpeg = Self.jpegHead(sof: 0xC0, width: 65_500, height: 65_500) + Self.sos(spectral: 0...63, ah: 0, al: 0)
            + [UInt8](repeating: 0, count: 64) + [0xFF, 0xD9]
        try Self.write(jpeg, to: dir.file("huge.jpg"))
        try Self.expectRefused("JPEG 65500×65500", ["predict", dir.file("tiny.bin"), dir.file("huge.jpg")], in: dir,
                               mentions: ["huge.jpg", "65500×65500", "over the limit of 64000000"])
    }

    @Test func progressiveJPEGWith65535ScansIsRefused() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        // One DC first scan (the single block's DC difference: category 0, code `0`, padded with ones), then 65,534
        // DC refinement scans of one bit each (libjpeg warns that the progression repeats itself, and goes on).
        var jpeg = Self.jpegHead(sof: 0xC2, width: 8, height: 8) + Self.sos(spectral: 0...0, ah: 0, al: 1) + [0x7F]
        jpeg.reserveCapacity(jpeg.count + 65_534 * 11 + 2)
        for _ in 1..<65_535 { jpeg += Self.sos(spectral: 0...0, ah: 1, al: 0) + [0x7F] }
        jpeg += [0xFF, 0xD9]
        try Self.write(jpeg, to: dir.file("scans.jpg"))
        try Self.expectRefused("JPEG 65535 scans", ["predict", dir.file("tiny.bin"), dir.file("scans.jpg")], in: dir,
                               mentions: ["scans.jpg", "more than 500 scans"])
    }

    /// A zlib stream of `count` zero bytes with fixed Huffman codes: a literal 0, then matches of length 258 at
    /// distance 1 (13 bits for 258 bytes: 1 GB takes 6.5 MB).
    static func zlibZeros(matches: Int) -> (stream: [UInt8], count: Int) {
        var out: [UInt8] = [0x78, 0x01]
        out.reserveCapacity(matches * 13 / 8 + 16)
        var acc: UInt64 = 0, bits = 0
        func put(_ value: UInt64, _ n: Int) {          // LSB first
            acc |= value << UInt64(bits); bits += n
            while bits >= 8 { out.append(UInt8(truncatingIfNeeded: acc)); acc >>= 8; bits -= 8 }
        }
        func putCode(_ code: UInt64, _ n: Int) {       // Huffman codes go most significant bit first
            var r: UInt64 = 0
            for i in 0..<n { r |= ((code >> UInt64(i)) & 1) << UInt64(n - 1 - i) }
            put(r, n)
        }
        put(1, 1); put(1, 2)                          // BFINAL, BTYPE = 01 (fixed codes)
        putCode(0x30, 8)                              // literal 0
        for _ in 0..<matches { putCode(0xC5, 8); putCode(0, 5) }  // length 258 (symbol 285), distance 1
        putCode(0, 7)                                 // end of block
        if bits > 0 { put(0, 8 - bits) }
        let count = 1 + 258 * matches
        let adler = UInt32(count % 65521) << 16 | 1   // a = 1 + Σ 0, b = Σ a = count
        out += TestPNG.be32(adler)
        return (out, count)
    }

    @Test func pngWithZTXtOf1GBIsNotInflated() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        let (z, count) = Self.zlibZeros(matches: 4_161_791)
        #expect(count >= 1 << 30)
        var png = TestPNG.solid(width: 8, height: 8, rgb: (200, 30, 30), noiseSeed: 3)
        png.insert(contentsOf: TestPNG.chunk("zTXt", Array("Comment".utf8) + [0, 0] + z), at: 8 + 25)  // after IHDR
        try Self.write(png, to: dir.file("bomb.png"))
        // libpng must not inflate the text: the image itself is fine, so the prediction succeeds.
        let r = try Self.expectRefused("PNG zTXt of 1 GB", ["predict", dir.file("tiny.bin"), dir.file("bomb.png")], in: dir, status: 0,
                                       mentions: [])
        #expect(r?.stdout.contains("bomb.png") != false)
    }

    /// A chunk whose length field claims far more than the file holds (found by the `image` fuzz target: a 117-byte
    /// PNG whose zTXt claimed 1.76 GB took 1.8 GB of memory and 2 s, libpng allocating the claim before reading):
    /// refused before libpng sees it, naming the chunk, for `predict` (decoding) and `train` (sizes from headers).
    @Test func pngChunkClaimingGigabytesIsRefusedBeforeLibpngAllocatesIt() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("tiny.bin"))
        for (type, claim) in [("zTXt", 1_761_607_680), ("iTXt", 2_000_000_000), ("sPLT", Int(Int32.max))] {
            var png = TestPNG.solid(width: 8, height: 8, rgb: (20, 130, 30), noiseSeed: 5)
            // After IHDR: the chunk's header and a few bytes of its data, then the rest of the file.
            png.insert(contentsOf: TestPNG.be32(UInt32(claim)) + Array(type.utf8) + Array("Comment".utf8), at: 8 + 25)
            try Self.write(png, to: dir.file("lie.png"))
            try Self.expectRefused("PNG \(type) claiming \(claim) bytes", ["predict", dir.file("tiny.bin"), dir.file("lie.png")],
                                   in: dir, mentions: ["lie.png", "truncated PNG", "the \(type) chunk at byte 33", "claims \(claim) bytes"])
        }
    }

    // MARK: models

    /// Protocol buffer encoding, enough for a hand-made ONNX file.
    enum Proto {
        static func varint(_ v: UInt64) -> [UInt8] {
            var v = v, out = [UInt8]()
            while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
            return out + [UInt8(v)]
        }
        static func field(_ number: Int, varint v: UInt64) -> [UInt8] { varint(UInt64(number << 3)) + varint(v) }
        static func field(_ number: Int, bytes: [UInt8]) -> [UInt8] {
            varint(UInt64(number << 3 | 2)) + varint(UInt64(bytes.count)) + bytes
        }
        static func field(_ number: Int, string: String) -> [UInt8] { field(number, bytes: Array(string.utf8)) }
    }

    @Test func onnxTensorWhoseDimsMultiplyPast2To63IsRefused() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        // TensorProto: dims 2^32, 2^32 (product 2^64), data_type float, name, 4 bytes of raw_data.
        let tensor = Proto.field(1, varint: 1 << 32) + Proto.field(1, varint: 1 << 32) + Proto.field(2, varint: 1)
            + Proto.field(8, string: "huge") + Proto.field(9, bytes: [0, 0, 0, 0])
        let y = Proto.field(1, string: "y")
        let node = Proto.field(1, string: "huge") + Proto.field(2, string: "y") + Proto.field(4, string: "Identity")
        let graph = Proto.field(1, bytes: node) + Proto.field(2, string: "g") + Proto.field(5, bytes: tensor)
            + Proto.field(12, bytes: y)
        let model = Proto.field(1, varint: 8) + Proto.field(7, bytes: graph)
            + Proto.field(8, bytes: Proto.field(1, string: "") + Proto.field(2, varint: 13))
        try Self.write(model, to: dir.file("huge.onnx"))
        try Self.expectRefused("ONNX dims past 2^63", ["import", dir.file("huge.onnx"), "-o", dir.file("out.bin")], in: dir,
                               mentions: ["huge.onnx", "initializer 'huge' dims", "4294967296, 4294967296"])
        #expect(!FileManager.default.fileExists(atPath: dir.file("out.bin")))
    }

    /// protobuf-c unpacks nested messages by recursion without a limit: before ProtobufWire, this 1.6 MB file of
    /// Core ML pipelines nested 100,000 deep (Model.pipeline = 202 → Pipeline.models = 1 → Model …) overflowed the
    /// stack (SIGSEGV, exit 139). Built inside-out, each level's two length prefixes sized before they are written.
    @Test func coreMLPipelinesNested100000DeepAreRefused() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        var lengths = [Int](), size = 0
        for _ in 0..<100_000 {
            let models = 1 + Proto.varint(UInt64(size)).count + size
            lengths.append(size)
            lengths.append(models)
            size = 2 + Proto.varint(UInt64(models)).count + models
        }
        var bytes = Proto.field(1, varint: 4)
        bytes.reserveCapacity(bytes.count + size)
        for level in stride(from: lengths.count - 1, to: 0, by: -2) {
            bytes += Proto.varint(202 << 3 | 2) + Proto.varint(UInt64(lengths[level]))
                + Proto.varint(1 << 3 | 2) + Proto.varint(UInt64(lengths[level - 1]))
        }
        try Self.write(bytes, to: dir.file("deep.mlmodel"))
        try Self.expectRefused("Core ML pipelines 100000 deep", ["import", dir.file("deep.mlmodel"), "-o", dir.file("out.bin")],
                               in: dir, mentions: ["deep.mlmodel: byte ", "Model.pipeline.models[0].pipeline.models[0].pipeline.…",
                                                   "refused: messages are nested more than 100 deep"])
        #expect(!FileManager.default.fileExists(atPath: dir.file("out.bin")))
    }

    @Test func kerasDatasetClaiming2To40ElementsIsRefused() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        let script = SharedDatasets.repository.appendingPathComponent("Tests/Fixtures/limits/make_huge_h5.py").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", script, dir.file("huge.h5")]
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0, FileManager.default.fileExists(atPath: dir.file("huge.h5")) else {
            return Oracles.missing("python3 with h5py (Tests/Fixtures/limits/make_huge_h5.py) could not write huge.h5")
        }
        try Self.expectRefused("HDF5 2^40 elements", ["import", dir.file("huge.h5"), "-o", dir.file("out.bin")], in: dir,
                               mentions: ["huge.h5", "kernel:0", "found 1099511627776"])
        #expect(!FileManager.default.fileExists(atPath: dir.file("out.bin")))
    }

    /// The header's length and offset fields (docs/FORMAT.md section 2), each set to 2^63 with the header and file
    /// checksums made valid again, so that only the size is wrong; `says` is what the error must show.
    @Test(arguments: [(16, "file_length", "expected 9223372036854775808"),
                      (24, "metadata_offset", "metadata: bytes [9223372036854775808"),
                      (32, "metadata_length", "metadata_length: 9223372036854775808 exceeds"),
                      (40, "data_offset", "data: bytes [9223372036854775808"),
                      (48, "data_length", "+ 9223372036854775808) run past"),
                      (56, "trailer_offset", "trailer_offset is 9223372036854775808"),
                      (64, "tensor_count", "tensor_count: 9223372036854775808 exceeds")])
    func nativeLengthFieldOf2To63IsRefused(offset: Int, field: String, says: String) throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("good.bin"))
        var b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.file("good.bin"))))
        func setU64(_ at: Int, _ v: UInt64) { for i in 0..<8 { b[at + i] = UInt8(truncatingIfNeeded: v >> UInt64(8 * i)) } }
        setU64(offset, 1 << 63)
        setU64(120, XXH64.hash(Array(b[0..<120])))
        setU64(b.count - 8, XXH64.hash(Array(b[0..<(b.count - 8)])))
        try Self.write(b, to: dir.file("bad.bin"))
        try Self.expectRefused("native \(field) = 2^63", ["info", dir.file("bad.bin")], in: dir, mentions: ["bad.bin", says])
    }

    /// The tensor table's numbers (docs/FORMAT.md section 3: each tensor's `offset`, `length` and `shape` in the
    /// metadata JSON) set to 2^63, 2^64 − 1 or a shape whose product overflows, with the file rebuilt around the new
    /// metadata so that every checksum and section is valid again: only the number is wrong.
    @Test(arguments: [("\"length\":", "9223372036854775808"), ("\"length\":", "18446744073709551615"),
                      ("\"offset\":", "9223372036854775808"), ("\"offset\":", "9223372036854775807"),
                      ("\"shape\":", "[4611686018427387904,4]"), ("\"shape\":", "[-1]")])
    func nativeTensorTableNumbersPast2To63AreRefused(key: String, value: String) throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        try ModelFile.write(Make.tinyClassifier(), to: dir.file("good.bin"))
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.file("good.bin"))))
        func u64(_ at: Int) -> Int { (0..<8).reduce(0) { $0 | Int(b[at + $1]) << (8 * $1) } }
        let metadata = String(decoding: b[128..<(128 + u64(32))], as: UTF8.self)
        // The first tensor's entry: replace the number (or array) after `key`.
        let table = try #require(metadata.range(of: "\"tensors\":["))
        let at = try #require(metadata.range(of: key, range: table.upperBound..<metadata.endIndex))
        var end = at.upperBound
        if metadata[end] == "[" { end = try #require(metadata[end...].firstIndex(of: "]")); end = metadata.index(after: end) } else {
            while metadata[end].isNumber || metadata[end] == "-" { end = metadata.index(after: end) }
        }
        let data = Array(b[u64(40)..<(u64(40) + u64(48))])
        func rebuilt(_ number: String) -> [UInt8] {
            let edited = Array((metadata[..<at.upperBound] + number + metadata[end...]).utf8)
            let dataOffset = (128 + edited.count + 63) & ~63
            var out = Array(b[0..<128]) + edited + [UInt8](repeating: 0, count: dataOffset - 128 - edited.count) + data
            func setU64(_ at: Int, _ v: UInt64) { for i in 0..<8 { out[at + i] = UInt8(truncatingIfNeeded: v >> UInt64(8 * i)) } }
            setU64(16, UInt64(out.count + 16)); setU64(32, UInt64(edited.count)); setU64(40, UInt64(dataOffset))
            setU64(56, UInt64(out.count)); setU64(72, XXH64.hash(edited))
            setU64(120, XXH64.hash(Array(out[0..<120])))
            out += Array("MLTEND\r\n".utf8) + [UInt8](repeating: 0, count: 8)
            setU64(out.count - 8, XXH64.hash(Array(out[0..<(out.count - 8)])))
            return out
        }
        // The surgery itself is sound: with the original number the rebuilt file is the original.
        #expect(rebuilt(String(metadata[at.upperBound..<end])) == b)
        try Self.write(rebuilt(value), to: dir.file("bad.bin"))
        try Self.expectRefused("native tensor \(key) \(value)", ["info", dir.file("bad.bin")], in: dir,
                               mentions: ["bad.bin", String(key.dropFirst().prefix(while: { $0 != "\"" }))])
    }

    // MARK: data

    @Test func csvLineOf1GBIsRefusedWithoutReadingIt() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        // A header line, then one line of 1 GiB (a sparse file: zero bytes, then ",a\n").
        let path = dir.file("big.csv")
        let header = Array("text,label\n".utf8), tail = Array(",a\n".utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0)
        defer { close(fd) }
        let size = header.count + (1 << 30) + tail.count
        #expect(ftruncate(fd, off_t(size)) == 0)
        #expect(pwrite(fd, header, header.count, 0) == header.count)
        #expect(pwrite(fd, tail, tail.count, off_t(size - tail.count)) == tail.count)
        try Self.expectRefused("CSV line of 1 GB", ["train", dir.file("big.csv"), "-o", dir.file("out.bin")], in: dir,
                               mentions: ["big.csv:2:", "byte 11", "MLTOOL_MAX_LINE_BYTES"])
        // The limit is settable: a small one refuses an ordinary line too.
        try Self.write(Array("text,label\nsome words here,a\nother words,b\n".utf8), to: dir.file("small.csv"))
        try Self.expectRefused("CSV line over MLTOOL_MAX_LINE_BYTES=12", ["train", dir.file("small.csv"), "-o", dir.file("out.bin")], in: dir,
                               mentions: ["small.csv:2:", "longer than 12 bytes"], env: ["MLTOOL_MAX_LINE_BYTES": "12"])
    }

    @Test func jsonNested100000DeepIsRefused() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        let deep = Array(String(repeating: "[", count: 100_000).utf8) + Array(String(repeating: "]", count: 100_000).utf8)
        // A word tagger's JSON, and a Create ML annotation file in a photo folder.
        try Self.write(deep, to: dir.file("tags.json"))
        try Self.expectRefused("tagger JSON 100000 deep", ["train", dir.file("tags.json"), "-o", dir.file("out.bin")], in: dir,
                               mentions: ["tags.json", "byte 512", "nesting deeper than 512"])
        try FileManager.default.createDirectory(atPath: dir.file("photos"), withIntermediateDirectories: true)
        try Self.write(Array("[{\"image\": \"a.png\", \"annotations\": ".utf8) + deep + Array("}]".utf8),
                       to: dir.file("photos/annotations.json"))
        try Self.expectRefused("annotation JSON 100000 deep", ["train", dir.file("photos"), "--task", "detect",
                               "-o", dir.file("out.bin")], in: dir, mentions: ["annotations.json", "byte 545", "nesting deeper than 512"])
    }
}
