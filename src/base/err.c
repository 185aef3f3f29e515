/* err.c - the messages of the error table in err.h. */
#include "base/err.h"

static const char *const messages[] = {
#define X(name, msg) msg,
    ERR_TABLE(X)
#undef X
};

const char *err_str(int e)
{
    if (e < 0 || e >= ERR__COUNT)
        return "unknown error";
    return messages[e];
}
