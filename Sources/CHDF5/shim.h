#include <stdlib.h>
#include <string.h>
#include <hdf5/serial/hdf5.h>
// Comma macros (H5open(), X_g) and negative casts are not imported into Swift: wrap them.
static inline hid_t shim_H5T_NATIVE_FLOAT(void) { return H5T_NATIVE_FLOAT; }
static inline hid_t shim_H5T_NATIVE_DOUBLE(void) { return H5T_NATIVE_DOUBLE; }
static inline hid_t shim_H5T_NATIVE_INT32(void) { return H5T_NATIVE_INT32; }
static inline hid_t shim_H5T_NATIVE_INT64(void) { return H5T_NATIVE_INT64; }
static inline hid_t shim_H5T_C_S1(void) { return H5T_C_S1; }
static inline unsigned shim_H5F_ACC_RDONLY(void) { return H5F_ACC_RDONLY; }
static inline size_t shim_H5T_VARIABLE(void) { return H5T_VARIABLE; }
static inline hid_t shim_H5E_DEFAULT(void) { return H5E_DEFAULT; }
/// Turns off HDF5's automatic error printing to stderr (errors are reported through return values).
static inline void shim_H5_silence_errors(void) { (void)H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }
/// The type of the link `name` in group `loc` (H5L_TYPE_HARD, _SOFT, _EXTERNAL, ...), or -1 when it does not exist.
static inline int shim_H5L_type(hid_t loc, const char *name) {
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return -1;
    H5L_info_t info;
    if (H5Lget_info(loc, name, &info, H5P_DEFAULT) < 0) return -1;
    return (int)info.type;
}
/// The value of a soft link, or the file and object of an external link, copied into the caller's buffers (NUL
/// terminated, truncated to fit). Returns 0 on success.
static inline int shim_H5L_target(hid_t loc, const char *name, char *file, size_t fileSize, char *object,
                                  size_t objectSize) {
    H5L_info_t info;
    if (fileSize > 0) file[0] = 0;
    if (objectSize > 0) object[0] = 0;
    if (H5Lget_info(loc, name, &info, H5P_DEFAULT) < 0 || info.u.val_size == 0 || info.u.val_size > 65536) return -1;
    char *buf = (char *)calloc(info.u.val_size + 1, 1);
    if (!buf) return -1;
    if (H5Lget_val(loc, name, buf, info.u.val_size, H5P_DEFAULT) < 0) { free(buf); return -1; }
    int result = -1;
    if (info.type == H5L_TYPE_SOFT) {
        if (objectSize > 0) { strncpy(object, buf, objectSize - 1); object[objectSize - 1] = 0; }
        result = 0;
    } else if (info.type == H5L_TYPE_EXTERNAL) {
        const char *f = NULL, *o = NULL;
        unsigned flags = 0;
        if (H5Lunpack_elink_val(buf, info.u.val_size, &flags, &f, &o) >= 0) {
            if (f && fileSize > 0) { strncpy(file, f, fileSize - 1); file[fileSize - 1] = 0; }
            if (o && objectSize > 0) { strncpy(object, o, objectSize - 1); object[objectSize - 1] = 0; }
            result = 0;
        }
    }
    free(buf);
    return result;
}
/// A file-access property list for read-only opens without file locking (which fails on filesystems that lack it,
/// and a reader needs none). The caller closes it with H5Pclose.
static inline hid_t shim_H5P_read_only_access(void) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0) (void)H5Pset_file_locking(fapl, 0, 1);
    return fapl;
}
