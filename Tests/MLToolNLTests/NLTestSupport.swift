import Foundation
import MLToolData
import MLToolTestSupport
import Testing
@testable import MLToolNL

/// Paths in the source tree and the data sets the tests use.
enum NLPaths {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    /// `datasets/ud-english-ewt/NAME` (made by `datasets/ud-english-ewt.sh`).
    static func ewt(_ name: String) -> String { root + "/datasets/ud-english-ewt/" + name }
    static var haveEWT: Bool { FileManager.default.fileExists(atPath: ewt(".complete")) }
}

/// Says why a test did not run. Under MLTOOL_REQUIRE_ORACLES=1 (`make test`, CI) a skip is a failure instead.
func skip(_ why: String, sourceLocation: SourceLocation = #_sourceLocation) {
    Oracles.missing(why, sourceLocation: sourceLocation)
}

/// Runs `python3 -c script args…`; returns its standard output, or nil (with the reason) when it fails.
func python(_ script: String, _ args: [String]) -> (output: String?, error: String) {
    runPython(["-c", script] + args)
}

/// Runs `python3 path args…` (a committed peer script such as bench/crf_peer.py), as `python` does.
func pythonScript(_ path: String, _ args: [String]) -> (output: String?, error: String) {
    runPython([path] + args)
}

private func runPython(_ arguments: [String]) -> (output: String?, error: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3"] + arguments
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    do { try p.run() } catch { return (nil, "cannot run python3: \(error)") }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { return (nil, errors) }
    return (String(decoding: data, as: UTF8.self), errors)
}

/// The UPOS tagger trained once on UD English EWT train (validated on dev), shared by the tests that need it.
enum EWTTagger {
    struct Trained: @unchecked Sendable {
        let result: WordTaggerTrainer.Result
        let test: TaggedCorpus
        let seconds: Double
    }

    static let shared: Trained? = {
        guard NLPaths.haveEWT else { return nil }
        do {
            let train = try TaggedCorpus.load(NLPaths.ewt("en_ewt-ud-train.conllu"))
            let dev = try TaggedCorpus.load(NLPaths.ewt("en_ewt-ud-dev.conllu"))
            let test = try TaggedCorpus.load(NLPaths.ewt("en_ewt-ud-test.conllu"))
            let start = Date()
            let result = try WordTaggerTrainer().train(train, validation: dev)
            return Trained(result: result, test: test, seconds: Date().timeIntervalSince(start))
        } catch {
            Issue.record("training on UD English EWT failed: \(error)")
            return nil
        }
    }()
}
