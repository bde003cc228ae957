#include <sndfile.h>
#include <string.h>

// libsndfile reads a file the caller already holds in memory through its virtual I/O: mltool reads each audio
// file once, under its size limit, and checks a WAV's chunk sizes on those bytes before libsndfile sees them.
typedef struct {
    const unsigned char *bytes;
    sf_count_t length;
    sf_count_t position;
} mlt_sf_memory;

static inline sf_count_t mlt_sf_get_filelen(void *user) { return ((mlt_sf_memory *)user)->length; }

static inline sf_count_t mlt_sf_seek(sf_count_t offset, int whence, void *user) {
    mlt_sf_memory *m = (mlt_sf_memory *)user;
    sf_count_t base = whence == SEEK_CUR ? m->position : whence == SEEK_END ? m->length : 0;
    if (offset < -base || offset > m->length - base) return -1;
    m->position = base + offset;
    return m->position;
}

static inline sf_count_t mlt_sf_read(void *ptr, sf_count_t count, void *user) {
    mlt_sf_memory *m = (mlt_sf_memory *)user;
    sf_count_t left = m->length - m->position;
    sf_count_t n = count < 0 ? 0 : count < left ? count : left;
    if (n > 0) memcpy(ptr, m->bytes + m->position, (size_t)n);
    m->position += n;
    return n;
}

static inline sf_count_t mlt_sf_write(const void *ptr, sf_count_t count, void *user) {
    (void)ptr; (void)count; (void)user;
    return 0;
}

static inline sf_count_t mlt_sf_tell(void *user) { return ((mlt_sf_memory *)user)->position; }

/// Opens `m` for reading; NULL when libsndfile refuses it (sf_strerror(NULL) says why).
static inline SNDFILE *mlt_sf_open_memory(mlt_sf_memory *m, SF_INFO *info) {
    SF_VIRTUAL_IO io = { mlt_sf_get_filelen, mlt_sf_seek, mlt_sf_read, mlt_sf_write, mlt_sf_tell };
    return sf_open_virtual(&io, SFM_READ, info, m);
}

/// The name libsndfile gives a subtype (e.g. "Signed 16 bit PCM"), or NULL.
static inline const char *mlt_sf_subtype_name(int format) {
    SF_FORMAT_INFO f;
    memset(&f, 0, sizeof f);
    f.format = format & SF_FORMAT_SUBMASK;
    if (sf_command(NULL, SFC_GET_FORMAT_INFO, &f, sizeof f) != 0) return NULL;
    return f.name;
}
