/* migrations.c - the loop both backends bring their schema up with
 * (migrations.h). */
#include "store/migrations.h"

#include "base/err.h"
#include "base/banned.h"

int migrations_last(const struct migration *steps, size_t n)
{
    return n ? steps[n - 1].version : 0;
}

int migrations_run(const struct migration *steps, size_t n, int version,
                   int (*apply)(const struct migration *step, void *arg), void *arg, int *to)
{
    *to = version;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].version <= version)
            continue;
        int rc = apply(&steps[i], arg);
        if (rc != ERR_OK)
            return rc;
        *to = steps[i].version;
    }
    return ERR_OK;
}
