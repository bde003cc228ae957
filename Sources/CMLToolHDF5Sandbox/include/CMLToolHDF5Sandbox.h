// The sandboxed HDF5 reader: libhdf5 runs only in a forked child that can read one already-open file and talk to
// its parent over one socket, nothing else (no new privileges, a seccomp allow-list, CPU/memory/file-size limits).
// docs/SECURITY.md describes the isolation; Sources/MLToolImport/HDF5Sandbox.swift is the parent's side.
//
// Wire format (native byte order; both ends are the same binary on the same machine):
//   request  = header (32 bytes: u32 op, u32 handle, u64 a, u64 b, u32 length, u32 0) + `length` bytes of name/path
//   response = header (16 bytes: u32 status, u32 facts length, u64 values length) + the facts (layouts below)
//              + the values (float32 data of a READ, else nothing)
// The parent may send several requests before reading their replies (they come back in order); the two lengths
// let it skip a reply without parsing it.
// A status other than MLT_H5_STATUS_OK means the child rejected the request; the parent treats it as a failure
// of the reader. Everything the child sends is validated by the parent before use.
#ifndef CMLTOOL_HDF5_SANDBOX_H
#define CMLTOOL_HDF5_SANDBOX_H

#include <stdint.h>

enum {
    /// Opens the file inherited at spawn time; payload: u8 1 when the file and its root group (handle 0) opened,
    /// else u8 0 then u8 reason (1: file, 2: root group).
    MLT_H5_OP_OPEN_FILE = 1,
    /// Walks the '/'-separated `path` below `handle`, checking that every link is a hard link; opens every
    /// component but the last, and the last too when a == 1. Payload: u8 outcome (MLT_H5_WALK_*), u32 index of the
    /// component it stopped at, then for FOUND: u32 handle (UINT32_MAX when the last was not opened), u8 kind
    /// (1 group, 2 dataset); for SOFT: str target; for EXTERNAL: str file, str object; for USER: i32 link type.
    /// A str is u32 length + bytes.
    MLT_H5_OP_WALK = 2,
    /// Payload: u8 1 when `handle` has the attribute `name`.
    MLT_H5_OP_HAS_ATTRIBUTE = 3,
    /// Reads the string attribute `name` of `handle`; a = most strings, b = most bytes of text. Payload: u8 exists,
    /// u8 opened, i32 rank (-1 no dataspace, -2 null dataspace), u64 dims[rank], i32 type class (-1 none),
    /// u8 variable-length, u64 type size, u8 data (0 not read, 1 read, 2 read failed, 3 too much text), then for
    /// data == 1: u32 count and count strs.
    MLT_H5_OP_STRINGS = 4,
    /// Reads dataset `handle` as float32; a = most elements. Payload: u8 is dataset, u8 creation plist,
    /// i32 external file count, i32 layout, i32 type class (-1 none), u64 type size, i32 filters,
    /// u64 stored bytes, i32 rank (-1/-2 as above), u64 dims[rank], u8 data (0 not read, 1 read, 2 read failed,
    /// 4 no memory), then for data == 1: u64 count; the count float32s are the reply's values.
    MLT_H5_OP_READ = 5,
    /// Ends the child (exit status 0).
    MLT_H5_OP_QUIT = 6,
    /// WALK with a == 1 and, when it found a dataset, READ of it in the same reply (b = most elements): the walk
    /// facts, then the read facts and values.
    MLT_H5_OP_WALK_READ = 7,
};

enum {
    MLT_H5_WALK_FOUND = 0,
    MLT_H5_WALK_MISSING = 1,
    MLT_H5_WALK_SOFT = 2,
    MLT_H5_WALK_EXTERNAL = 3,
    MLT_H5_WALK_USER = 4,
    MLT_H5_WALK_OPEN_FAILED = 5,
    MLT_H5_WALK_NOT_OBJECT = 6,
};

enum {
    MLT_H5_STATUS_OK = 0,
    MLT_H5_STATUS_BAD_REQUEST = 1,
    MLT_H5_STATUS_BAD_HANDLE = 2,
    MLT_H5_STATUS_NOT_OPEN = 3,
};

/// HDF5 type classes and layouts as the child reports them (libhdf5's own values, restated so the parent need not
/// include hdf5.h).
enum {
    MLT_H5_CLASS_INTEGER = 0, MLT_H5_CLASS_FLOAT = 1, MLT_H5_CLASS_STRING = 3, MLT_H5_CLASS_REFERENCE = 7,
    MLT_H5_CLASS_COMPOUND = 6, MLT_H5_CLASS_ENUM = 8, MLT_H5_CLASS_VLEN = 9, MLT_H5_CLASS_ARRAY = 10,
    MLT_H5_LAYOUT_COMPACT = 0, MLT_H5_LAYOUT_CONTIGUOUS = 1, MLT_H5_LAYOUT_CHUNKED = 2, MLT_H5_LAYOUT_VIRTUAL = 3,
    MLT_H5_LINK_HARD = 0, MLT_H5_LINK_SOFT = 1, MLT_H5_LINK_EXTERNAL = 64,
};

/// Exit statuses of the child other than 0, and what they mean.
enum {
    MLT_H5_EXIT_PROTOCOL = 10,      // the parent sent something the child cannot parse
    MLT_H5_EXIT_NO_MEMORY = 11,     // an allocation of the child's own failed (its address-space limit)
    MLT_H5_EXIT_NO_NEW_PRIVS = 12,  // prctl(PR_SET_NO_NEW_PRIVS) failed
    MLT_H5_EXIT_SECCOMP = 13,       // the seccomp filter could not be installed
    MLT_H5_EXIT_RLIMIT = 14,        // a resource limit could not be set
    MLT_H5_EXIT_DESCRIPTORS = 15,   // the file descriptors could not be arranged
    MLT_H5_EXIT_UNSUPPORTED = 16,   // no seccomp filter for this CPU architecture
    MLT_H5_EXIT_WRITE = 17,         // the answer could not be written (the parent went away)
    MLT_H5_EXIT_ESCAPED = 18,       // a test fault got out of the sandbox (an open or a socket succeeded)
};

/// Faults a test can make the confined child commit before it serves, to prove the confinement and the parent's
/// handling of each way a reader can fail. Production code passes MLT_H5_FAULT_NONE.
enum {
    MLT_H5_FAULT_NONE = 0,
    MLT_H5_FAULT_SEGV = 1,          // write through a null pointer
    MLT_H5_FAULT_SPIN = 2,          // loop forever (CPU limit / wall-clock deadline)
    MLT_H5_FAULT_EXEC = 3,          // execve("/bin/sh") (must be killed: SIGSYS)
    MLT_H5_FAULT_SOCKET = 4,        // socket(AF_INET) (must be killed: SIGSYS)
    MLT_H5_FAULT_OPEN = 5,          // open("/etc/passwd") (must fail; the child then serves normally)
    MLT_H5_FAULT_ALLOCATE = 6,      // allocate past the address-space limit (must fail: exit NO_MEMORY)
    MLT_H5_FAULT_WRITE_OTHER = 7,   // write to a descriptor other than the socket (must fail; then serves)
};

/// Limits the child runs under.
typedef struct {
    /// RLIMIT_CPU, seconds (the child is killed by SIGXCPU/SIGKILL past it).
    uint64_t cpu_seconds;
    /// Address space the child may add to what it inherits (RLIMIT_AS = inherited size + this), bytes.
    uint64_t extra_address_space;
    /// MLT_H5_FAULT_*: tests only.
    uint32_t fault;
} mlt_h5_limits;

/// Forks the sandboxed reader of the HDF5 file open read-only as `file_fd` (`file_size` bytes). On success returns
/// 0 and sets `*pid` and `*channel` (the parent's end of the socket, close-on-exec); on failure returns an errno
/// value and no child exists. The child never returns from this call.
int mlt_h5_spawn(int file_fd, uint64_t file_size, mlt_h5_limits limits, int32_t *pid, int32_t *channel);

/// Writes all `count` bytes to `fd` without raising SIGPIPE (the socket's peer may be gone). Returns 0 or an
/// errno value.
int mlt_h5_send(int fd, const void *bytes, uint64_t count);

#endif
