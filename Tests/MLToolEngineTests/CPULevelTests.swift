import CMLToolCPU
import Foundation
import MLToolCore
import Testing
import MLToolEngine

/// The one CPU-feature table (CMLToolCPU) every kernel dispatcher reads.
@Suite struct CPULevelTests {
    @Test func levelNamesRoundTripAndUnknownNamesAreRefused() {
        let names = (0..<Int32(MLK_CPU_LEVELS)).map { String(cString: mlk_cpu_level_name($0)) }
        #expect(names == ["portable", "avx2", "avx2-vnni", "avx512", "avx512-vnni"])
        for (l, n) in names.enumerated() { #expect(mlk_cpu_level_named(n) == Int32(l)) }
        #expect(mlk_cpu_level_named("AVX2") == -1 && mlk_cpu_level_named("") == -1)
        #expect(String(cString: mlk_cpu_level_name(9)) == "?")
    }

    /// Lowering this thread's level turns off every variant above it for this thread alone; -1 follows the process
    /// again; asking for more than the CPU has gives the best it has. The per-call form (the trainer's) caps at the
    /// CPU, not at the current level.
    @Test func settingTheThreadLevelGatesEveryVariantOnThisThreadOnly() {
        let detected = mlk_cpu_detected(), process = mlk_cpu_level()
        let start = mlk_set_thread_cpu_level(0)
        defer { _ = mlk_set_thread_cpu_level(start) }
        #expect(mlk_cpu_level() == 0 && mlk_cpu_has(0) == 1 && mlk_thread_cpu_level() == 0)
        for l in Int32(1)..<Int32(MLK_CPU_LEVELS) { #expect(mlk_cpu_has(l) == 0) }
        #expect(Engine.cpuLevel == "portable")
        #expect(mlk_cpu_resolve(-1) == 0 && mlk_cpu_resolve(1) == min(1, detected))
        // Another thread meanwhile: the process's level, no setting of its own.
        let other = Slots<(Int32, Int32)>(count: 1), done = DispatchSemaphore(value: 0)
        Thread { other.set(0, (mlk_cpu_level(), mlk_thread_cpu_level())); done.signal() }.start()
        done.wait()
        #expect(other.values.first.map { $0 == (process, -1) } == true, "\(other.values)")
        #expect(mlk_set_thread_cpu_level(Int32(MLK_CPU_LEVELS) + 3) == 0)
        #expect(mlk_cpu_level() == detected && mlk_cpu_has(detected) == 1)
        #expect(mlk_set_thread_cpu_level(-1) == detected)
        #expect(mlk_cpu_level() == process && mlk_thread_cpu_level() == -1)
    }
}

/// The level loop of the kernel tests (`forEachCPULevel`) says what it ran, and MLTOOL_EXPECT_CPU_LEVELS makes a level
/// that did not run a failure.
@Suite struct CPULevelLoopTests {
    /// Tests/cpu-levels.sh (what `make test` expects) names exactly the levels this machine's kernels detect: the two
    /// reading /proc/cpuinfo and CPUID cannot drift apart unnoticed.
    @Test func cpuinfoScriptNamesTheDetectedLevels() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("cpu-levels.sh").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [script]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let ran = forEachCPULevel { _ in }
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == ran.map { CPULevels.names[Int($0)] }.joined(separator: ","))
    }

    @Test func expectedLevelsAreReadByName() throws {
        #expect(CPULevels.expected(nil) == nil && CPULevels.expected(" ,") == nil)
        #expect(try CPULevels.expected("portable,avx2 avx512-vnni")?.get() == [0, 1, 4])
        guard case .failure(let unknown)? = CPULevels.expected("portable,AVX2") else {
            Issue.record("an unknown name was accepted")
            return
        }
        #expect(unknown.name == "AVX2")
    }
}
