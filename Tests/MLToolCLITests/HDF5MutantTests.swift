import Foundation
import MLToolTestSupport
import Testing

/// Issue 14's acceptance in `make test`: 500 seeded mutants of the Keras 2 and Keras 3 fixtures, each fed to
/// `mltool import` as a user would. Every one must end as an import (exit 0, a model written) or as exit 65 with a
/// message naming the file — no signal, no hang — whatever libhdf5 does with it inside its sandbox.
@Suite struct HDF5MutantTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/keras")

    struct Outcome {
        var name: String
        var status: Int32
        var signalled: Bool
        var timedOut: Bool
        var stderr: String
        var wroteModel: Bool
    }

    /// Runs `mltool import` on one file with a watchdog: a run past `seconds` is killed and counted as a hang.
    static func importOnce(_ file: String, out: String, seconds: Double) throws -> Outcome {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tool.path ?? "/nonexistent")
        p.arguments = ["import", file, "-o", out]
        var env = ProcessInfo.processInfo.environment
        env["MLTOOL_HDF5_TIMEOUT"] = "5"
        p.environment = env
        let err = Pipe()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        try p.run()
        let done = DispatchSemaphore(value: 0)
        let stderrData = LockedData()
        DispatchQueue.global().async {
            stderrData.set(err.fileHandleForReading.readDataToEndOfFile())
            done.signal()
        }
        var timedOut = false
        if done.wait(timeout: .now() + seconds) == .timedOut {
            timedOut = true
            kill(p.processIdentifier, SIGKILL)
            done.wait()
        }
        p.waitUntilExit()
        let size = ((try? FileManager.default.attributesOfItem(atPath: out))?[.size] as? Int) ?? 0
        return Outcome(name: (file as NSString).lastPathComponent, status: p.terminationStatus,
                       signalled: p.terminationReason == .uncaughtSignal, timedOut: timedOut,
                       stderr: String(decoding: stderrData.get(), as: UTF8.self), wroteModel: size > 0)
    }

    final class LockedData: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
        func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
    }

    @Test(.enabled(if: Tool.available)) func fiveHundredMutantsImportOrFailCleanly() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let mutants = dir.file("mutants")
        let gen = Process()
        gen.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gen.arguments = ["python3", Self.fixtures.appendingPathComponent("make_mutants.py").path,
                         "--out", mutants, "--count", "500", "--seed", "14"]
        gen.standardOutput = FileHandle.nullDevice
        try gen.run()
        gen.waitUntilExit()
        try #require(gen.terminationStatus == 0, "make_mutants.py failed (python3 is needed)")
        let names = try FileManager.default.contentsOfDirectory(atPath: mutants).filter { $0.hasSuffix(".h5") }.sorted()
        try #require(names.count == 500)

        let results = Slots(count: names.count)
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for i in stride(from: worker, to: names.count, by: 2) {
                let out = dir.file("out-\(i).bin")
                results.set(i, try? Self.importOnce(mutants + "/" + names[i], out: out, seconds: 30))
                try? FileManager.default.removeItem(atPath: out)
            }
        }
        let outcomes = results.all()
        try #require(outcomes.count == names.count, "a run could not be started")
        var imported = 0, refused = 0, readerFailed = 0
        for o in outcomes {
            #expect(!o.timedOut, "\(o.name): mltool hung")
            #expect(!o.signalled, "\(o.name): mltool was killed by signal \(o.status)")
            #expect(o.status == 0 || o.status == 65, "\(o.name): exit \(o.status): \(o.stderr)")
            if o.status == 0 {
                #expect(o.wroteModel, "\(o.name): exit 0 but no model written")
                imported += 1
            } else if o.status == 65 {
                // The message names the file (as the user gave it, or by its name for the importer's own errors).
                let firstLine = o.stderr.prefix { $0 != "\n" }
                #expect(firstLine.hasPrefix("mltool: error: ") && firstLine.contains(o.name), "\(o.name): \(o.stderr)")
                #expect(!o.wroteModel, "\(o.name): exit 65 but a model was written")
                if o.stderr.contains("the HDF5 library failed on this file") {
                    readerFailed += 1
                    print("HDF5 mutants: contained: \(firstLine)")
                } else {
                    refused += 1
                }
            }
        }
        print("HDF5 mutants: \(outcomes.count) files: \(imported) imported, \(refused) refused with a reason, \(readerFailed) contained reader failures (crash, hang or limit inside the sandbox)")
        // Seeded mutants: measured 141 imported, 355 refused with a reason, 4 contained reader failures on a 2-core
        // AVX2 machine (December 2026). 500 mutants that all import would say nothing about the reader's checks:
        // at least 90 % of the measured refusals.
        #expect(refused >= 320, "\(refused) mutants refused with a reason, measured 355, bar 320")
    }

    /// Results written by index from several workers.
    final class Slots: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Outcome?]
        init(count: Int) { values = Array(repeating: nil, count: count) }
        func set(_ i: Int, _ v: Outcome?) { lock.lock(); values[i] = v; lock.unlock() }
        func all() -> [Outcome] { lock.lock(); defer { lock.unlock() }; return values.compactMap { $0 } }
    }
}
