// See include/CMLToolCPU.h. The only place that asks the CPU what it has (and, beside it, the one call into the C
// heap's housekeeping).
#include "CMLToolCPU.h"
#include <stdlib.h>
#include <string.h>

static const char *const names[MLK_CPU_LEVELS] = {"portable", "avx2", "avx2-vnni", "avx512", "avx512-vnni"};

// Bit l set: the CPU has every instruction level l's kernels use.
static int detect_mask(void) {
    int mask = 1 << MLK_CPU_PORTABLE;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return mask;
    mask |= 1 << MLK_CPU_AVX2;
    if (__builtin_cpu_supports("avxvnni")) mask |= 1 << MLK_CPU_AVX2_VNNI;
    if (__builtin_cpu_supports("avx512f")) {
        mask |= 1 << MLK_CPU_AVX512;
        if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512vnni"))
            mask |= 1 << MLK_CPU_AVX512_VNNI;
    }
#endif
    return mask;
}

static int best_of(int mask) {
    int best = MLK_CPU_PORTABLE;
    for (int l = 0; l < MLK_CPU_LEVELS; l++) if (mask >> l & 1) best = l;
    return best;
}

// Computed once; racing first calls compute the same values, so plain ints with relaxed atomics are enough. The
// process's level never changes after that: only a thread's own setting does.
static int mask_state = 0;      // 0: not detected yet (bit 0 is always set once detected)
static int level_state = -1;    // the process's level; -1: not set yet
// The calling thread's own level; -1: it follows the process's.
static _Thread_local int thread_level = -1;

static int mask(void) {
    int m = __atomic_load_n(&mask_state, __ATOMIC_RELAXED);
    if (m == 0) { m = detect_mask(); __atomic_store_n(&mask_state, m, __ATOMIC_RELAXED); }
    return m;
}

// The detected level, lowered by MLTOOL_CPU_LEVEL when it names a level at or below it.
static int startup_level(void) {
    int best = best_of(mask());
    const char *env = getenv("MLTOOL_CPU_LEVEL");
    int asked = env ? mlk_cpu_level_named(env) : -1;
    return asked >= 0 && asked <= best ? asked : best;
}

int mlk_cpu_level(void) {
    int t = thread_level;
    if (t >= 0) return t;
    int l = __atomic_load_n(&level_state, __ATOMIC_RELAXED);
    if (l < 0) { l = startup_level(); __atomic_store_n(&level_state, l, __ATOMIC_RELAXED); }
    return l;
}

int mlk_cpu_detected(void) { return best_of(mask()); }

int mlk_cpu_has(int level) {
    return level >= 0 && level < MLK_CPU_LEVELS && level <= mlk_cpu_level() && (mask() >> level & 1);
}

int mlk_thread_cpu_level(void) { return thread_level; }

int mlk_set_thread_cpu_level(int level) {
    int old = thread_level, best = mlk_cpu_detected();
    thread_level = level < 0 ? -1 : (level > best ? best : level);
    return old;
}

int mlk_cpu_resolve(int level) {
    if (level < 0) return mlk_cpu_level();
    int best = mlk_cpu_detected();
    return level > best ? best : level;
}

const char *mlk_cpu_level_name(int level) { return level >= 0 && level < MLK_CPU_LEVELS ? names[level] : "?"; }

int mlk_cpu_level_named(const char *name) {
    for (int l = 0; l < MLK_CPU_LEVELS; l++) if (strcmp(name, names[l]) == 0) return l;
    return -1;
}

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void mlk_trim_heap(void) {
#if defined(__GLIBC__)
    (void)malloc_trim(0);
#endif
}
