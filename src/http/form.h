/* form.h - a request's parameters as a web form sends them, for the
 * compatible APIs that take forms (YOURLS): the body's, when it is
 * application/x-www-form-urlencoded or multipart/form-data, before the
 * query string's, as PHP's $_REQUEST has them. Pure: it reads the request
 * and allocates only the value it returns. */
#ifndef SHORTD_FORM_H
#define SHORTD_FORM_H

#include <stddef.h>

#include "base/buf.h"
#include "http/http.h"

/* The first value of parameter 'name' in a body of Content-Type
 * 'content_type' (p NULL: none), else in 'query': decoded (%XX and '+' in
 * a urlencoded form; a multipart part as it is), in a new NUL-terminated
 * string (free it) of *n bytes, which may hold a NUL. NULL when neither
 * has it, when it cannot be decoded, or when it is over 'max' bytes. */
char *form_value(struct slice content_type, struct slice body, struct slice query, const char *name,
                 size_t max, size_t *n);

/* form_value of the request's Content-Type, body and query. */
char *form_param(const struct request *r, const char *name, size_t max, size_t *n);

#endif
