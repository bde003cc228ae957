#include <hdf5/serial/hdf5.h>
// Comma macros (H5open(), X_g) and negative casts are not imported into Swift: wrap them.
static inline hid_t shim_H5T_NATIVE_FLOAT(void) { return H5T_NATIVE_FLOAT; }
static inline hid_t shim_H5T_NATIVE_DOUBLE(void) { return H5T_NATIVE_DOUBLE; }
static inline hid_t shim_H5T_NATIVE_INT32(void) { return H5T_NATIVE_INT32; }
static inline hid_t shim_H5T_NATIVE_INT64(void) { return H5T_NATIVE_INT64; }
static inline hid_t shim_H5T_C_S1(void) { return H5T_C_S1; }
static inline unsigned shim_H5F_ACC_RDONLY(void) { return H5F_ACC_RDONLY; }
static inline size_t shim_H5T_VARIABLE(void) { return H5T_VARIABLE; }
