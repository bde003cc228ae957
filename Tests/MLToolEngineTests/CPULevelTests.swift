import CMLToolCPU
import MLToolTestSupport
import Testing
import MLToolEngine

/// The one CPU-feature table (CMLToolCPU) every kernel dispatcher reads.
@Suite(.serialized) struct CPULevelTests {
    @Test func levelNamesRoundTripAndUnknownNamesAreRefused() {
        let names = (0..<Int32(MLK_CPU_LEVELS)).map { String(cString: mlk_cpu_level_name($0)) }
        #expect(names == ["portable", "avx2", "avx2-vnni", "avx512", "avx512-vnni"])
        for (l, n) in names.enumerated() { #expect(mlk_cpu_level_named(n) == Int32(l)) }
        #expect(mlk_cpu_level_named("AVX2") == -1 && mlk_cpu_level_named("") == -1)
        #expect(String(cString: mlk_cpu_level_name(9)) == "?")
    }

    /// Lowering the level turns off every variant above it; -1 restores the start-up level; asking for more than the
    /// CPU has gives the best it has. The per-call form (the trainer's) caps at the CPU, not at the current level.
    @Test func settingTheLevelGatesEveryVariant() {
        KernelLevelLock.shared.writing {
            let detected = mlk_cpu_detected()
            let start = mlk_set_cpu_level(0)
            defer { _ = mlk_set_cpu_level(start) }
            #expect(mlk_cpu_level() == 0 && mlk_cpu_has(0) == 1)
            for l in Int32(1)..<Int32(MLK_CPU_LEVELS) { #expect(mlk_cpu_has(l) == 0) }
            #expect(Engine.cpuLevel == "portable")
            #expect(mlk_cpu_resolve(-1) == 0 && mlk_cpu_resolve(1) == min(1, detected))
            _ = mlk_set_cpu_level(Int32(MLK_CPU_LEVELS) + 3)
            #expect(mlk_cpu_level() == detected && mlk_cpu_has(detected) == 1)
            _ = mlk_set_cpu_level(-1)
            #expect(mlk_cpu_level() == start)
        }
    }
}
