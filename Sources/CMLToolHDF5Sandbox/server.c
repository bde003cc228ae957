// The confined child's side: libhdf5 behind a request loop. libhdf5 sees the file only through a read-only
// virtual file driver over the inherited descriptor (pread), so it never opens a path. Every answer states facts
// (link kinds, type classes, dimensions) and the parent decides what they mean; data is read only when the facts
// allow it within the parent's limits.
#define _GNU_SOURCE
#include "CMLToolHDF5Sandbox.h"
#include "sandbox_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <hdf5/serial/hdf5.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// MARK: - libhdf5, loaded on first use

// libhdf5 is opened with dlopen by the parent just before it forks its first reader (mlt_h5_load), not linked: every
// other mltool process then maps neither it nor what it pulls in (libcurl, GnuTLS, Kerberos, LDAP, SSH: ~30
// libraries, 6 MiB resident in each process). The child inherits the mapping and opens nothing (its seccomp filter
// forbids it). Each entry point used below is called through a pointer of its own declared type.
#define MLT_H5_FUNCTIONS(X) X(H5Aclose) X(H5Aexists) X(H5Aget_space) X(H5Aget_type) X(H5Aopen) X(H5Aread) \
    X(H5Dget_create_plist) X(H5Dget_space) X(H5Dget_storage_size) X(H5Dget_type) X(H5Dread) X(H5Eset_auto2) \
    X(H5FDregister) X(H5Fopen) X(H5Gopen2) X(H5Iget_type) X(H5Lexists) X(H5Lget_info) X(H5Lget_val) \
    X(H5Lunpack_elink_val) X(H5Oclose) X(H5Oopen) X(H5Pclose) X(H5Pcreate) X(H5Pget_external_count) \
    X(H5Pget_layout) X(H5Pget_nfilters) X(H5Pset_driver) X(H5Sclose) X(H5Sget_simple_extent_dims) \
    X(H5Sget_simple_extent_ndims) X(H5Sget_simple_extent_type) X(H5Tclose) X(H5Tcopy) X(H5Tget_class) \
    X(H5Tget_cset) X(H5Tget_size) X(H5Tis_variable_str) X(H5Tset_cset) X(H5Tset_size) X(H5Tset_strpad) \
    X(H5dont_atexit) X(H5free_memory) X(H5open) X(H5get_libversion) X(H5check_version)
// The global identifiers behind H5T_NATIVE_FLOAT, H5T_C_S1 and H5P_FILE_ACCESS (the header's macros read them;
// H5F_ACC_* call H5check_version and H5open).
#define MLT_H5_GLOBALS(X) X(H5T_NATIVE_FLOAT_g) X(H5T_C_S1_g) X(H5P_CLS_FILE_ACCESS_ID_g)
#define MLT_H5_STR(x) #x
#define MLT_H5_XSTR(x) MLT_H5_STR(x)
#define MLT_H5_DECLARE(f) static __typeof__(f) *mlt_##f;
MLT_H5_FUNCTIONS(MLT_H5_DECLARE)
MLT_H5_GLOBALS(MLT_H5_DECLARE)

/// The library file names tried: Debian 12's SONAME (HDF5 1.10, found through ld.so.cache without searching a
/// directory), later Debian releases', then the development link (present where mltool was built). The loaded
/// library must have the header's major.minor version (the file driver's structure depends on it).
static const char *const mlt_h5_names[] = {"libhdf5_serial.so.103", "libhdf5_serial.so.310", "libhdf5_serial.so.200",
                                           "libhdf5_serial.so", "libhdf5.so"};
static pthread_once_t mlt_h5_once = PTHREAD_ONCE_INIT;
static int mlt_h5_status = ELIBACC;

static void mlt_h5_open_library(void) {
    void *lib = NULL;
    for (size_t i = 0; i < sizeof mlt_h5_names / sizeof mlt_h5_names[0] && !lib; i++)
        lib = dlopen(mlt_h5_names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
#define MLT_H5_RESOLVE(f) if (!(mlt_##f = (__typeof__(mlt_##f))dlsym(lib, MLT_H5_XSTR(f)))) { dlclose(lib); return; }
    MLT_H5_FUNCTIONS(MLT_H5_RESOLVE)
    MLT_H5_GLOBALS(MLT_H5_RESOLVE)
#undef MLT_H5_RESOLVE
    unsigned major = 0, minor = 0, release = 0;
    if (mlt_H5get_libversion(&major, &minor, &release) < 0 || major != H5_VERS_MAJOR || minor != H5_VERS_MINOR) {
        dlclose(lib);
        mlt_h5_status = ELIBBAD;
        return;
    }
    mlt_h5_status = 0;
}

int mlt_h5_load(void) {
    pthread_once(&mlt_h5_once, mlt_h5_open_library);
    return mlt_h5_status;
}

// From here on every name above means the loaded entry point or global.
#undef H5Aclose
#define H5Aclose (*mlt_H5Aclose)
#undef H5Aexists
#define H5Aexists (*mlt_H5Aexists)
#undef H5Aget_space
#define H5Aget_space (*mlt_H5Aget_space)
#undef H5Aget_type
#define H5Aget_type (*mlt_H5Aget_type)
#undef H5Aopen
#define H5Aopen (*mlt_H5Aopen)
#undef H5Aread
#define H5Aread (*mlt_H5Aread)
#undef H5Dget_create_plist
#define H5Dget_create_plist (*mlt_H5Dget_create_plist)
#undef H5Dget_space
#define H5Dget_space (*mlt_H5Dget_space)
#undef H5Dget_storage_size
#define H5Dget_storage_size (*mlt_H5Dget_storage_size)
#undef H5Dget_type
#define H5Dget_type (*mlt_H5Dget_type)
#undef H5Dread
#define H5Dread (*mlt_H5Dread)
#undef H5Eset_auto2
#define H5Eset_auto2 (*mlt_H5Eset_auto2)
#undef H5FDregister
#define H5FDregister (*mlt_H5FDregister)
#undef H5Fopen
#define H5Fopen (*mlt_H5Fopen)
#undef H5Gopen2
#define H5Gopen2 (*mlt_H5Gopen2)
#undef H5Iget_type
#define H5Iget_type (*mlt_H5Iget_type)
#undef H5Lexists
#define H5Lexists (*mlt_H5Lexists)
#undef H5Lget_info
#define H5Lget_info (*mlt_H5Lget_info)
#undef H5Lget_val
#define H5Lget_val (*mlt_H5Lget_val)
#undef H5Lunpack_elink_val
#define H5Lunpack_elink_val (*mlt_H5Lunpack_elink_val)
#undef H5Oclose
#define H5Oclose (*mlt_H5Oclose)
#undef H5Oopen
#define H5Oopen (*mlt_H5Oopen)
#undef H5Pclose
#define H5Pclose (*mlt_H5Pclose)
#undef H5Pcreate
#define H5Pcreate (*mlt_H5Pcreate)
#undef H5Pget_external_count
#define H5Pget_external_count (*mlt_H5Pget_external_count)
#undef H5Pget_layout
#define H5Pget_layout (*mlt_H5Pget_layout)
#undef H5Pget_nfilters
#define H5Pget_nfilters (*mlt_H5Pget_nfilters)
#undef H5Pset_driver
#define H5Pset_driver (*mlt_H5Pset_driver)
#undef H5Sclose
#define H5Sclose (*mlt_H5Sclose)
#undef H5Sget_simple_extent_dims
#define H5Sget_simple_extent_dims (*mlt_H5Sget_simple_extent_dims)
#undef H5Sget_simple_extent_ndims
#define H5Sget_simple_extent_ndims (*mlt_H5Sget_simple_extent_ndims)
#undef H5Sget_simple_extent_type
#define H5Sget_simple_extent_type (*mlt_H5Sget_simple_extent_type)
#undef H5Tclose
#define H5Tclose (*mlt_H5Tclose)
#undef H5Tcopy
#define H5Tcopy (*mlt_H5Tcopy)
#undef H5Tget_class
#define H5Tget_class (*mlt_H5Tget_class)
#undef H5Tget_cset
#define H5Tget_cset (*mlt_H5Tget_cset)
#undef H5Tget_size
#define H5Tget_size (*mlt_H5Tget_size)
#undef H5Tis_variable_str
#define H5Tis_variable_str (*mlt_H5Tis_variable_str)
#undef H5Tset_cset
#define H5Tset_cset (*mlt_H5Tset_cset)
#undef H5Tset_size
#define H5Tset_size (*mlt_H5Tset_size)
#undef H5Tset_strpad
#define H5Tset_strpad (*mlt_H5Tset_strpad)
#undef H5dont_atexit
#define H5dont_atexit (*mlt_H5dont_atexit)
#undef H5free_memory
#define H5free_memory (*mlt_H5free_memory)
#undef H5open
#define H5open (*mlt_H5open)
#undef H5check_version
#define H5check_version (*mlt_H5check_version)
#undef H5T_NATIVE_FLOAT_g
#define H5T_NATIVE_FLOAT_g (*mlt_H5T_NATIVE_FLOAT_g)
#undef H5T_C_S1_g
#define H5T_C_S1_g (*mlt_H5T_C_S1_g)
#undef H5P_CLS_FILE_ACCESS_ID_g
#define H5P_CLS_FILE_ACCESS_ID_g (*mlt_H5P_CLS_FILE_ACCESS_ID_g)

_Static_assert(H5T_INTEGER == MLT_H5_CLASS_INTEGER && H5T_FLOAT == MLT_H5_CLASS_FLOAT
               && H5T_STRING == MLT_H5_CLASS_STRING && H5T_COMPOUND == MLT_H5_CLASS_COMPOUND
               && H5T_REFERENCE == MLT_H5_CLASS_REFERENCE && H5T_ENUM == MLT_H5_CLASS_ENUM
               && H5T_VLEN == MLT_H5_CLASS_VLEN && H5T_ARRAY == MLT_H5_CLASS_ARRAY, "type classes");
_Static_assert(H5D_COMPACT == MLT_H5_LAYOUT_COMPACT && H5D_CONTIGUOUS == MLT_H5_LAYOUT_CONTIGUOUS
               && H5D_CHUNKED == MLT_H5_LAYOUT_CHUNKED && H5D_VIRTUAL == MLT_H5_LAYOUT_VIRTUAL, "layouts");
_Static_assert(H5L_TYPE_HARD == MLT_H5_LINK_HARD && H5L_TYPE_SOFT == MLT_H5_LINK_SOFT
               && H5L_TYPE_EXTERNAL == MLT_H5_LINK_EXTERNAL, "link types");

#define MAX_RANK 32
#define MAX_REQUEST_BYTES (1u << 16)
#define MAX_HANDLES (1u << 20)

// MARK: - Output

typedef struct {
    unsigned char *data;
    size_t count, capacity;
} buffer;

static void put(buffer *b, const void *bytes, size_t n) {
    if (n > SIZE_MAX - b->count) _exit(MLT_H5_EXIT_NO_MEMORY);
    if (b->count + n > b->capacity) {
        size_t cap = b->capacity ? b->capacity : 256;
        while (cap < b->count + n) {
            if (cap > SIZE_MAX / 2) _exit(MLT_H5_EXIT_NO_MEMORY);
            cap *= 2;
        }
        unsigned char *grown = realloc(b->data, cap);
        if (!grown) _exit(MLT_H5_EXIT_NO_MEMORY);
        b->data = grown;
        b->capacity = cap;
    }
    memcpy(b->data + b->count, bytes, n);
    b->count += n;
}
static void put_u8(buffer *b, uint8_t v) { put(b, &v, 1); }
static void put_u32(buffer *b, uint32_t v) { put(b, &v, 4); }
static void put_i32(buffer *b, int32_t v) { put(b, &v, 4); }
static void put_u64(buffer *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buffer *b, const char *s, size_t n) {
    put_u32(b, (uint32_t)n);
    put(b, s, n);
}

static void write_all(int fd, const void *bytes, uint64_t count) {
    const unsigned char *p = bytes;
    while (count > 0) {
        size_t chunk = count > (1u << 30) ? (1u << 30) : (size_t)count;
        ssize_t n = write(fd, p, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            _exit(MLT_H5_EXIT_WRITE);
        }
        p += n;
        count -= (uint64_t)n;
    }
}

/// Sends a response: the header (status, length of the facts, length of the values), the facts, then the values
/// (bulk float32 data, may be empty).
static void respond(int fd, uint32_t status, const buffer *facts, const void *values, uint64_t values_count) {
    if (facts->count > UINT32_MAX) _exit(MLT_H5_EXIT_NO_MEMORY);
    uint32_t facts_length = (uint32_t)facts->count;
    unsigned char header[16] = {0};
    memcpy(header, &status, 4);
    memcpy(header + 4, &facts_length, 4);
    memcpy(header + 8, &values_count, 8);
    write_all(fd, header, sizeof header);
    if (facts->count) write_all(fd, facts->data, facts->count);
    if (values_count) write_all(fd, values, values_count);
}

// MARK: - A read-only file driver over a descriptor

typedef struct {
    H5FD_t pub;   // must come first: libhdf5 casts between the two
    int fd;
    haddr_t eoa, eof;
} fd_file;

static int g_fd = -1;
static haddr_t g_size = 0;
#define FD_MAXADDR (((haddr_t)1 << (8 * sizeof(off_t) - 1)) - 1)

static H5FD_t *fd_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
    (void)name; (void)fapl; (void)maxaddr;
    if ((flags & (H5F_ACC_RDWR | H5F_ACC_TRUNC | H5F_ACC_CREAT)) || g_fd < 0) return NULL;
    fd_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->fd = g_fd;
    f->eof = g_size;
    return &f->pub;
}
static herr_t fd_close(H5FD_t *file) { free(file); return 0; }
static haddr_t fd_get_eoa(const H5FD_t *file, H5FD_mem_t type) { (void)type; return ((const fd_file *)file)->eoa; }
static herr_t fd_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
    (void)type;
    if (addr > FD_MAXADDR) return -1;
    ((fd_file *)file)->eoa = addr;
    return 0;
}
static haddr_t fd_get_eof(const H5FD_t *file, H5FD_mem_t type) { (void)type; return ((const fd_file *)file)->eof; }
/// Reads [addr, addr+size); past the end of the file the bytes are zero, as libhdf5's own drivers do.
static herr_t fd_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *out) {
    (void)type; (void)dxpl;
    const fd_file *f = (const fd_file *)file;
    if (addr == HADDR_UNDEF || addr > FD_MAXADDR || size > FD_MAXADDR || addr + size > FD_MAXADDR) return -1;
    unsigned char *p = out;
    while (size > 0) {
        if (addr >= f->eof) {
            memset(p, 0, size);
            break;
        }
        size_t want = size > (1u << 30) ? (1u << 30) : size;
        ssize_t n = pread(f->fd, p, want, (off_t)addr);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) {
            memset(p, 0, size);
            break;
        }
        p += n;
        addr += (haddr_t)n;
        size -= (size_t)n;
    }
    return 0;
}
static herr_t fd_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *in) {
    (void)file; (void)type; (void)dxpl; (void)addr; (void)size; (void)in;
    return -1;
}

static const H5FD_class_t fd_class = {
#ifdef H5FD_CLASS_VERSION
    .version = H5FD_CLASS_VERSION,
    .value = (H5FD_class_value_t)600,
#endif
    .name = "mltool-readonly-fd",
    .maxaddr = FD_MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .open = fd_open,
    .close = fd_close,
    .get_eoa = fd_get_eoa,
    .set_eoa = fd_set_eoa,
    .get_eof = fd_get_eof,
    .read = fd_read,
    .write = fd_write,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

// MARK: - Objects

static hid_t *g_handles = NULL;
static uint32_t g_handle_count = 0, g_handle_capacity = 0;
static hid_t g_file = -1;

static uint32_t add_handle(hid_t id) {
    if (g_handle_count >= MAX_HANDLES) _exit(MLT_H5_EXIT_NO_MEMORY);
    if (g_handle_count == g_handle_capacity) {
        uint32_t cap = g_handle_capacity ? g_handle_capacity * 2 : 64;
        hid_t *grown = realloc(g_handles, (size_t)cap * sizeof *grown);
        if (!grown) _exit(MLT_H5_EXIT_NO_MEMORY);
        g_handles = grown;
        g_handle_capacity = cap;
    }
    g_handles[g_handle_count] = id;
    return g_handle_count++;
}

/// Dimensions of `space` (closed here): rank, or -1 without a dataspace, -2 for a null dataspace.
static int32_t put_dims(buffer *b, hid_t space, hsize_t dims[MAX_RANK]) {
    int32_t rank;
    if (space < 0) {
        rank = -1;
    } else if (H5Sget_simple_extent_type(space) == H5S_NULL) {
        rank = -2;
    } else {
        int r = H5Sget_simple_extent_ndims(space);
        rank = r < 0 ? -1 : r;
        if (rank > MAX_RANK) {
            put_i32(b, rank);
            H5Sclose(space);
            return rank;
        }
        if (rank > 0 && H5Sget_simple_extent_dims(space, dims, NULL) < 0) memset(dims, 0, sizeof(hsize_t) * MAX_RANK);
    }
    if (space >= 0) H5Sclose(space);
    put_i32(b, rank);
    for (int32_t i = 0; i < rank; i++) put_u64(b, dims[i]);
    return rank;
}

/// The element count of `rank` dimensions, or UINT64_MAX on overflow; a null dataspace holds nothing.
static uint64_t count_of(int32_t rank, const hsize_t *dims) {
    if (rank < 0) return 0;
    uint64_t n = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] != 0 && n > UINT64_MAX / dims[i]) return UINT64_MAX;
        n *= dims[i];
    }
    return n;
}

// MARK: - Requests

static void op_open_file(buffer *b, const char *name) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t driver = H5FDregister(&fd_class);
    if (fapl < 0 || driver < 0 || H5Pset_driver(fapl, driver, NULL) < 0) {
        put_u8(b, 0);
        put_u8(b, 1);
        return;
    }
    g_file = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (g_file < 0) {
        put_u8(b, 0);
        put_u8(b, 1);
        return;
    }
    hid_t root = H5Gopen2(g_file, "/", H5P_DEFAULT);
    if (root < 0) {
        put_u8(b, 0);
        put_u8(b, 2);
        return;
    }
    add_handle(root);
    put_u8(b, 1);
}

/// The link `name` of `loc`: its type (or -1 when absent) and, for soft and external links, the targets.
static void put_link_target(buffer *b, hid_t loc, const char *name, H5L_type_t type) {
    H5L_info_t info;
    char *value = NULL;
    size_t size = 0;
    if (H5Lget_info(loc, name, &info, H5P_DEFAULT) >= 0 && info.u.val_size > 0 && info.u.val_size <= 65536) {
        size = info.u.val_size;
        value = calloc(size + 1, 1);
        if (value && H5Lget_val(loc, name, value, size, H5P_DEFAULT) < 0) {
            free(value);
            value = NULL;
        }
    }
    if (type == H5L_TYPE_SOFT) {
        put_str(b, value ? value : "?", value ? strnlen(value, size) : 1);
    } else {
        const char *file = NULL, *object = NULL;
        unsigned flags = 0;
        if (value && H5Lunpack_elink_val(value, size, &flags, &file, &object) >= 0 && file && object) {
            put_str(b, file, strnlen(file, size));
            put_str(b, object, strnlen(object, size));
        } else {
            put_str(b, "?", 1);
            put_str(b, "?", 1);
        }
    }
    free(value);
}

/// Returns the handle of the object found and opened, or UINT32_MAX (and sets *is_dataset).
static uint32_t op_walk(buffer *b, uint32_t handle, int open_last, char *path, uint32_t length, int *is_dataset) {
    // Components are separated by '/'; the parent has checked that none is empty, "." or "..".
    hid_t current = g_handles[handle];
    uint32_t index = 0;
    char *part = path, *end = path + length;
    while (part <= end) {
        char *slash = memchr(part, '/', (size_t)(end - part));
        char *stop = slash ? slash : end;
        *stop = 0;
        int last = slash == NULL;
        htri_t exists = H5Lexists(current, part, H5P_DEFAULT);
        H5L_info_t info;
        if (exists <= 0 || H5Lget_info(current, part, &info, H5P_DEFAULT) < 0) {
            put_u8(b, MLT_H5_WALK_MISSING);
            put_u32(b, index);
            return UINT32_MAX;
        }
        if (info.type != H5L_TYPE_HARD) {
            uint8_t outcome = info.type == H5L_TYPE_SOFT ? MLT_H5_WALK_SOFT
                : info.type == H5L_TYPE_EXTERNAL ? MLT_H5_WALK_EXTERNAL : MLT_H5_WALK_USER;
            put_u8(b, outcome);
            put_u32(b, index);
            if (outcome == MLT_H5_WALK_USER) put_i32(b, (int32_t)info.type);
            else put_link_target(b, current, part, info.type);
            return UINT32_MAX;
        }
        if (last && !open_last) {
            put_u8(b, MLT_H5_WALK_FOUND);
            put_u32(b, index);
            put_u32(b, UINT32_MAX);
            put_u8(b, 0);
            return UINT32_MAX;
        }
        hid_t id = H5Oopen(current, part, H5P_DEFAULT);
        if (id < 0) {
            put_u8(b, MLT_H5_WALK_OPEN_FAILED);
            put_u32(b, index);
            return UINT32_MAX;
        }
        H5I_type_t kind = H5Iget_type(id);
        if (kind != H5I_GROUP && kind != H5I_DATASET) {
            H5Oclose(id);
            put_u8(b, MLT_H5_WALK_NOT_OBJECT);
            put_u32(b, index);
            return UINT32_MAX;
        }
        uint32_t h = add_handle(id);
        if (last) {
            put_u8(b, MLT_H5_WALK_FOUND);
            put_u32(b, index);
            put_u32(b, h);
            put_u8(b, kind == H5I_GROUP ? 1 : 2);
            *is_dataset = kind == H5I_DATASET;
            return h;
        }
        current = id;
        index++;
        part = stop + 1;
    }
    return UINT32_MAX;
}

static void op_strings(buffer *b, uint32_t handle, const char *name, uint64_t max_strings, uint64_t max_text) {
    hid_t object = g_handles[handle];
    if (H5Aexists(object, name) <= 0) {
        put_u8(b, 0);
        return;
    }
    put_u8(b, 1);
    hid_t attr = H5Aopen(object, name, H5P_DEFAULT);
    put_u8(b, attr >= 0);
    if (attr < 0) return;
    hsize_t dims[MAX_RANK] = {0};
    int32_t rank = put_dims(b, H5Aget_space(attr), dims);
    if (rank > MAX_RANK) {
        H5Aclose(attr);
        return;
    }
    uint64_t count = count_of(rank, dims);
    hid_t type = H5Aget_type(attr);
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    put_i32(b, type >= 0 ? (int32_t)cls : -1);
    int variable = type >= 0 && H5Tis_variable_str(type) > 0;
    size_t size = type >= 0 ? H5Tget_size(type) : 0;
    put_u8(b, (uint8_t)variable);
    put_u64(b, (uint64_t)size);

    int readable = rank >= 0 && type >= 0 && cls == H5T_STRING && count > 0 && count <= max_strings;
    if (readable && !variable) readable = size > 0 && size <= max_text && count <= max_text / size;
    hid_t mem = readable ? H5Tcopy(H5T_C_S1) : -1;
    if (!readable || mem < 0) {
        put_u8(b, 0);
        if (mem >= 0) H5Tclose(mem);
        if (type >= 0) H5Tclose(type);
        H5Aclose(attr);
        return;
    }
    H5Tset_cset(mem, H5Tget_cset(type));
    if (variable) {
        H5Tset_size(mem, H5T_VARIABLE);
        char **strings = calloc((size_t)count, sizeof *strings);
        if (!strings) _exit(MLT_H5_EXIT_NO_MEMORY);
        if (H5Aread(attr, mem, strings) < 0) {
            put_u8(b, 2);
        } else {
            uint64_t total = 0;
            for (uint64_t i = 0; i < count; i++) total += strings[i] ? strnlen(strings[i], (size_t)max_text + 1) : 0;
            if (total > max_text) {
                put_u8(b, 3);
            } else {
                put_u8(b, 1);
                put_u32(b, (uint32_t)count);
                for (uint64_t i = 0; i < count; i++) {
                    put_str(b, strings[i] ? strings[i] : "", strings[i] ? strlen(strings[i]) : 0);
                }
            }
        }
        for (uint64_t i = 0; i < count; i++) if (strings[i]) H5free_memory(strings[i]);
        free(strings);
    } else {
        // Fixed-length: `size` bytes per string, NUL-padded (no terminator when the string fills its size).
        H5Tset_size(mem, size);
        H5Tset_strpad(mem, H5T_STR_NULLPAD);
        char *bytes = calloc((size_t)count, size);
        if (!bytes) _exit(MLT_H5_EXIT_NO_MEMORY);
        if (H5Aread(attr, mem, bytes) < 0) {
            put_u8(b, 2);
        } else {
            put_u8(b, 1);
            put_u32(b, (uint32_t)count);
            for (uint64_t i = 0; i < count; i++) {
                const char *s = bytes + i * size;
                put_str(b, s, strnlen(s, size));
            }
        }
        free(bytes);
    }
    H5Tclose(mem);
    H5Tclose(type);
    H5Aclose(attr);
}

/// The dataset's facts, and its values as float32 when they are all acceptable; `*floats` is malloc'd.
static void op_read(buffer *b, uint32_t handle, uint64_t max_elements, float **floats, uint64_t *float_count) {
    hid_t dataset = g_handles[handle];
    *floats = NULL;
    *float_count = 0;
    int is_dataset = H5Iget_type(dataset) == H5I_DATASET;
    put_u8(b, (uint8_t)is_dataset);
    if (!is_dataset) return;
    hid_t plist = H5Dget_create_plist(dataset);
    put_u8(b, plist >= 0);
    if (plist < 0) return;
    int external = H5Pget_external_count(plist);
    H5D_layout_t layout = H5Pget_layout(plist);
    int filters = H5Pget_nfilters(plist);
    H5Pclose(plist);
    put_i32(b, external);
    put_i32(b, (int32_t)layout);
    hid_t type = H5Dget_type(dataset);
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    size_t size = type >= 0 ? H5Tget_size(type) : 0;
    if (type >= 0) H5Tclose(type);
    put_i32(b, type >= 0 ? (int32_t)cls : -1);
    put_u64(b, (uint64_t)size);
    put_i32(b, filters);
    hsize_t stored = H5Dget_storage_size(dataset);
    put_u64(b, (uint64_t)stored);
    hsize_t dims[MAX_RANK] = {0};
    int32_t rank = put_dims(b, H5Dget_space(dataset), dims);
    if (rank > MAX_RANK) return;   // no dimensions follow; the parent stops at the rank
    uint64_t count = rank == -2 ? 0 : count_of(rank, dims);

    int readable = external == 0
        && (layout == H5D_CONTIGUOUS || layout == H5D_CHUNKED || layout == H5D_COMPACT)
        && type >= 0 && (cls == H5T_FLOAT || cls == H5T_INTEGER)
        && rank >= 0 && rank <= MAX_RANK && count != UINT64_MAX && count <= max_elements;
    // Without filters the file must hold every byte the shape needs (no allocation for a size it never had).
    if (readable && filters == 0) readable = size > 0 && count <= UINT64_MAX / size && stored >= count * size;
    if (!readable) {
        put_u8(b, 0);
        return;
    }
    if (count == 0) {
        put_u8(b, 1);
        put_u64(b, 0);
        return;
    }
    float *data = malloc((size_t)count * sizeof(float));
    if (!data) {
        put_u8(b, 4);
        return;
    }
    if (H5Dread(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
        free(data);
        put_u8(b, 2);
        return;
    }
    put_u8(b, 1);
    put_u64(b, count);
    *floats = data;
    *float_count = count;
}

/// Appends the READ facts of `handle` to `out` and sends them with the values.
static void respond_read(int socket_fd, buffer *out, uint32_t handle, uint64_t max_elements) {
    float *floats = NULL;
    uint64_t n = 0;
    op_read(out, handle, max_elements, &floats, &n);
    respond(socket_fd, MLT_H5_STATUS_OK, out, floats, n * sizeof(float));
    free(floats);
}

// MARK: - The loop

static int read_exactly(int fd, void *out, size_t count) {
    unsigned char *p = out;
    while (count > 0) {
        ssize_t n = read(fd, p, count);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) return 0;
        p += n;
        count -= (size_t)n;
    }
    return 1;
}

void mlt_h5_serve(int file_fd, int socket_fd, uint64_t file_size) {
    g_fd = file_fd;
    g_size = (haddr_t)file_size;
    (void)H5dont_atexit();
    (void)H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char *payload = malloc(MAX_REQUEST_BYTES + 1);
    if (!payload) _exit(MLT_H5_EXIT_NO_MEMORY);
    buffer out = {0};
    for (;;) {
        unsigned char header[32];
        int got = read_exactly(socket_fd, header, sizeof header);
        if (got == 0) _exit(0);
        if (got < 0) _exit(MLT_H5_EXIT_PROTOCOL);
        uint32_t op, handle, length;
        uint64_t a, b;
        memcpy(&op, header, 4);
        memcpy(&handle, header + 4, 4);
        memcpy(&a, header + 8, 8);
        memcpy(&b, header + 16, 8);
        memcpy(&length, header + 24, 4);
        if (length > MAX_REQUEST_BYTES) _exit(MLT_H5_EXIT_PROTOCOL);
        if (length > 0 && read_exactly(socket_fd, payload, length) != 1) _exit(MLT_H5_EXIT_PROTOCOL);
        payload[length] = 0;
        out.count = 0;
        if (op == MLT_H5_OP_QUIT) _exit(0);
        if (op == MLT_H5_OP_OPEN_FILE) {
            if (g_file >= 0) {
                respond(socket_fd, MLT_H5_STATUS_BAD_REQUEST, &out, NULL, 0);
                continue;
            }
            // An absolute name: libhdf5 then needs no getcwd to record where the file is (for external links,
            // which are refused anyway). The name is a label only; the driver reads the inherited descriptor.
            op_open_file(&out, "/sandboxed-input.h5");
            respond(socket_fd, MLT_H5_STATUS_OK, &out, NULL, 0);
            continue;
        }
        if (g_file < 0) {
            respond(socket_fd, MLT_H5_STATUS_NOT_OPEN, &out, NULL, 0);
            continue;
        }
        if (handle >= g_handle_count) {
            respond(socket_fd, MLT_H5_STATUS_BAD_HANDLE, &out, NULL, 0);
            continue;
        }
        // Names never hold a NUL byte (libhdf5 would read a shorter one).
        if (memchr(payload, 0, length) != NULL) {
            respond(socket_fd, MLT_H5_STATUS_BAD_REQUEST, &out, NULL, 0);
            continue;
        }
        switch (op) {
        case MLT_H5_OP_WALK: {
            if (length == 0) {
                respond(socket_fd, MLT_H5_STATUS_BAD_REQUEST, &out, NULL, 0);
                break;
            }
            int is_dataset = 0;
            op_walk(&out, handle, a == 1, payload, length, &is_dataset);
            respond(socket_fd, MLT_H5_STATUS_OK, &out, NULL, 0);
            break;
        }
        case MLT_H5_OP_WALK_READ: {
            if (length == 0) {
                respond(socket_fd, MLT_H5_STATUS_BAD_REQUEST, &out, NULL, 0);
                break;
            }
            int is_dataset = 0;
            uint32_t found = op_walk(&out, handle, 1, payload, length, &is_dataset);
            if (found == UINT32_MAX || !is_dataset) {
                respond(socket_fd, MLT_H5_STATUS_OK, &out, NULL, 0);
                break;
            }
            respond_read(socket_fd, &out, found, b);
            break;
        }
        case MLT_H5_OP_HAS_ATTRIBUTE:
            put_u8(&out, H5Aexists(g_handles[handle], payload) > 0);
            respond(socket_fd, MLT_H5_STATUS_OK, &out, NULL, 0);
            break;
        case MLT_H5_OP_STRINGS:
            op_strings(&out, handle, payload, a, b);
            respond(socket_fd, MLT_H5_STATUS_OK, &out, NULL, 0);
            break;
        case MLT_H5_OP_READ:
            respond_read(socket_fd, &out, handle, a);
            break;
        default:
            respond(socket_fd, MLT_H5_STATUS_BAD_REQUEST, &out, NULL, 0);
        }
    }
}
