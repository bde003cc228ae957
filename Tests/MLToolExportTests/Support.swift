import CPNG
import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing

/// Paths in the source tree.
enum Paths {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = root.appendingPathComponent("Tests/Fixtures/export")
}

/// Says why a test did not run. Under MLTOOL_REQUIRE_ORACLES=1 (`make test`, CI) a skip is a failure instead.
func skip(_ why: String, sourceLocation: SourceLocation = #_sourceLocation) {
    Oracles.missing(why, sourceLocation: sourceLocation)
}

/// A small image classifier built in code: conv (stride 2, asymmetric pads, relu6) → depthwise conv (hard-swish) →
/// + per-channel constant → max pool → batch norm → global average pool → reshape → dense → softmax.
/// With `mapHead`, the dense layer reads the pooled feature map directly (a flatten in NHWC order). `channels` (8)
/// sets the width of every layer but the head.
func tinyClassifier(seed: UInt64 = 7, mapHead: Bool = false, channels c: Int = 8) -> Model {
    var rng = SplitMix64(seed: seed)
    var tensors = [StoredTensor]()
    func weight(_ name: String, _ shape: [Int], scale: Float, offset: Float = 0) {
        let n = shape.reduce(1, *)
        let v = (0..<n).map { _ in (rng.nextUnit() * 2 - 1) * scale + offset }
        tensors.append(StoredTensor(name: name, tensor: Tensor(shape: shape, data: v)))
    }
    weight("conv1.w", [3, 3, 3, c], scale: 0.5); weight("conv1.b", [c], scale: 0.1)
    weight("dw.w", [3, 3, 1, c], scale: 0.5); weight("dw.b", [c], scale: 0.1)
    weight("shift", [c], scale: 0.3)
    weight("bn.scale", [c], scale: 0.2, offset: 1); weight("bn.bias", [c], scale: 0.1)
    weight("bn.mean", [c], scale: 0.1); weight("bn.var", [c], scale: 0.2, offset: 1)
    let headIn = mapHead ? 3 * 3 * c : c
    weight("fc.w", [headIn, 3], scale: 1); weight("fc.b", [3], scale: 0.1)
    var nodes = [
        Node(name: "conv1", op: .conv, inputs: ["input", "conv1.w", "conv1.b"], outputs: ["c1"],
             attributes: Attributes(strides: [2, 2], pads: [0, 0, 1, 1], groups: 1, activation: .relu6)),
        Node(name: "dw", op: .conv, inputs: ["c1", "dw.w", "dw.b"], outputs: ["c2"],
             attributes: Attributes(strides: [1, 1], pads: [1, 1, 1, 1], groups: c, activation: Activation(op: .hardSwish))),
        Node(name: "shift", op: .add, inputs: ["c2", "shift"], outputs: ["c3"]),
        Node(name: "pool", op: .maxPool, inputs: ["c3"], outputs: ["p"], attributes: Attributes(kernel: [2, 2], strides: [2, 2], pads: [0, 0, 0, 0])),
        Node(name: "bn", op: .batchNorm, inputs: ["p", "bn.scale", "bn.bias", "bn.mean", "bn.var"], outputs: ["b"],
             attributes: Attributes(epsilon: 1e-3)),
    ]
    if mapHead {
        nodes.append(Node(name: "fc", op: .dense, inputs: ["b", "fc.w", "fc.b"], outputs: ["logits"]))
    } else {
        nodes += [
            Node(name: "gap", op: .globalAvgPool, inputs: ["b"], outputs: ["g"]),
            Node(name: "flat", op: .reshape, inputs: ["g"], outputs: ["features"], attributes: Attributes(shape: [-1, c])),
            Node(name: "fc", op: .dense, inputs: ["features", "fc.w", "fc.b"], outputs: ["logits"]),
        ]
    }
    nodes.append(Node(name: "softmax", op: .softmax, inputs: ["logits"], outputs: ["probabilities"], attributes: Attributes(axis: -1)))
    var md = ModelMetadata(task: .imageClassifier,
                           graph: Graph(inputs: [GraphInput(name: "input", shape: [-1, 12, 12, 3])], outputs: ["probabilities"], nodes: nodes),
                           labels: ["circle", "square", "stripes"])
    md.name = "tiny"
    md.author = "mltool tests"
    md.license = "MIT"
    md.version = "1.2"
    md.description = "a tiny classifier built in code"
    md.outputKind = "probabilities"
    md.featureTensor = mapHead ? nil : "features"
    md.image = ImagePreprocessing(height: 12, width: 12, colorOrder: "rgb", scale: 1.0 / 127.5, bias: [-1, -1, -1],
                                  resize: "exact", crop: "none")
    return Model(metadata: md, tensors: tensors)
}

/// Random preprocessed inputs (N, 12, 12, 3) in [-1, 1].
func randomInputs(_ n: Int, seed: UInt64 = 3) -> Tensor {
    var rng = SplitMix64(seed: seed)
    return Tensor(shape: [n, 12, 12, 3], data: (0..<(n * 432)).map { _ in rng.nextUnit() * 2 - 1 })
}

/// The model's first output for `x` (NHWC).
func run(_ model: Model, _ x: Tensor) throws -> [Float] {
    let engine = try Engine(model: model, threads: 1)
    let name = model.metadata.graph?.inputs.first?.name ?? "input"
    let output = model.metadata.graph?.outputs.first ?? ""
    return try engine.run([name: x], outputs: [output])[output]?.data ?? []
}

/// NHWC → NCHW for a batch.
func nchw(_ t: Tensor) -> Tensor {
    let (n, h, w, c) = (t.shape[0], t.shape[1], t.shape[2], t.shape[3])
    var out = [Float](repeating: 0, count: t.count)
    for b in 0..<n { for y in 0..<h { for x in 0..<w { for ch in 0..<c {
        out[((b * c + ch) * h + y) * w + x] = t.data[((b * h + y) * w + x) * c + ch]
    } } } }
    return Tensor(shape: [n, c, h, w], data: out)
}

// MARK: NPY (version 1.0, little-endian float32, C order)

func writeNPY(_ t: Tensor, to url: URL) throws {
    var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(t.shape.map(String.init).joined(separator: ", "))\(t.shape.count == 1 ? "," : "")), }"
    while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
    header += "\n"
    var bytes: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0]
    let len = UInt16(header.utf8.count)
    bytes += [UInt8(len & 0xff), UInt8(len >> 8)] + Array(header.utf8)
    bytes += t.data.withUnsafeBytes { Array($0) }
    try Data(bytes).write(to: url)
}

func readNPYFloats(_ url: URL) throws -> [Float] {
    let d = [UInt8](try Data(contentsOf: url))
    guard d.count > 10, d[0] == 0x93 else { throw CocoaError(.fileReadCorruptFile) }
    let headerLength = Int(d[8]) | Int(d[9]) << 8
    let header = String(decoding: d[10..<(10 + headerLength)], as: UTF8.self)
    guard header.contains("'<f4'") else { throw CocoaError(.fileReadCorruptFile) }
    let body = Array(d[(10 + headerLength)...])
    return body.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

// MARK: Python oracles

/// Runs `python3 script args…`; nil (after printing why) when python3 or the script's module is missing (exit 3).
func python(_ script: String, _ args: [String]) throws -> String? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", Paths.fixtures.appendingPathComponent(script).path] + args
    let out = Pipe(), err = Pipe()
    p.standardOutput = out; p.standardError = err
    try p.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    if p.terminationStatus == 3 || p.terminationStatus == 127 {
        skip("\(script): \(String(decoding: stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) (pip install onnxruntime coremltools)")
        return nil
    }
    guard p.terminationStatus == 0 else {
        Issue.record("\(script) failed (\(p.terminationStatus)): \(String(decoding: stderr, as: UTF8.self).suffix(2000))")
        return nil
    }
    return String(decoding: stdout, as: UTF8.self)
}

func json(_ text: String) throws -> [String: Any] {
    let lastLine = text.split(separator: "\n").last.map(String.init) ?? ""
    return (try JSONSerialization.jsonObject(with: Data(lastLine.utf8))) as? [String: Any] ?? [:]
}

// MARK: The mltool binary

/// Runs the built binary (MLTOOL_BIN); nil (after `skip` says why) when it is not an executable file. `int8Compute`
/// sets MLTOOL_INT8_COMPUTE ("off" unless told).
func mltool(_ args: [String], int8Compute: String = "off") throws -> (status: Int32, stdout: String, stderr: String)? {
    guard let bin = Oracles.mltoolBinary else {
        skip(Oracles.mltoolBinaryProblem)
        return nil
    }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: bin)
    p.arguments = args
    // Exports keep int8 weights with float compute (DequantizeLinear): compare against the engine doing the same,
    // not against its int8 kernels (which quantize activations too).
    p.environment = ProcessInfo.processInfo.environment.merging(["MLTOOL_INT8_COMPUTE": int8Compute]) { $1 }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out; p.standardError = err
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
}

/// `predict --json` lines → probabilities per file, indexed by label.
func parsePredictions(_ text: String) throws -> [String: [String: Double]] {
    var out = [String: [String: Double]]()
    for line in text.split(separator: "\n") {
        guard let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let file = o["file"] as? String, let top = o["top"] as? [[String: Any]] else { continue }
        var row = [String: Double]()
        for t in top { if let l = t["label"] as? String, let p = t["probability"] as? Double { row[l] = p } }
        out[file] = row
    }
    return out
}

/// Writes an RGB PNG with libpng's simplified API.
func writePNG(_ pixels: [UInt8], width: Int, height: Int, to path: String) -> Bool {
    var image = png_image()
    image.version = 1          // PNG_IMAGE_VERSION
    image.width = UInt32(width)
    image.height = UInt32(height)
    image.format = 2           // PNG_FORMAT_RGB
    return pixels.withUnsafeBytes { png_image_write_to_file(&image, path, 0, $0.baseAddress, 0, nil) } != 0
}
