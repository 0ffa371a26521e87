/*
 * The held-message tests' stream (kept_buffers.c, waiting_held.c): MANY in-place messages of
 * LEN bytes with tag 3, message i filled from seed i, more than a 4 KiB ring holds; sent in
 * order, and received and checked in order (how many were bad).
 */
#include <string.h>
#include "pvm3.h"

#define LEN 1000
#define MANY 40

static void fill(char *out, int seed)
{
    for (int i = 0; i < LEN; i++)
        out[i] = (char)(i * 7 + seed);
}

static void send_many(int to)
{
    char out[LEN];
    for (int i = 0; i < MANY; i++) {
        fill(out, i);
        pvm_initsend(PvmDataInPlace);
        pvm_pkbyte(out, LEN, 1);
        pvm_send(to, 3);
    }
}

/* Messages from..to-1 of the stream. */
static int receive_many(int from_tid, int from, int to)
{
    char in[LEN], want[LEN];
    int bad = 0;
    for (int i = from; i < to; i++) {
        pvm_recv(from_tid, 3);
        bad += pvm_upkbyte(in, LEN, 1) < 0;
        fill(want, i);
        bad += memcmp(in, want, LEN) != 0;
    }
    return bad;
}
