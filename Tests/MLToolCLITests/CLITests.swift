import Foundation
import MLToolTestSupport
import Testing
import MLToolCore
import MLToolEngine
import MLToolFormat
import MLTool

@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct CLIBasicsTests {
    @Test func helpListsEveryCommandAndVersionPrints() throws {
        let help = try Tool.run(["--help"])
        #expect(help.status == 0)
        for c in ["import", "train", "eval", "quantize", "info", "predict", "run", "bench"] {
            #expect(help.stdout.contains("\n  \(c) "), "help lists \(c)")
        }
        let v = try Tool.run(["--version"])
        #expect(v.status == 0 && v.stdout.hasPrefix("mltool "))
        let h = try Tool.run(["help", "predict"])
        #expect(h.status == 0 && h.stdout.contains("USAGE: mltool predict MODEL INPUT..."))
        let h2 = try Tool.run(["predict", "--help"])
        #expect(h2.stdout == h.stdout)
    }

    @Test func usageErrorsExit64WithTheCommandsUsage() throws {
        let r = try Tool.run(["predict", "--top", "x", "m.bin", "a.png"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("mltool: error: --top: 'x' is not an integer"))
        #expect(r.stderr.contains("USAGE: mltool predict"))
        let u = try Tool.run(["frobnicate"])
        #expect(u.status == 64 && u.stderr.contains("unknown command 'frobnicate'"))
        let o = try Tool.run(["info", "--bogus", "x"])
        #expect(o.status == 64 && o.stderr.contains("unknown option '--bogus'"))
    }

    @Test func missingAndBadInputsExit66And65() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let missing = try Tool.run(["info", dir.file("nope.bin")])
        #expect(missing.status == 66 && missing.stderr.contains("nope.bin"))
        try Data("hello, not a model\n".utf8).write(to: URL(fileURLWithPath: dir.file("text.bin")))
        let bad = try Tool.run(["info", dir.file("text.bin")])
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("text.bin: not a model"))
    }

    /// Without a default extractor, `train` names each place it looked once: a binary two folders below / used to
    /// list /models/efficientnet-lite0.bin four times (its parents stop climbing at /).
    @Test func missingExtractorNamesEachPlaceOnce() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let copy = dir.file("bin/mltool")
        try FileManager.default.createDirectory(atPath: dir.file("bin"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try #require(Tool.path), toPath: copy)
        for label in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: dir.file("photos/\(label)"), withIntermediateDirectories: true)
            for k in 0..<3 {
                let image = RGBImage(width: 8, height: 8, pixels: [UInt8](repeating: UInt8(40 * k), count: 192))
                try Data(try PNGEncoder.encode(image)).write(to: URL(fileURLWithPath: dir.file("photos/\(label)/\(k).png")))
            }
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: copy)
        p.arguments = ["train", "photos", "-q"]
        p.currentDirectoryURL = URL(fileURLWithPath: dir.path)
        p.environment = ProcessInfo.processInfo.environment.filter { $0.key != "MLTOOL_EXTRACTOR" }
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let looked = try #require(text.range(of: "looked in: ").map { text[$0.upperBound...].prefix { $0 != ")" } }, "\(text)")
        let places = looked.components(separatedBy: ", ")
        #expect(p.terminationStatus == 66 && places.count == Set(places).count && places.contains("/models/efficientnet-lite0.bin"), "\(text)")
    }
}

@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct CLIModelTests {
    @Test func infoPredictBenchRunOnAModelBuiltHere() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let model = Make.tinyClassifier()
        try ModelFile.write(model, to: dir.file("m.bin"))
        try Data(TestPNG.solid(width: 16, height: 16, rgb: (220, 20, 20), noiseSeed: 1)).write(to: URL(fileURLWithPath: dir.file("red.png")))

        let info = try Tool.run(["info", dir.file("m.bin")])
        #expect(info.status == 0)
        #expect(info.stdout.contains("task          imageClassifier"))
        #expect(info.stdout.contains("input         input [-1, 8, 8, 3]"))
        #expect(info.stdout.contains("labels        2: \"blue\", \"red\""))
        #expect(info.stdout.contains("output        logits [1, 2] (logits)"))
        #expect(info.stdout.contains("parameters    20 in 2 tensors"))
        let infoJSON = try Tool.run(["info", dir.file("m.bin"), "--json"])
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(infoJSON.stdout.utf8)) as? [String: Any])
        #expect(obj["task"] as? String == "imageClassifier")
        #expect(obj["parameters"] as? Int == 20)

        let predict = try Tool.run(["predict", dir.file("m.bin"), dir.file("red.png"), "--json", "--top", "2"])
        #expect(predict.status == 0, "\(predict.stderr)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(predict.stdout.utf8)) as? [String: Any])
        let top = try #require(line["top"] as? [[String: Any]])
        #expect(line["file"] as? String == dir.file("red.png"))
        #expect(top.count == 2 && top[0]["label"] as? String == "red" && top[0]["index"] as? Int == 1)
        let p = top.compactMap { $0["probability"] as? Double }
        #expect(abs(p.reduce(0, +) - 1) < 1e-5 && p[0] > p[1])

        // A folder stands for the files below it, sorted; an empty one is an error naming it.
        try FileManager.default.createDirectory(atPath: dir.file("pics/sub"), withIntermediateDirectories: true)
        try Data(TestPNG.solid(width: 16, height: 16, rgb: (20, 20, 220), noiseSeed: 2)).write(to: URL(fileURLWithPath: dir.file("pics/sub/blue.png")))
        try Data(TestPNG.solid(width: 16, height: 16, rgb: (220, 20, 20), noiseSeed: 3)).write(to: URL(fileURLWithPath: dir.file("pics/a-red.png")))
        let folder = try Tool.run(["predict", dir.file("m.bin"), dir.file("pics") + "/", "--json", "--top", "1"])
        #expect(folder.status == 0, "\(folder.stderr)")
        let rows = folder.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.compactMap { $0["file"] as? String } == [dir.file("pics/a-red.png"), dir.file("pics/sub/blue.png")])
        #expect(rows.compactMap { ($0["top"] as? [[String: Any]])?.first?["label"] as? String } == ["red", "blue"])
        try FileManager.default.createDirectory(atPath: dir.file("empty"), withIntermediateDirectories: true)
        let empty = try Tool.run(["predict", dir.file("m.bin"), dir.file("empty")])
        #expect(empty.status == 66 && empty.stderr.contains("empty: the folder holds no files to classify"))

        let bench = try Tool.run(["bench", dir.file("m.bin"), "--batch", "4", "--seconds", "0.2", "--json"])
        #expect(bench.status == 0)
        let b = try #require(try JSONSerialization.jsonObject(with: Data(bench.stdout.utf8)) as? [String: Any])
        #expect((b["images_per_second"] as? Double ?? 0) > 0)
        #expect(b["batch"] as? Int == 4)
        #expect(["portable", "avx2", "avx2-vnni", "avx512", "avx512-vnni"].contains(b["cpu_level"] as? String ?? ""))
        // Resident memory (Linux): before the model was read, the peak, the random inputs, and what the model
        // added, consistent.
        let before = try #require(b["resident_before_load_bytes"] as? Int), peak = try #require(b["peak_resident_bytes"] as? Int)
        let inputs = try #require(b["inputs_resident_bytes"] as? Int)
        #expect(before > 1 << 20 && peak >= before && inputs >= 0
                && b["model_resident_bytes"] as? Int == max(0, peak - before - inputs))
        // The code the run paged in (mltool's kernels at least: some pages of the executable), and what the model
        // holds without it.
        let code = try #require(b["code_resident_bytes"] as? Int), own = try #require(b["model_own_bytes"] as? Int)
        #expect(code > 0 && own == max(0, max(0, peak - before - inputs) - code))
        // A file may declare an input no machine holds: refused before anything that size is allocated (an
        // allocation that fails would end the process); and an input dimension that overflows is a shape error.
        for (dim, message) in [(1 << 40, "fit in this machine's"), (Int.min, "expected dimensions ≥ 0 whose product fits")] {
            var big = model
            big.metadata.graph!.inputs[0].shape = [-1, 8, dim, 3]
            try ModelFile.write(big, to: dir.file("big.bin"))
            let r = try Tool.run(["bench", dir.file("big.bin"), "--seconds", "0.05"])
            // Compared with runs of white space as one space: the CLI wraps long messages.
            let said = r.stderr.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(r.status == 65 && said.contains(message), "\(dim): \(r.status) \(r.stderr)")
        }
        // MLTOOL_CPU_LEVEL forces a lower level, and the bench says which ran.
        let portable = try Tool.run(["bench", dir.file("m.bin"), "--seconds", "0.1", "--json"], env: ["MLTOOL_CPU_LEVEL": "portable"])
        let forced = try #require(try JSONSerialization.jsonObject(with: Data(portable.stdout.utf8)) as? [String: Any])
        #expect(forced["cpu_level"] as? String == "portable")

        // The machine's ceiling: both kernels at the thread count asked for, positive GFLOP/s.
        let ceiling = try Tool.run(["bench", "--ceiling", "--threads", "1", "--seconds", "0.05", "--json"])
        #expect(ceiling.status == 0)
        let c = try #require(try JSONSerialization.jsonObject(with: Data(ceiling.stdout.utf8)) as? [String: Any])
        let kernels = try #require(c["ceiling"] as? [[String: Any]])
        #expect(kernels.compactMap { $0["kernel"] as? String } == ["mltool packed", "openblas"])
        #expect(kernels.allSatisfy { ($0["threads"] as? Int) == 1 && ($0["gflops"] as? Double ?? 0) > 0 })
        let withModel = try Tool.run(["bench", "--ceiling", dir.file("m.bin")])
        #expect(withModel.status == 64)
    }

    @Test func runRefusesAFloatFileForAnIntegerInput() throws {
        // if_runtime's `sr` is an int64 scalar (silero-vad's sample rate): a float .npy is refused naming the input
        // (exit 65); the same value as int64 runs.
        let dir = try TempDir(); defer { dir.cleanup() }
        let onnx = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/onnx/control/if_runtime.onnx").path
        #expect(try Tool.run(["import", onnx, "-o", dir.file("m.bin")]).status == 0)
        try Data(NPYWriter.encode(Tensor(shape: [2, 3], data: [Float](repeating: 1, count: 6)))).write(to: URL(fileURLWithPath: dir.file("x.npy")))
        try Data(NPYWriter.encode(Tensor(shape: [1, 2, 2, 3], data: [Float](repeating: 1, count: 12)))).write(to: URL(fileURLWithPath: dir.file("img.npy")))
        try Data(NPYWriter.encode(Tensor(shape: [], data: [16000]))).write(to: URL(fileURLWithPath: dir.file("sr.npy")))
        try Data(NPYWriter.encode(Int64(16000))).write(to: URL(fileURLWithPath: dir.file("sr64.npy")))
        let inputs = ["--input", "x=" + dir.file("x.npy"), "--input", "img=" + dir.file("img.npy")]
        let float = try Tool.run(["run", dir.file("m.bin")] + inputs + ["--input", "sr=" + dir.file("sr.npy")])
        #expect(float.status == 65)
        #expect(float.stderr.contains("sr.npy: input 'sr' is int64 in the model, and this file holds floats (<f4): give an integer .npy"), "\(float.stderr)")
        let int = try Tool.run(["run", dir.file("m.bin")] + inputs + ["--input", "sr=" + dir.file("sr64.npy")])
        #expect(int.status == 0, "\(int.stderr)")
    }

    @Test func infoNamesTheFreeDimensions() throws {
        // same_pad_resize's input is NCHW (n, 3, h, w): the names follow the dimensions into NHWC, the fixed channel
        // count has none; --input-size pins h and w, whose names then go. A file keeps them (FORMAT.md).
        let dir = try TempDir(); defer { dir.cleanup() }
        let onnx = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/onnx/dynamic/same_pad_resize.onnx").path
        #expect(try Tool.run(["import", onnx, "-o", dir.file("m.bin")]).status == 0)
        let info = try Tool.run(["info", dir.file("m.bin")])
        #expect(info.stdout.contains("input         x [n, h, w, 3]"), "\(info.stdout)")
        let json = try Tool.run(["info", dir.file("m.bin"), "--json"])
        #expect(json.stdout.contains(#""dimensionNames":["n","h","w",""]"#), "\(json.stdout)")
        #expect(try Tool.run(["import", onnx, "-o", dir.file("p.bin"), "--input-size", "32x48"]).status == 0)
        #expect(try Tool.run(["info", dir.file("p.bin")]).stdout.contains("input         x [n, 32, 48, 3]"))
    }

    @Test func runWritesTheNamedTensorAsNpy() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let model = Make.tinyClassifier()
        try ModelFile.write(model, to: dir.file("m.bin"))
        var rng = SplitMix64(seed: 3)
        let x = Tensor(shape: [2, 8, 8, 3], data: (0..<384).map { _ in rng.nextUnit() })
        try Data(NPYWriter.encode(x)).write(to: URL(fileURLWithPath: dir.file("x.npy")))
        let r = try Tool.run(["run", dir.file("m.bin"), "--input", dir.file("x.npy"), "--output", "features", "-o", dir.file("y.npy")])
        #expect(r.status == 0, "\(r.stderr)")
        let y = try NPYWriter.decode(try Data(contentsOf: URL(fileURLWithPath: dir.file("y.npy"))))
        let expected = try Engine(model: model, mode: .reference).run(["input": x], outputs: ["features"])["features"]!
        #expect(y.shape == [2, 4])
        for (a, b) in zip(y.data, expected.data) { #expect(abs(a - b) <= 1e-5) }
        // Never over an input.
        let clash = try Tool.run(["run", dir.file("m.bin"), "--input", dir.file("x.npy"), "-o", dir.file("x.npy")])
        #expect(clash.status == 73)
        // An empty array cannot hide a dimension whose strides overflow (a fuzzed input trapped in the NCHW → NHWC
        // transpose): refused naming the file; and an empty tensor transposes to an empty one.
        var header: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0]
        var dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775807, 12, 12), }"
        while (10 + dict.utf8.count + 1) % 64 != 0 { dict += " " }
        header += [UInt8(dict.utf8.count + 1), 0] + Array(dict.utf8) + [0x0A]
        try Data(header).write(to: URL(fileURLWithPath: dir.file("empty.npy")))
        let empty = try Tool.run(["run", dir.file("m.bin"), "--input", dir.file("empty.npy")])
        #expect(empty.status == 65 && empty.stderr.contains("empty.npy: shape: size overflows"), "\(empty.status) \(empty.stderr)")
        #expect(Layout.transpose(Tensor(shape: [0, 3, 2, 5], data: []), [0, 2, 3, 1]).shape == [0, 2, 5, 3])
    }
}

/// Minimal .npy float32 encode/decode for the tests (independent of the CLI's own reader).
enum NPYWriter {
    /// A scalar int64 .npy.
    static func encode(_ v: Int64) -> [UInt8] {
        var header = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }"
        while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
        header += "\n"
        let head: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(header.utf8.count & 0xff), UInt8(header.utf8.count >> 8)]
        return head + Array(header.utf8) + withUnsafeBytes(of: v.littleEndian) { Array($0) }
    }

    static func encode(_ t: Tensor) -> [UInt8] {
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(t.shape.map(String.init).joined(separator: ", "))), }"
        while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
        header += "\n"
        var out: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(header.utf8.count & 0xff), UInt8(header.utf8.count >> 8)]
        out += Array(header.utf8)
        t.data.withUnsafeBytes { out += $0 }
        return out
    }

    static func decode(_ d: Data) throws -> Tensor {
        let b = [UInt8](d)
        let n = Int(b[8]) | Int(b[9]) << 8
        let header = String(decoding: b[10..<(10 + n)], as: UTF8.self)
        let shapeText = header[header.range(of: "(")!.upperBound..<header.range(of: ")")!.lowerBound]
        let shape = shapeText.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        let payload = Array(b[(10 + n)...])
        let floats = payload.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return Tensor(shape: shape, data: floats)
    }
}
