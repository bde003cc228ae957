import Foundation
import Testing

/// Tests that need something outside the package (a Python oracle, a built `mltool`, a model `make models` writes)
/// say so when it is missing: a SKIPPED line normally, a failure under MLTOOL_REQUIRE_ORACLES=1 (`make test`, CI),
/// so that nothing `make test` claims to check can silently not run.
public enum Oracles {
    public static let required = ProcessInfo.processInfo.environment["MLTOOL_REQUIRE_ORACLES"] == "1"

    /// Records that a test did not run because of `why`.
    public static func missing(_ why: String, sourceLocation: SourceLocation = #_sourceLocation) {
        if required {
            Issue.record("not run, but MLTOOL_REQUIRE_ORACLES=1: \(why)", sourceLocation: sourceLocation)
        } else {
            print("SKIPPED: \(why)")
        }
    }

    /// $MLTOOL_BIN when it names an executable file (`make test` sets it to the release binary), else nil.
    public static let mltoolBinary: String? = {
        guard let p = ProcessInfo.processInfo.environment["MLTOOL_BIN"], !p.isEmpty,
              FileManager.default.isExecutableFile(atPath: p) else { return nil }
        return p
    }()

    /// Why `mltoolBinary` is nil.
    public static var mltoolBinaryProblem: String {
        guard let p = ProcessInfo.processInfo.environment["MLTOOL_BIN"], !p.isEmpty else {
            return "MLTOOL_BIN is not set (make test sets it to the release binary)"
        }
        return "MLTOOL_BIN=\(p) is not an executable file"
    }
}
