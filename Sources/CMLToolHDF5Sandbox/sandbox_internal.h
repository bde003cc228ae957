// Shared by sandbox.c (confinement) and server.c (the requests the confined child answers).
#ifndef CMLTOOL_HDF5_SANDBOX_INTERNAL_H
#define CMLTOOL_HDF5_SANDBOX_INTERNAL_H

#include <stdint.h>

/// The child's descriptors after confinement: the input file and its end of the socket. Nothing else is open.
#define MLT_FD_FILE 3
#define MLT_FD_SOCKET 4

/// Answers requests on `socket_fd` about the HDF5 file `file_fd` until the parent quits or goes away.
void mlt_h5_serve(int file_fd, int socket_fd, uint64_t file_size);

/// Opens libhdf5 (dlopen) and resolves what mlt_h5_serve calls, once per process: 0, ELIBACC (no library found or
/// an entry point missing) or ELIBBAD (a version other than the headers'). Called by mlt_h5_spawn before it forks.
int mlt_h5_load(void);

#endif
