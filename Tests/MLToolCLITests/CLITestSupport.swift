import Foundation
import MLToolCore
import MLToolFormat

/// Runs the built `mltool` (found through $MLTOOL_BIN, which `make test` sets) as a user would.
enum Tool {
    static let path: String? = {
        guard let p = ProcessInfo.processInfo.environment["MLTOOL_BIN"], FileManager.default.isExecutableFile(atPath: p) else {
            print("MLToolCLITests: SKIPPED end-to-end tests: MLTOOL_BIN is not set to a built mltool (run `make test`)")
            return nil
        }
        return p
    }()

    static var available: Bool { path != nil }

    struct Result { var status: Int32; var stdout: String; var stderr: String }

    /// Runs `mltool args` in `directory` with extra environment variables.
    static func run(_ args: [String], in directory: String? = nil, env: [String: String] = [:]) throws -> Result {
        try exec(path ?? "/nonexistent", args, in: directory, env: env)
    }

    /// Runs any program (`executable`, a path) the same way.
    static func exec(_ executable: String, _ args: [String], in directory: String? = nil, env: [String: String] = [:]) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        if let d = directory { p.currentDirectoryURL = URL(fileURLWithPath: d) }
        var environment = ProcessInfo.processInfo.environment
        for (k, v) in env { environment[k] = v }
        p.environment = environment
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                      stderr: String(decoding: e, as: UTF8.self))
    }
}

/// A fresh temporary directory, removed by `cleanup()`.
struct TempDir {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "mltool-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func file(_ name: String) -> String { path + "/" + name }
    func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}

/// Small models and images built in code.
enum Make {
    /// A tiny extractor: (N, 8, 8, 3) → 1×1 conv (colour mixes) + ReLU → global average pool → flatten → features
    /// (N, 4) → dense → logits (N, 2). Preprocessing: exact resize to 8×8, pixels / 255.
    static func tinyClassifier(labels: [String] = ["blue", "red"]) -> Model {
        let w = Tensor(shape: [1, 1, 3, 4], data: [1, 0, 0, 1,   0, 1, 0, 0,   0, 0, 1, -1])
        let dense = Tensor(shape: [4, 2], data: [-1, 1, 0, 0, 1, -1, -1, 1])
        let graph = Graph(
            inputs: [GraphInput(name: "input", shape: [-1, 8, 8, 3])], outputs: ["logits"],
            nodes: [
                Node(name: "conv", op: .conv, inputs: ["input", "conv.w"], outputs: ["conv"],
                     attributes: Attributes(kernel: [1, 1], strides: [1, 1], pads: [0, 0, 0, 0], groups: 1, activation: .relu)),
                Node(name: "pool", op: .globalAvgPool, inputs: ["conv"], outputs: ["pooled"]),
                Node(name: "flatten", op: .flatten, inputs: ["pooled"], outputs: ["features"], attributes: Attributes(axis: 1)),
                Node(name: "fc", op: .dense, inputs: ["features", "fc.w"], outputs: ["logits"]),
            ])
        var md = ModelMetadata(task: .imageClassifier, graph: graph, labels: labels)
        md.outputKind = "logits"
        md.featureTensor = "features"
        md.image = ImagePreprocessing(height: 8, width: 8, scale: 1.0 / 255, resize: "exact")
        return Model(metadata: md, tensors: [StoredTensor(name: "conv.w", tensor: w), StoredTensor(name: "fc.w", tensor: dense)])
    }

    /// A solid-colour RGB PNG (stored, uncompressed deflate) with a little seeded noise.
    static func png(width: Int, height: Int, rgb: (UInt8, UInt8, UInt8), noiseSeed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: noiseSeed)
        var raw = [UInt8]()
        for _ in 0..<height {
            raw.append(0)  // filter: none
            for _ in 0..<width {
                for c in [rgb.0, rgb.1, rgb.2] {
                    raw.append(UInt8(clamping: Int(c) + Int(rng.next() % 31) - 15))
                }
            }
        }
        var z: [UInt8] = [0x78, 0x01]
        var offset = 0
        while offset < raw.count || offset == 0 {
            let n = min(65535, raw.count - offset)
            let final: UInt8 = offset + n >= raw.count ? 1 : 0
            z += [final, UInt8(n & 0xff), UInt8(n >> 8), UInt8(~n & 0xff), UInt8((~n >> 8) & 0xff)]
            z += raw[offset..<(offset + n)]
            offset += n
            if n == 0 { break }
        }
        var a: UInt32 = 1, b: UInt32 = 0
        for v in raw { a = (a + UInt32(v)) % 65521; b = (b + a) % 65521 }
        z += be32(b << 16 | a)
        var out: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
        out += chunk("IHDR", be32(UInt32(width)) + be32(UInt32(height)) + [8, 2, 0, 0, 0])
        out += chunk("IDAT", z)
        out += chunk("IEND", [])
        return out
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        var crc: UInt32 = 0xffff_ffff
        for byte in body {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
        }
        return be32(UInt32(data.count)) + body + be32(~crc)
    }

    /// A label-folder tree: `perClass` noisy PNGs of each colour.
    static func colourFolders(in dir: String, perClass: Int) throws {
        for (label, rgb) in [("red", (UInt8(200), UInt8(30), UInt8(30))), ("blue", (UInt8(30), UInt8(30), UInt8(200)))] {
            let d = dir + "/" + label
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
            for i in 0..<perClass {
                let bytes = png(width: 12, height: 10, rgb: rgb, noiseSeed: UInt64(i * 2 + (label == "red" ? 1 : 0)))
                try Data(bytes).write(to: URL(fileURLWithPath: String(format: "%@/%03d.png", d, i)))
            }
        }
    }
}
