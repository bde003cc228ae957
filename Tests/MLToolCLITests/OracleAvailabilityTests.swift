import Foundation
import MLToolTestSupport
import Testing

/// Oracle tests skip loudly when their oracle is missing. `make test` (and so CI) sets MLTOOL_REQUIRE_ORACLES=1
/// after installing every oracle: then a missing one is a failure here, so nothing is skipped silently in CI. (Tests
/// outside this target report their own missing oracles through `Oracles.missing`, which fails under the same
/// variable.)
@Suite struct OracleAvailabilityTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let required = Oracles.required

    static func onPath(_ tool: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)")
        }
    }

    static func pythonImports(_ module: String) -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import \(module)"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    @Test(.enabled(if: required, "MLTOOL_REQUIRE_ORACLES is not set: oracle tests may skip (they say so)"))
    func everyOracleIsPresent() {
        let env = ProcessInfo.processInfo.environment
        let conformance = env["MLTOOL_ONNX_CONFORMANCE"] ?? Self.root.appendingPathComponent(".build/onnx-conformance").path
        let files = ["models/efficientnet-lite0.onnx", "models/efficientnet-lite0.bin",
                     "models/efficientnet-lite0-reference/reference.json",
                     ".build/demo/model.bin", ".build/demo/model.int8.bin"].map { Self.root.appendingPathComponent($0).path }
            + [conformance + "/manifest.json", conformance + "/unclaimed.json"]
        for f in files { #expect(FileManager.default.fileExists(atPath: f), "missing \(f)") }
        #expect(Oracles.mltoolBinary != nil, "\(Oracles.mltoolBinaryProblem)")
        #expect(Tool.available, "MLToolCLITests would skip: \(Oracles.mltoolBinaryProblem)")
        #expect(Photos.paths != nil, "PhotoPredictTests: \(Photos.problem)")
        // KerasApplicationsTests checks the files themselves; here only that `make test` pointed it at them.
        let keras = env["MLTOOL_KERAS_APPS_DIR"] ?? ""
        #expect(!keras.isEmpty && FileManager.default.fileExists(atPath: keras), "MLTOOL_KERAS_APPS_DIR='\(keras)' is not a directory")
        for tool in ["python3", "chromium", "strace"] { #expect(Self.onPath(tool), "\(tool) is not on PATH") }
        for module in ["numpy", "onnx", "onnxruntime", "sklearn", "coremltools", "PIL", "skimage", "seqeval", "jax", "pycocotools", "nudenet"] {
            #expect(Self.pythonImports(module), "python3 cannot import \(module)")
        }
    }
}
