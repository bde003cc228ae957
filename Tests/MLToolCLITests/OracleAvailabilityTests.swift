import Foundation
import Testing

/// Oracle tests skip loudly when their oracle is missing. `make test` (and so CI) sets MLTOOL_REQUIRE_ORACLES=1
/// after installing every oracle: then a missing one is a failure here, so nothing is skipped silently in CI.
@Suite struct OracleAvailabilityTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let required = ProcessInfo.processInfo.environment["MLTOOL_REQUIRE_ORACLES"] == "1"

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
        let files = ["models/efficientnet-lite0.onnx", "models/efficientnet-lite0.bin",
                     "models/efficientnet-lite0-reference/reference.json", ".build/onnx-conformance/manifest.json",
                     ".build/demo/model.bin", ".build/demo/model.int8.bin"]
        for f in files {
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(f).path), "missing \(f)")
        }
        #expect(ProcessInfo.processInfo.environment["MLTOOL_BIN"] != nil, "MLTOOL_BIN is not set")
        for tool in ["python3", "chromium", "strace"] { #expect(Self.onPath(tool), "\(tool) is not on PATH") }
        for module in ["numpy", "onnx", "onnxruntime", "sklearn", "coremltools", "PIL", "skimage"] {
            #expect(Self.pythonImports(module), "python3 cannot import \(module)")
        }
    }
}
