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
    public static let raccoon: String? = first("annotations", in: places(env: "RACCOON_DIR", set: "raccoon"))

    /// The Free Spoken Digit Dataset (its recordings/ folder): $FSDD_DIR, else ../shared/datasets/fsdd next to the
    /// repository; nil when neither holds it (datasets/fsdd, fsdd.sh's label folders, has no recordings/).
    public static let fsdd: String? = first("recordings", in: places(env: "FSDD_DIR", set: "fsdd"))

    /// A file of UD English EWT (e.g. "en_ewt-ud-dev.conllu"): in $UD_EWT_DIR, else ../shared/datasets/ud-english-ewt
    /// next to the repository, else datasets/ud-english-ewt (which datasets/ud-english-ewt.sh materialises, with the
    /// files unchanged); nil when none has it.
    public static func udEWT(_ name: String) -> String? {
        first(name, in: places(env: "UD_EWT_DIR", set: "ud-english-ewt")).map { $0 + "/" + name }
    }

    /// Where a set may be, in order: $env, ../shared/datasets/SET next to the repository, datasets/SET.
    private static func places(env: String, set: String) -> [String] {
        var candidates = [String]()
        if let dir = ProcessInfo.processInfo.environment[env], !dir.isEmpty { candidates.append(dir) }
        candidates.append(repository.appendingPathComponent("../shared/datasets/" + set).standardized.path)
        candidates.append(repository.appendingPathComponent("datasets/" + set).path)
        return candidates
    }

    /// The first of `dirs` that holds `entry`.
    private static func first(_ entry: String, in dirs: [String]) -> String? {
        dirs.first { FileManager.default.fileExists(atPath: $0 + "/" + entry) }
    }
}

/// A Python script under Tests/Fixtures as an oracle: the request as JSON on its stdin, the answer as a JSON object
/// on its stdout. nil after a loud skip (`Oracles.missing`: a failure under MLTOOL_REQUIRE_ORACLES=1) when a module
/// it imports is missing, or after recording the script's failure.
public enum JSONOracle {
    public static func call(_ script: String, _ request: [String: Any], missing what: String,
                            sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any]? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", SharedDatasets.repository.appendingPathComponent(script).path]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        p.standardInput = input; p.standardOutput = output; p.standardError = errors
        try p.run()
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            if err.contains("No module named") {
                Oracles.missing("\(what): \(err.split(separator: "\n").last ?? "")", sourceLocation: sourceLocation)
                return nil
            }
            Issue.record("\(script) failed: \(err)", sourceLocation: sourceLocation)
            return nil
        }
        return try JSONSerialization.jsonObject(with: out) as? [String: Any]
    }
}

/// pycocotools' COCOeval as an oracle (Tests/Fixtures/eval/coco_reference.py): the request is
/// {"labels", "truth": per photo [{"label", "box": [x, y, w, h]}], "detections": per photo [{"label", "score", "box"}]};
/// the answer {"mAP50", "mAP50to95", "perClass"}. nil (and a loud skip, or a failure under MLTOOL_REQUIRE_ORACLES=1)
/// when pycocotools is missing.
public enum CocoOracle {
    public static func evaluate(_ request: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any]? {
        try JSONOracle.call("Tests/Fixtures/eval/coco_reference.py", request, missing: "pycocotools oracle (pip install pycocotools)",
                            sourceLocation: sourceLocation)
    }
}
