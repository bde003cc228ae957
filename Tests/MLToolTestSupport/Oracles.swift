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

/// The real data sets beside the repository (../shared/datasets, read-only; see its licences), found from this
/// source file so that no test names a machine's absolute path.
public enum SharedDatasets {
    /// The repository's root.
    public static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The raccoon detection set (200 annotated photos): $RACCOON_DIR, else ../shared/datasets/raccoon next to the
    /// repository, else datasets/raccoon (which datasets/raccoon.sh materialises); nil when none exists.
    public static let raccoon: String? = {
        var candidates = [String]()
        if let env = ProcessInfo.processInfo.environment["RACCOON_DIR"], !env.isEmpty { candidates.append(env) }
        candidates.append(repository.appendingPathComponent("../shared/datasets/raccoon").standardized.path)
        candidates.append(repository.appendingPathComponent("datasets/raccoon").path)
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/annotations") }
    }()
}
