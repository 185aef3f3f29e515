/* beacon.h - a page beacon's payload (docs: BEACON wire format in
 * README.md, "Site analytics"): base64url of a flat UTF-8 JSON object,
 * decoded into fixed buffers with no allocation, on the event loop.
 *
 * Every string is clamped as stored dimension values are (clamp_utf8:
 * DIM_MAX bytes, valid UTF-8, no control characters), but the referrer,
 * which keeps up to BEACON_REF_MAX bytes so that its host can be found.
 * Unknown fields (the nonce 'z' among them) are skipped, nested values too.
 * Pure, any thread. */
#ifndef SHORTD_BEACON_H
#define SHORTD_BEACON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clicks/classify.h"

#define BEACON_PAYLOAD_MAX 4096 /* base64 text of 'v'; larger is counted nowhere */
#define BEACON_REF_MAX 512

/* The payload's fields; "" (or 0) when absent. */
struct beacon {
    char p[DIM_MAX + 1]; /* path */
    char h[DIM_MAX + 1]; /* page host */
    char r[BEACON_REF_MAX + 1];
    char l[DIM_MAX + 1];                                    /* navigator.language */
    char tz[DIM_MAX + 1];                                   /* time zone */
    char us[DIM_MAX + 1], um[DIM_MAX + 1], uc[DIM_MAX + 1]; /* utm_* */
    char ev[DIM_MAX + 1];                                   /* event name: "" for a page view */
    char et[DIM_MAX + 1];                                   /* its target */
    int64_t w;                                              /* innerWidth; -1 when absent */
    bool uv, ss, bo;                                        /* the flags, when 1 (or true) */
};

/* Decodes 'v' (base64url, '+' '/' '=' tolerated; percent-encoded bytes of
 * a query decoded first) into 'b'. ERR_OK; ERR_TOOBIG past
 * BEACON_PAYLOAD_MAX; ERR_INVALID for bad base64, bad JSON or JSON that is
 * not an object. */
int beacon_decode(const char *v, size_t n, struct beacon *b);

/* The viewport class of a width: "xs" <576, "sm" <768, "md" <992, "lg"
 * <1200, else "xl"; NULL for a negative width (absent). */
const char *beacon_viewport(int64_t w);

#endif
