import Foundation
import MLToolCore
import MLToolFormat
import MLToolTestSupport

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

    /// A label-folder tree: `perClass` noisy PNGs of each colour.
    static func colourFolders(in dir: String, perClass: Int) throws {
        for (label, rgb) in [("red", (UInt8(200), UInt8(30), UInt8(30))), ("blue", (UInt8(30), UInt8(30), UInt8(200)))] {
            let d = dir + "/" + label
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
            for i in 0..<perClass {
                let bytes = TestPNG.solid(width: 12, height: 10, rgb: rgb, noiseSeed: UInt64(i * 2 + (label == "red" ? 1 : 0)))
                try Data(bytes).write(to: URL(fileURLWithPath: String(format: "%@/%03d.png", d, i)))
            }
        }
    }
}
