/* Helpers of stress_mix.c: the seed-derived randomness, message sizes, buffer layouts (contiguous,
 * vector, indexed) and the data pattern every message carries and every receiver checks.
 *
 * Randomness comes in two kinds. `g(n)` is the schedule: every rank draws the same sequence, so
 * it may only be called where every rank calls it, whatever its membership. Everything that
 * differs per sender, receiver or message is a hash of the operation's salt and those names
 * (`hash`), which both ends compute alike without drawing. */
#ifndef BB_STRESS_MIX_H
#define BB_STRESS_MIX_H

#include "common.h"
#include <stdint.h>

#define MAXBYTES (256 * 1024) /* the largest message: far above the single-copy threshold */
#define SENTINEL 0xA5         /* every byte a receive must not write */

static uint64_t seed = 20240516;
static int iter;               /* the iteration under way, for failure messages */
static const char *phase = ""; /* what it is doing, for failure messages */
static int tracing;             /* argument "trace": every rank prints what it does */

#define TRACE(...)                                                                                                     \
    do {                                                                                                               \
        if (tracing) {                                                                                                 \
            char m_[256];                                                                                              \
            snprintf(m_, sizeof m_, __VA_ARGS__);                                                                      \
            fprintf(stderr, "[%d] %d: %s\n", t_rank, iter, m_);                                                        \
        }                                                                                                              \
    } while (0)

#define SCHECK(cond, ...)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            char m_[768];                                                                                              \
            snprintf(m_, sizeof m_, __VA_ARGS__);                                                                      \
            t_fail_at(__FILE__, __LINE__, "seed %llu iteration %d (%s): %s", (unsigned long long)seed, iter, phase,    \
                      m_);                                                                                             \
        }                                                                                                              \
    } while (0)
#define SCHK(call)                                                                                                     \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        SCHECK(rc_ == MPI_SUCCESS, "%s returned %d (%s)", #call, rc_, t_errstr(rc_));                                  \
    } while (0)

/* splitmix64's finalizer (Steele, Lea, Flood 2014). */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
static uint64_t h2(uint64_t a, uint64_t b) { return mix(a ^ mix(b)); }
static uint64_t hash(uint64_t salt, long a, long b, long c)
{
    return h2(h2(h2(salt, (uint64_t)a), (uint64_t)b), (uint64_t)c);
}

static uint64_t g_state;
/* The shared schedule: uniform in [0, n). */
static int g(int n)
{
    g_state = mix(g_state);
    return (int)(g_state % (uint64_t)n);
}

/* Message sizes in bytes, weighted toward the protocol thresholds (eager 4 KiB, inline 8 KiB,
 * single copy above) and small messages. */
static int size_bytes(uint64_t h)
{
    static const int edges[] = {4095, 4096, 4097, 8191, 8192, 8193, 16384, 65536, 65537, MAXBYTES};
    int r = (int)(h % 100);
    uint64_t v = h >> 8;
    if (r < 12)
        return 0;
    if (r < 37)
        return 1 + (int)(v % 64);
    if (r < 57)
        return 65 + (int)(v % 4032);
    if (r < 67)
        return edges[v % 10];
    if (r < 89)
        return 4097 + (int)(v % (65536 - 4096));
    return 65537 + (int)(v % (MAXBYTES - 65536));
}

/* The values of a message: element k of the message whose base is `base` (a hash of its sender,
 * receiver, iteration, operation and index), so a wrong, shifted or foreign element shows. */
static uint32_t ival(uint64_t base, long k) { return (uint32_t)(base ^ (base >> 29)) ^ ((uint32_t)k * 2654435761u); }
static uint8_t bval(uint64_t base, long k) { return (uint8_t)(ival(base, k) >> 11); }

/* Where the elements of a buffer lie: blocks of elements (MPI_INT or MPI_BYTE) in a span. */
typedef struct {
    int ints;              /* elements are MPI_INT (1) or MPI_BYTE (0) */
    long n;                /* elements the layout holds */
    int how;               /* 0 contiguous, 1 vector, 2 indexed */
    int b, s;              /* vector: block length and stride */
    int nblk, *len, *disp; /* indexed blocks */
    long span;             /* elements the buffer needs */
    MPI_Datatype dt;       /* the datatype the call names, `count` times */
    int count;
    int owned; /* dt is a derived type not yet freed */
} layout_t;

static size_t lay_bytes(const layout_t *L) { return (size_t)L->span * (L->ints ? 4 : 1); }

/* Contiguous for bytes; for ints (n a multiple of 8) contiguous, a vector or an indexed type,
 * chosen by `h`, unless `derived` is 0. */
static void lay_make(layout_t *L, int ints, long n, uint64_t h, int derived)
{
    memset(L, 0, sizeof *L);
    L->ints = ints;
    L->n = L->span = n;
    L->dt = ints ? MPI_INT : MPI_BYTE;
    L->count = (int)n;
    int pick = (int)(h % 4);
    h >>= 2;
    if (!ints || n == 0 || !derived || pick < 2)
        return;
    if (pick == 2) {
        static const int bs[] = {1, 2, 4, 8};
        L->how = 1;
        L->b = bs[h % 4];
        L->s = L->b + (int)((h >> 2) % 4);
        int nb = (int)(n / L->b);
        L->span = (long)(nb - 1) * L->s + L->b;
        SCHK(MPI_Type_vector(nb, L->b, L->s, MPI_INT, &L->dt));
    } else {
        L->how = 2;
        L->len = malloc(sizeof(int) * (size_t)n);
        L->disp = malloc(sizeof(int) * (size_t)n);
        long k = 0, pos = 0;
        while (k < n) {
            h = mix(h);
            int len = 1 + (int)(h % 16);
            if (len > n - k)
                len = (int)(n - k);
            pos += (long)((h >> 8) % 3);
            L->disp[L->nblk] = (int)pos;
            L->len[L->nblk++] = len;
            pos += len;
            k += len;
        }
        L->span = pos;
        SCHK(MPI_Type_indexed(L->nblk, L->len, L->disp, MPI_INT, &L->dt));
    }
    SCHK(MPI_Type_commit(&L->dt));
    L->count = 1;
    L->owned = 1;
}

/* A derived type may be freed while an operation that uses it is pending (MPI 3.1 4.1.9). */
static void lay_free_type(layout_t *L)
{
    if (L->owned)
        SCHK(MPI_Type_free(&L->dt));
    L->owned = 0;
}

static void lay_free(layout_t *L)
{
    lay_free_type(L);
    free(L->len);
    free(L->disp);
    L->len = L->disp = NULL;
}

static int lay_nblk(const layout_t *L) { return L->how == 0 ? (L->n > 0) : L->how == 1 ? (int)(L->n / L->b) : L->nblk; }

static void lay_blk(const layout_t *L, int i, long *disp, long *len)
{
    if (L->how == 0) {
        *disp = 0;
        *len = L->n;
    } else if (L->how == 1) {
        *disp = (long)i * L->s;
        *len = L->b;
    } else {
        *disp = L->disp[i];
        *len = L->len[i];
    }
}

/* A buffer for the layout, filled with the message `base`'s values (base 0: sentinel only). */
static void *lay_buffer(const layout_t *L, uint64_t base, int fill)
{
    size_t bytes = lay_bytes(L);
    unsigned char *buf = malloc(bytes ? bytes : 1);
    memset(buf, SENTINEL, bytes);
    if (!fill)
        return buf;
    long k = 0;
    for (int i = 0, nb = lay_nblk(L); i < nb; i++) {
        long d, len;
        lay_blk(L, i, &d, &len);
        for (long t = 0; t < len; t++, k++) {
            if (L->ints)
                ((uint32_t *)buf)[d + t] = ival(base, k);
            else
                buf[d + t] = bval(base, k);
        }
    }
    return buf;
}

/* The first `nvals` elements of the layout hold message `base`'s values; every other byte of the
 * buffer is still the sentinel. */
static void lay_check(const layout_t *L, const void *buf, uint64_t base, long nvals, const char *what)
{
    const uint8_t *b8 = buf;
    const uint32_t *b32 = buf;
    const uint32_t sent32 = 0x01010101u * SENTINEL;
    long k = 0, pos = 0;
    for (int i = 0, nb = lay_nblk(L); i <= nb; i++) {
        long d = L->span, len = 0;
        if (i < nb)
            lay_blk(L, i, &d, &len);
        for (; pos < d; pos++) {
            uint32_t got = L->ints ? b32[pos] : b8[pos];
            SCHECK(got == (L->ints ? sent32 : SENTINEL), "%s: gap element at offset %ld was written (%#x)", what, pos,
                   got);
        }
        for (long t = 0; t < len; t++, k++, pos++) {
            uint32_t got = L->ints ? b32[pos] : b8[pos];
            uint32_t want = k >= nvals ? (L->ints ? sent32 : SENTINEL) : L->ints ? ival(base, k) : bval(base, k);
            SCHECK(got == want, "%s: element %ld of %ld (offset %ld, layout %d) is %#x, want %#x", what, k, nvals, pos,
                   L->how, got, want);
        }
    }
}

#endif
