// The child's confinement: fork, descriptors, resource limits, no new privileges, and a seccomp allow-list.
// After `confine` returns, the process can read the input file (fd 3) and the request socket (fd 4), write answers
// to the socket, manage its own memory and exit. Opening any path fails with EACCES; any other system call kills it.
#define _GNU_SOURCE
#include "CMLToolHDF5Sandbox.h"
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define MLT_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define MLT_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

// MARK: - The filter

/// A BPF program under construction; jumps are computed from the sizes of the blocks, never by hand.
typedef struct {
    struct sock_filter code[256];
    unsigned count;
    int overflow;
} program;

static void emit(program *p, struct sock_filter f) {
    if (p->count >= sizeof p->code / sizeof p->code[0]) { p->overflow = 1; return; }
    p->code[p->count++] = f;
}

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, field))
// The low 32 bits of argument i (the whole value of the int-typed arguments checked here: descriptors, pids).
#define LOAD_ARG_LOW(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)(offsetof(struct seccomp_data, args) + 8 * (i)))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define ALLOW SECCOMP_RET_ALLOW
#define KILL SECCOMP_RET_KILL_PROCESS
#define FAIL(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

/// `nr` → action.
static void rule(program *p, long nr, uint32_t action) {
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1));
    emit(p, (struct sock_filter)RET(action));
}

/// `nr` with argument `arg` equal to one of `values` → allow; with any other value → `otherwise`.
static void rule_arg_in(program *p, long nr, int arg, const uint32_t *values, unsigned n, uint32_t otherwise) {
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, (unsigned char)(2 * n + 2)));
    emit(p, (struct sock_filter)LOAD_ARG_LOW(arg));
    for (unsigned i = 0; i < n; i++) {
        emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, values[i], 0, 1));
        emit(p, (struct sock_filter)RET(ALLOW));
    }
    emit(p, (struct sock_filter)RET(otherwise));
}

/// `nr` allowed unless argument `arg` has a bit of `mask` set (then killed): mmap/mprotect without PROT_EXEC.
static void rule_arg_clear(program *p, long nr, int arg, uint32_t mask) {
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 4));
    emit(p, (struct sock_filter)LOAD_ARG_LOW(arg));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 1, 0));
    emit(p, (struct sock_filter)RET(ALLOW));
    emit(p, (struct sock_filter)RET(KILL));
}

static int install_filter(pid_t self) {
#ifndef MLT_AUDIT_ARCH
    (void)self;
    errno = ENOSYS;
    return -1;
#else
    program p = {.count = 0, .overflow = 0};
    emit(&p, (struct sock_filter)LOAD(arch));
    emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MLT_AUDIT_ARCH, 1, 0));
    emit(&p, (struct sock_filter)RET(KILL));
    emit(&p, (struct sock_filter)LOAD(nr));
#if defined(__x86_64__)
    // x32 system calls share the x86_64 arch value; none is allowed.
    emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1));
    emit(&p, (struct sock_filter)RET(KILL));
#endif
    const uint32_t file_and_socket[] = {MLT_FD_FILE, MLT_FD_SOCKET}, socket_only[] = {MLT_FD_SOCKET},
                   file_only[] = {MLT_FD_FILE}, me[] = {(uint32_t)self};
    // Input: the file and the requests; output: the answers. Any other descriptor: EBADF.
    rule_arg_in(&p, __NR_read, 0, file_and_socket, 2, FAIL(EBADF));
    rule_arg_in(&p, __NR_pread64, 0, file_only, 1, FAIL(EBADF));
    rule_arg_in(&p, __NR_write, 0, socket_only, 1, FAIL(EBADF));
    // Memory of its own, never executable.
    rule_arg_clear(&p, __NR_mmap, 2, PROT_EXEC);
    rule_arg_clear(&p, __NR_mprotect, 2, PROT_EXEC);
    rule(&p, __NR_munmap, ALLOW);
    rule(&p, __NR_mremap, ALLOW);
    rule(&p, __NR_brk, ALLOW);
    rule(&p, __NR_madvise, ALLOW);
    // Process housekeeping: exiting, signals to itself (abort), time, futexes of a single thread.
    rule(&p, __NR_exit_group, ALLOW);
    rule(&p, __NR_exit, ALLOW);
    rule(&p, __NR_rt_sigreturn, ALLOW);
    rule(&p, __NR_rt_sigprocmask, ALLOW);
    rule(&p, __NR_getpid, ALLOW);
    rule(&p, __NR_gettid, ALLOW);
    rule_arg_in(&p, __NR_tgkill, 0, me, 1, KILL);
    rule_arg_in(&p, __NR_kill, 0, me, 1, KILL);
    rule(&p, __NR_futex, ALLOW);
    rule(&p, __NR_clock_gettime, ALLOW);
    rule(&p, __NR_gettimeofday, ALLOW);
    rule(&p, __NR_getrandom, ALLOW);
    rule(&p, __NR_sched_yield, ALLOW);
    rule(&p, __NR_close, ALLOW);
    // Opening anything fails cleanly (libraries probe); so do stat and terminal queries of stdio.
#ifdef __NR_open
    rule(&p, __NR_open, FAIL(EACCES));
#endif
    rule(&p, __NR_openat, FAIL(EACCES));
#ifdef __NR_openat2
    rule(&p, __NR_openat2, FAIL(EACCES));
#endif
    rule(&p, __NR_fstat, FAIL(EBADF));
    rule(&p, __NR_newfstatat, FAIL(EACCES));
#ifdef __NR_statx
    rule(&p, __NR_statx, FAIL(EACCES));
#endif
    rule(&p, __NR_ioctl, FAIL(ENOTTY));
    rule(&p, __NR_getcwd, FAIL(EACCES));
    rule(&p, __NR_lseek, FAIL(ESPIPE));
    emit(&p, (struct sock_filter)RET(KILL));
    if (p.overflow) { errno = E2BIG; return -1; }
    struct sock_fprog prog = {.len = (unsigned short)p.count, .filter = p.code};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
#endif
}

// MARK: - The child's set-up

/// Moves the file to fd 3 and the socket to fd 4 and closes every other descriptor (stdin/out/err included).
static int arrange_descriptors(int file_fd, int socket_fd) {
    int f = fcntl(file_fd, F_DUPFD, 10), s = fcntl(socket_fd, F_DUPFD, 10);
    if (f < 0 || s < 0) return -1;
    if (dup2(f, MLT_FD_FILE) < 0 || dup2(s, MLT_FD_SOCKET) < 0) return -1;
    for (int fd = 0; fd < MLT_FD_FILE; fd++) close(fd);
    if (syscall(SYS_close_range, MLT_FD_SOCKET + 1, ~0U, 0) != 0) {
        struct rlimit r;
        long most = getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY ? (long)r.rlim_cur : 65536;
        if (most > (1L << 20)) most = 1L << 20;
        for (long fd = MLT_FD_SOCKET + 1; fd < most; fd++) close((int)fd);
    }
    // Descriptors 3 and 4 must survive (they are the only ones), and must not be close-on-exec-sensitive: no exec
    // ever happens, so clear nothing.
    return 0;
}

static int set_limit(int resource, rlim_t value) {
    struct rlimit r = {.rlim_cur = value, .rlim_max = value};
    return setrlimit(resource, &r);
}

/// CPU time: SIGXCPU at the soft limit (the child ends by that signal, which names the cause); the hard limit two
/// seconds later is the SIGKILL backstop. With soft == hard the kernel would send only SIGKILL.
static int set_cpu_limit(rlim_t seconds) {
    struct rlimit r = {.rlim_cur = seconds, .rlim_max = seconds + 2};
    return setrlimit(RLIMIT_CPU, &r);
}

/// Signals back to their defaults and unblocked: a crash ends the child with its own signal (not a handler the
/// parent installed, such as a runtime's backtracer that would try to start a program).
static void reset_signals(void) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        (void)sigaction(sig, &dfl, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
}

static void confine(int file_fd, int socket_fd, pid_t parent, uint64_t vm_now, mlt_h5_limits limits) {
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(MLT_H5_EXIT_DESCRIPTORS);
    reset_signals();
    if (arrange_descriptors(file_fd, socket_fd) != 0) _exit(MLT_H5_EXIT_DESCRIPTORS);
    uint64_t as = vm_now + limits.extra_address_space;
    if (as < vm_now) as = UINT64_MAX;
    if (set_limit(RLIMIT_CORE, 0) != 0 || set_limit(RLIMIT_FSIZE, 0) != 0 || set_limit(RLIMIT_MEMLOCK, 0) != 0
        || set_cpu_limit((rlim_t)limits.cpu_seconds) != 0 || set_limit(RLIMIT_AS, (rlim_t)as) != 0) {
        _exit(MLT_H5_EXIT_RLIMIT);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(MLT_H5_EXIT_NO_NEW_PRIVS);
#ifndef MLT_AUDIT_ARCH
    _exit(MLT_H5_EXIT_UNSUPPORTED);
#endif
    if (install_filter(getpid()) != 0) _exit(MLT_H5_EXIT_SECCOMP);
}

/// A test's fault (see MLT_H5_FAULT_*), committed inside the confinement.
static void commit_fault(uint32_t fault, uint64_t extra) {
    switch (fault) {
    case MLT_H5_FAULT_SEGV: {
        volatile int *nothing = NULL;
        *nothing = 1;
        break;
    }
    case MLT_H5_FAULT_SPIN: {
        volatile uint64_t n = 0;
        for (;;) n++;
    }
    case MLT_H5_FAULT_EXEC: {
        char *argv[] = {"sh", "-c", "true", NULL}, *envp[] = {NULL};
        execve("/bin/sh", argv, envp);
        _exit(MLT_H5_EXIT_ESCAPED);
    }
    case MLT_H5_FAULT_SOCKET:
        if (socket(AF_INET, SOCK_STREAM, 0) >= 0) _exit(MLT_H5_EXIT_ESCAPED);
        break;
    case MLT_H5_FAULT_OPEN:
        if (open("/etc/passwd", O_RDONLY) >= 0 || errno != EACCES) _exit(MLT_H5_EXIT_ESCAPED);
        break;
    case MLT_H5_FAULT_ALLOCATE: {
        size_t size = extra > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)extra + ((size_t)1 << 30);
        char *volatile block = malloc(size);   // volatile: the allocation must happen, not be optimised away
        if (block == NULL) _exit(MLT_H5_EXIT_NO_MEMORY);
        block[size - 1] = 1;
        _exit(MLT_H5_EXIT_ESCAPED);
    }
    case MLT_H5_FAULT_WRITE_OTHER:
        if (write(MLT_FD_FILE, "x", 1) >= 0 || write(1, "x", 1) >= 0 || write(2, "x", 1) >= 0) _exit(MLT_H5_EXIT_ESCAPED);
        break;
    default:
        break;
    }
}

/// The parent's current address-space size (the child inherits it), from /proc/self/statm; 0 when unknown.
static uint64_t current_address_space(void) {
    FILE *f = fopen("/proc/self/statm", "re");
    if (!f) return 0;
    unsigned long long pages = 0;
    int ok = fscanf(f, "%llu", &pages) == 1;
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return ok && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

int mlt_h5_spawn(int file_fd, uint64_t file_size, mlt_h5_limits limits, int32_t *pid, int32_t *channel) {
    int loaded = mlt_h5_load();   // before measuring the address space the child inherits
    if (loaded != 0) return loaded;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return errno;
    uint64_t vm_now = current_address_space();
    if (vm_now == 0) vm_now = (uint64_t)8 << 30;   // unknown: a generous base; the extra budget still applies
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(pair[0]);
        close(pair[1]);
        return e;
    }
    if (child == 0) {
        confine(file_fd, pair[1], parent, vm_now, limits);
        commit_fault(limits.fault, limits.extra_address_space);
        mlt_h5_serve(MLT_FD_FILE, MLT_FD_SOCKET, file_size);
        _exit(0);
    }
    close(pair[1]);
    *pid = (int32_t)child;
    *channel = pair[0];
    return 0;
}

int mlt_h5_send(int fd, const void *bytes, uint64_t count) {
    const unsigned char *p = bytes;
    while (count > 0) {
        size_t chunk = count > (1u << 30) ? (1u << 30) : (size_t)count;
        ssize_t n = send(fd, p, chunk, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        p += n;
        count -= (uint64_t)n;
    }
    return 0;
}
