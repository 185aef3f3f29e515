/* id.c - event IDs (id.h). */
#include "events/id.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "base/banned.h"

static void id_from(const unsigned char raw[16], char out[EVENT_ID_SIZE])
{
    memcpy(out, "evt_", 4);
    sodium_bin2hex(out + 4, EVENT_ID_SIZE - 4, raw, 16);
}

void events_id_click(const char *journal_id, uint64_t pos_after, char out[EVENT_ID_SIZE])
{
    /* The position in 8 bytes, little-endian, so the input is unambiguous
     * whatever the journal id's length. */
    unsigned char pos[8], raw[16];
    for (int i = 0; i < 8; i++)
        pos[i] = (unsigned char)(pos_after >> (8 * i));
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, sizeof(raw));
    crypto_generichash_update(&h, (const unsigned char *)"click\0", 6);
    crypto_generichash_update(&h, (const unsigned char *)journal_id, strlen(journal_id) + 1);
    crypto_generichash_update(&h, pos, sizeof(pos));
    crypto_generichash_final(&h, raw, sizeof(raw));
    id_from(raw, out);
}

void events_id_random(char out[EVENT_ID_SIZE])
{
    unsigned char raw[16];
    randombytes_buf(raw, sizeof(raw));
    id_from(raw, out);
}

void events_id_expired(const char *code, int64_t expires_at, char out[EVENT_ID_SIZE])
{
    unsigned char at[8], raw[16];
    for (int i = 0; i < 8; i++)
        at[i] = (unsigned char)((uint64_t)expires_at >> (8 * i));
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, sizeof(raw));
    crypto_generichash_update(&h, (const unsigned char *)"expired\0", 8);
    crypto_generichash_update(&h, (const unsigned char *)code, strlen(code) + 1);
    crypto_generichash_update(&h, at, sizeof(at));
    crypto_generichash_final(&h, raw, sizeof(raw));
    id_from(raw, out);
}
