// The CPU-feature table every kernel dispatcher uses (CMLToolKernels, CMLToolTrainKernels, and through them the Swift
// engine and trainer): one detector, one ordered level enum, one environment override.
//
// A level is a ceiling: each kernel runs its best variant at or below the current level whose instructions the CPU
// has (`mlk_cpu_has`). The current level starts at the best the CPU supports, lowered by the environment variable
// MLTOOL_CPU_LEVEL=portable|avx2|avx2-vnni|avx512|avx512-vnni (a level the CPU lacks, or an unknown name, leaves it
// at the best), and a thread may set a level of its own (mlk_set_thread_cpu_level: tests run every variant
// that way), which the engine's workers take for the work that thread hands them.
#ifndef CMLTOOLCPU_H
#define CMLTOOLCPU_H

enum {
    MLK_CPU_PORTABLE = 0,     // plain C: any CPU
    MLK_CPU_AVX2 = 1,         // AVX2 + FMA (x86-64-v3)
    MLK_CPU_AVX2_VNNI = 2,    // + AVX-VNNI (256-bit vpdpbusd)
    MLK_CPU_AVX512 = 3,       // AVX2 + FMA + AVX-512F
    MLK_CPU_AVX512_VNNI = 4,  // + AVX-512 BW, VL and VNNI
    MLK_CPU_LEVELS = 5
};

/// The current level (see above): the calling thread's own when it has set one, else the process's.
int mlk_cpu_level(void);

/// The best level this CPU supports, whatever the environment says.
int mlk_cpu_detected(void);

/// 1 when kernels may use `level`'s instructions: level ≤ the current level and the CPU has them.
int mlk_cpu_has(int level);

/// Sets the calling thread's own level (clamped to what the CPU has; -1: follow the process's level again) and returns
/// the previous setting (-1 when it followed the process). Other threads do not see it, except the engine's workers
/// while they run a part of this thread's work (they take the caller's setting for it): tests run every variant
/// this way without touching what the rest of the process computes. Work fanned out by other means (training's
/// concurrentPerform loops) runs at the process's level.
int mlk_set_thread_cpu_level(int level);

/// The calling thread's own setting, -1 when it follows the process's level.
int mlk_thread_cpu_level(void);

/// For kernels that take the level per call (CMLToolTrainKernels): -1 → the current level; otherwise `level`,
/// capped at what the CPU supports.
int mlk_cpu_resolve(int level);

/// "portable", "avx2", "avx2-vnni", "avx512", "avx512-vnni" (the names MLTOOL_CPU_LEVEL takes); "?" otherwise.
const char *mlk_cpu_level_name(int level);

/// The level named `name` (as above), or -1.
int mlk_cpu_level_named(const char *name);

/// Gives the free pages inside the C heap back to the kernel (glibc's malloc_trim; nothing elsewhere).
void mlk_trim_heap(void);

#endif
