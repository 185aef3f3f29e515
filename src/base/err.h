/* err.h - the error codes every fallible function returns.
 * One table generates the enum and its messages (libuv's errno map). */
#ifndef SHORTD_ERR_H
#define SHORTD_ERR_H

#define ERR_TABLE(X)                                                                               \
    X(OK, "success")                                                                               \
    X(NOMEM, "out of memory")                                                                      \
    X(NOTFOUND, "not found")                                                                       \
    X(EXISTS, "already taken")                                                                     \
    X(INVALID, "invalid argument")                                                                 \
    X(TOOBIG, "exceeds the configured limit")                                                      \
    X(GONE, "no longer available")                                                                 \
    X(FORBIDDEN, "not allowed")                                                                    \
    X(MISMATCH, "idempotency key reused with a different request")                                 \
    X(BUSY, "temporarily unavailable")                                                             \
    X(AGAIN, "not known here yet: ask where the store may be read")                                \
    X(STORAGE, "storage backend failure")                                                          \
    X(IO, "input/output error")

enum err {
#define X(name, msg) ERR_##name,
    ERR_TABLE(X)
#undef X
        ERR__COUNT
};

const char *err_str(int e);

#endif
