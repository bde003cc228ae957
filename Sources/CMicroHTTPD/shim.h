// libmicrohttpd (Debian's libmicrohttpd-dev) for MLToolHTTP. MHD_start_daemon is variadic, which Swift cannot call:
// mlt_mhd_start passes the options mltool uses as an MHD_OPTION_ARRAY, and parses the bind address here.
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/// What the daemon is started with (one struct: a new option is a field, not a new parameter).
typedef struct {
    unsigned connection_limit;        // MHD_OPTION_CONNECTION_LIMIT: connections open at once
    unsigned per_ip_limit;            // MHD_OPTION_PER_IP_CONNECTION_LIMIT (0: none)
    unsigned timeout_seconds;         // MHD_OPTION_CONNECTION_TIMEOUT: an idle or slow client is closed after this
    unsigned threads;                 // MHD_OPTION_THREAD_POOL_SIZE (epoll polling threads)
    size_t memory_limit;              // MHD_OPTION_CONNECTION_MEMORY_LIMIT: per connection (headers, read buffer)
} mlt_mhd_limits;

/// Starts a daemon on host:port (IPv4 or IPv6 literal; port 0: an ephemeral one) with its own epoll threads and
/// suspend/resume; NULL when the address is not a literal or the daemon cannot start (errno from MHD).
static inline struct MHD_Daemon *mlt_mhd_start(const char *host, uint16_t port, mlt_mhd_limits limits,
                                               MHD_AccessHandlerCallback handler, void *handler_cls,
                                               MHD_RequestCompletedCallback completed, void *completed_cls) {
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    const struct sockaddr *addr;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    memset(&v4, 0, sizeof v4);
    memset(&v6, 0, sizeof v6);
    if (inet_pton(AF_INET, host, &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(port);
        addr = (const struct sockaddr *)&v4;
    } else if (inet_pton(AF_INET6, host, &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(port);
        addr = (const struct sockaddr *)&v6;
        flags |= MHD_USE_IPv6;
    } else {
        return NULL;
    }
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_SOCK_ADDR, 0, (void *)addr },
        { MHD_OPTION_CONNECTION_LIMIT, (intptr_t)limits.connection_limit, NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)limits.per_ip_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)limits.timeout_seconds, NULL },
        { MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)(limits.threads > 0 ? limits.threads : 1), NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)limits.memory_limit, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// The port the daemon listens on (the ephemeral one when started with port 0); 0 when unknown.
static inline uint16_t mlt_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// One value of the request's headers (NULL when absent); MHD compares names case-insensitively.
static inline const char *mlt_mhd_header(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}

/// Queues `size` bytes (copied) with `status` and the headers (`names[i]: values[i]`); MHD_YES when queued.
static inline enum MHD_Result mlt_mhd_respond(struct MHD_Connection *connection, unsigned status, const void *body,
                                              size_t size, const char *const *names, const char *const *values,
                                              size_t header_count, int close_connection) {
    struct MHD_Response *response = MHD_create_response_from_buffer(size, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL) return MHD_NO;
    for (size_t i = 0; i < header_count; i++) MHD_add_response_header(response, names[i], values[i]);
    if (close_connection) MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result r = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return r;
}
