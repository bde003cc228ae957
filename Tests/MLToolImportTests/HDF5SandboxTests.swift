import CMLToolHDF5Sandbox
import Foundation
import MLToolCore
import Testing
@testable import MLToolImport

/// The sandboxed HDF5 reader (issue 14): every way the child can fail ends as an `ImportError` naming the file, and
/// the confinement holds — the child commits each fault of `MLT_H5_FAULT_*` inside it and the outcome is checked.
@Suite struct HDF5SandboxTests {
    let path = KerasFixture.path("hdf5_cases.h5")

    /// Reads a dataset through a reader that commits `fault` first; the error message, or nil when it succeeded.
    private func outcome(fault: Int32, timeout: Double = 20, cpuSeconds: UInt64 = 30,
                         extra: UInt64 = 1 << 30) -> (message: String?, status: MLToolCore.ExitStatus?) {
        let limits = HDF5Sandbox.Limits(timeout: timeout, cpuSeconds: cpuSeconds, extraAddressSpace: extra, fault: fault)
        do {
            let values = try HDF5File.read(path: path, limits: limits) { f in try f.readFloats(f.open("g/f32", in: f.root)).data }
            #expect(values == [0, 0.25, 0.5, 0.75, 1, 1.25])
            return (nil, nil)
        } catch let error as ImportError {
            return (error.description, error.exitStatus)
        } catch {
            return ("\(error)", nil)
        }
    }

    @Test func aCrashOfTheReaderIsAnImportError() {
        let (message, status) = outcome(fault: Int32(MLT_H5_FAULT_SEGV))
        #expect(message == "hdf5_cases.h5: not a valid model: the HDF5 library failed on this file: killed by signal 11 (SIGSEGV)")
        #expect(status == .dataError)
    }

    @Test func aHangEndsAtTheDeadline() {
        let start = Date()
        let (message, _) = outcome(fault: Int32(MLT_H5_FAULT_SPIN), timeout: 1)
        #expect(message == "hdf5_cases.h5: not a valid model: the HDF5 library failed on this file: no result within 1 s")
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test func aLoopEndsAtTheCPULimit() {
        let (message, _) = outcome(fault: Int32(MLT_H5_FAULT_SPIN), timeout: 30, cpuSeconds: 1)
        #expect(message == "hdf5_cases.h5: not a valid model: the HDF5 library failed on this file: killed by signal 24 (SIGXCPU): CPU time limit of 1 s")
    }

    @Test func startingAProgramKillsTheReader() {
        let (message, _) = outcome(fault: Int32(MLT_H5_FAULT_EXEC))
        #expect(message == "hdf5_cases.h5: not a valid model: the HDF5 library failed on this file: killed by signal 31 (SIGSYS): a system call the sandbox forbids")
    }

    @Test func openingASocketKillsTheReader() {
        let (message, _) = outcome(fault: Int32(MLT_H5_FAULT_SOCKET))
        #expect(message == "hdf5_cases.h5: not a valid model: the HDF5 library failed on this file: killed by signal 31 (SIGSYS): a system call the sandbox forbids")
    }

    /// The child cannot open another file or write anywhere but its socket; both fail quietly and it goes on.
    @Test func otherFilesAndDescriptorsAreOutOfReach() {
        #expect(outcome(fault: Int32(MLT_H5_FAULT_OPEN)).message == nil)
        #expect(outcome(fault: Int32(MLT_H5_FAULT_WRITE_OTHER)).message == nil)
    }

    @Test func memoryPastTheLimitIsRefused() {
        let (message, _) = outcome(fault: Int32(MLT_H5_FAULT_ALLOCATE), extra: 256 << 20)
        #expect(message == "hdf5_cases.h5: not a valid model: the HDF5 library failed on this file: it needed more than its memory limit (256 MiB)")
    }

    /// A failure sticks: a query that cannot throw (`hasAttribute`) reads false, and `read` throws the failure
    /// instead of what the body made of the false answer.
    @Test func aFailureIsTheErrorWhateverTheBodyDid() {
        let limits = HDF5Sandbox.Limits(timeout: 20, cpuSeconds: 30, extraAddressSpace: 1 << 30,
                                        fault: Int32(MLT_H5_FAULT_SEGV))
        let message = KerasFixture.message {
            try HDF5File.read(path: path, limits: limits) { f -> Bool in f.hasAttribute("vlen", of: f.root) }
        }
        #expect(message?.hasSuffix("killed by signal 11 (SIGSEGV)") == true)
    }

    /// Each read has its own reader process, so reads run side by side (libhdf5 is never shared): three reads on
    /// three threads each wait inside their read — their reader processes alive — until all three are inside. Reads
    /// serialised behind one lock or one shared reader would never all get there (the wait times out after 60 s and
    /// the test fails); then each reads its values through its own reader.
    @Test func readersRunSideBySide() throws {
        final class Outcomes: @unchecked Sendable {
            let lock = NSLock()
            var values: [[Float]] = [], errors: [String] = []
            func add(_ v: [Float]?, _ e: String?) { lock.lock(); defer { lock.unlock() }; v.map { values.append($0) }; e.map { errors.append($0) } }
        }
        let n = 3, path = path, outcomes = Outcomes()
        let arrived = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchGroup()
        for _ in 0..<n {
            done.enter()
            Thread {
                defer { done.leave() }
                do {
                    let v = try HDF5File.read(path: path) { f -> [Float] in
                        arrived.signal()
                        guard release.wait(timeout: .now() + 60) == .success else { return [] }
                        return try f.readFloats(f.open("g/f32", in: f.root)).data
                    }
                    outcomes.add(v, nil)
                } catch {
                    outcomes.add(nil, "\(error)")
                }
            }.start()
        }
        var inside = 0
        for _ in 0..<n where arrived.wait(timeout: .now() + 60) == .success { inside += 1 }
        #expect(inside == n, "only \(inside) of \(n) reads were open at once")
        for _ in 0..<n { release.signal() }
        done.wait()
        #expect(outcomes.errors.isEmpty, "\(outcomes.errors)")
        #expect(outcomes.values.count == n && outcomes.values.allSatisfy { $0 == [0, 0.25, 0.5, 0.75, 1, 1.25] })
    }

    /// The signature search that replaces H5Fis_hdf5 (the parent never calls libhdf5): at byte 0, or at 512, 1024,
    /// … after a user block.
    @Test func theSignatureIsFoundWhereLibhdf5LooksForIt() throws {
        let dir = NSTemporaryDirectory() + "mltool-sig-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let original = try Data(contentsOf: URL(fileURLWithPath: KerasFixture.path("k3_mlp.h5")))
        let signature = Data([0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a])
        for (name, bytes, want) in [
            ("plain.h5", original, true),
            ("user-block.h5", Data(count: 1024) + original, true),
            ("odd-offset.h5", Data(count: 700) + signature + Data(count: 64), false),
            ("short.h5", signature.prefix(7), false),
            ("empty.h5", Data(), false),
        ] {
            let file = dir + "/" + name
            try bytes.write(to: URL(fileURLWithPath: file))
            #expect(KerasImporter.isHDF5(path: file) == want, "\(name)")
        }
        #expect(!KerasImporter.isHDF5(path: dir))
    }

    /// A model after a 1024-byte user block (HDF5 finds the superblock there and shifts its addresses) imports
    /// like the plain file: the same tensors, byte for byte.
    @Test func aFileAfterAUserBlockImports() throws {
        let dir = NSTemporaryDirectory() + "mltool-ub-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = KerasFixture.path("k3_mlp.h5"), shifted = dir + "/k3_mlp.h5"
        try (Data(count: 1024) + Data(contentsOf: URL(fileURLWithPath: source))).write(to: URL(fileURLWithPath: shifted))
        let plain = try KerasImporter.importModel(path: source, options: ImportOptions())
        let moved = try KerasImporter.importModel(path: shifted, options: ImportOptions())
        #expect(plain.tensors.count > 0)
        #expect(plain.tensors.map(\.name) == moved.tensors.map(\.name))
        #expect(plain.tensors.map { Array($0.bytes.buffer) } == moved.tensors.map { Array($0.bytes.buffer) })
    }
}
