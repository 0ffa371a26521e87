/* Operations of stress_mix.c: the messages of a point-to-point pattern (who sends what to whom,
 * posted with which wildcards; a received message is checked against what its status says it is,
 * whole and only once) and the collectives (blocking or not, each result checked). A record is one
 * request of the batch, or one blocking operation, with what is needed to check it. */
#ifndef BB_STRESS_MIX_OPS_H
#define BB_STRESS_MIX_OPS_H

#include "stress_mix_comm.h"

#define MAXJ 4 /* messages per sender and receiver in one pattern */
#define MAXREC 4096
#define MAXPAT 16

/* A point-to-point pattern or collective: its communicator and what its receives may get. */
typedef struct {
    uint64_t salt;
    int tagbase, force; /* force: element kind of all its messages (wildcard receives), -1 none */
    int n, map[MAXW];   /* its communicator: size, rank -> world rank */
    unsigned char seen[MAXW * MAXJ];
} pattern_t;

enum { R_SEND, R_RECV, R_COLL, R_IDUP };
typedef struct {
    int kind, done;
    MPI_Request req;
    layout_t L;
    void *buf, *buf2;
    pattern_t *p;
    int want_src, want_j; /* world rank and message index expected, -1 any */
    int any_src, any_tag; /* how the receive is posted */
    int coll, root, op, inplace;
    long count;
    int slot; /* R_IDUP */
} rec_t;

static rec_t recs[MAXREC];
static int nrec;
static pattern_t pats[MAXPAT];
static int npat;

static long stat_msgs, stat_bytes, stat_colls;

static rec_t *rec_new(int kind)
{
    SCHECK(nrec < MAXREC, "more than %d requests in a batch", MAXREC);
    rec_t *r = &recs[nrec++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->req = MPI_REQUEST_NULL;
    r->want_src = r->want_j = -1;
    return r;
}

static pattern_t *pat_new(const fam_t *f, uint64_t salt, int tagbase, int force)
{
    SCHECK(npat < MAXPAT, "more than %d patterns in a batch", MAXPAT);
    pattern_t *p = &pats[npat++];
    memset(p, 0, sizeof *p);
    p->salt = salt;
    p->tagbase = tagbase;
    p->force = force;
    p->n = fsize(f);
    memcpy(p->map, fmap(f), sizeof(int) * (size_t)p->n);
    return p;
}

/* ---- messages ---- */

typedef struct {
    int ints;
    long n;
    uint64_t base;
} msg_t;

static msg_t msg_spec(const pattern_t *p, int src, int dst, int j)
{
    uint64_t h = hash(p->salt, src, dst, j);
    msg_t m;
    m.base = h2(h, 3);
    int bytes = size_bytes(h2(h, 1));
    m.ints = p->force >= 0 ? p->force : (int)(h2(h, 2) & 1);
    m.n = m.ints ? (bytes / 4) & ~7 : bytes;
    return m;
}

static int comm_rank_of(const pattern_t *p, int world)
{
    for (int i = 0; i < p->n; i++)
        if (p->map[i] == world)
            return i;
    return -1;
}

/* Message j from me to `dst` (a world rank) on `comm`: posted (Isend or Issend), or only prepared. */
static rec_t *send_msg(pattern_t *p, MPI_Comm comm, int dst, int j, int post)
{
    rec_t *r = rec_new(R_SEND);
    msg_t m = msg_spec(p, ME, dst, j);
    uint64_t h = hash(m.base, 7, 0, 0);
    lay_make(&r->L, m.ints, m.n, h, 1);
    r->buf = lay_buffer(&r->L, m.base, 1);
    stat_msgs++;
    stat_bytes += m.ints ? 4 * m.n : m.n;
    if (!post)
        return r;
    int to = comm_rank_of(p, dst), tag = p->tagbase + j;
    TRACE("isend comm %#x to %d (world %d) tag %d, %ld %s", (unsigned)comm, to, dst, tag, m.n,
          m.ints ? "ints" : "bytes");
    if ((h >> 20) % 4 == 0)
        SCHK(MPI_Issend(r->buf, r->L.count, r->L.dt, to, tag, comm, &r->req));
    else
        SCHK(MPI_Isend(r->buf, r->L.count, r->L.dt, to, tag, comm, &r->req));
    if ((h >> 22) % 2)
        lay_free_type(&r->L);
    return r;
}

/* A receive that expects message j from world rank `src` (exact layout, maybe derived) or, src or
 * j -1, any message of the pattern up to `cap` elements (contiguous); posted with ANY_SOURCE
 * and/or ANY_TAG as any_src and any_tag say. */
static rec_t *recv_prep(pattern_t *p, int src, int j, int any_src, int any_tag, long cap)
{
    rec_t *r = rec_new(R_RECV);
    r->p = p;
    r->want_src = src;
    r->want_j = j;
    r->any_src = any_src || src < 0;
    r->any_tag = any_tag || j < 0;
    if (src >= 0 && j >= 0) {
        msg_t m = msg_spec(p, src, ME, j);
        lay_make(&r->L, m.ints, m.n, hash(m.base, 8, 0, 0), 1);
    } else {
        lay_make(&r->L, p->force, cap, 0, 0);
    }
    r->buf = lay_buffer(&r->L, 0, 0);
    return r;
}

static void recv_post(rec_t *r, MPI_Comm comm)
{
    const pattern_t *p = r->p;
    int src = r->any_src ? MPI_ANY_SOURCE : comm_rank_of(p, r->want_src);
    int tag = r->any_tag ? MPI_ANY_TAG : p->tagbase + r->want_j;
    TRACE("irecv comm %#x from %d tag %d", (unsigned)comm, src, tag);
    SCHK(MPI_Irecv(r->buf, r->L.count, r->L.dt, src, tag, comm, &r->req));
    if (hash(p->salt, ME, nrec, 9) % 2)
        lay_free_type(&r->L);
}

/* The receive completed with `st`: the message is the one it should be, whole and once. */
static void recv_check(rec_t *r, const MPI_Status *st)
{
    pattern_t *p = r->p;
    char what[200];
    SCHECK(st->MPI_SOURCE >= 0 && st->MPI_SOURCE < p->n, "receive: status source %d of %d", st->MPI_SOURCE, p->n);
    int src = p->map[st->MPI_SOURCE], j = st->MPI_TAG - p->tagbase;
    snprintf(what, sizeof what, "message %d from world rank %d (tag %d, %s %ld %s)", j, src, st->MPI_TAG,
             r->want_src < 0 ? "ANY_SOURCE" : "source", r->L.n, r->L.ints ? "ints" : "bytes");
    SCHECK(j >= 0 && j < MAXJ && (r->want_j < 0 || j == r->want_j), "%s: want message %d", what, r->want_j);
    SCHECK(r->want_src < 0 || src == r->want_src, "%s: want world rank %d", what, r->want_src);
    SCHECK(!p->seen[src * MAXJ + j], "%s: received twice", what);
    p->seen[src * MAXJ + j] = 1;
    msg_t m = msg_spec(p, src, ME, j);
    SCHECK(m.ints == r->L.ints, "%s: the sender sends %s", what, m.ints ? "ints" : "bytes");
    int count = -1;
    SCHK(MPI_Get_count(st, m.ints ? MPI_INT : MPI_BYTE, &count));
    SCHECK(count == m.n, "%s: count %d, want %ld", what, count, m.n);
    lay_check(&r->L, r->buf, m.base, m.n, what);
}

/* ---- collectives ---- */

enum { C_BARRIER, C_BCAST, C_ALLREDUCE, C_REDUCE, C_ALLGATHER, C_ALLTOALL, NCOLL };
static const char *coll_names[] = {"barrier", "bcast", "allreduce", "reduce", "allgather", "alltoall"};
static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_BXOR};

/* A rank's contribution to a reduction: small, so sums do not overflow. */
static int cval(const pattern_t *p, int world, long k) { return (int)(ival(h2(p->salt, (uint64_t)world), k) % 1000); }

static void coll_check(rec_t *r)
{
    const pattern_t *p = r->p;
    int n = p->n, me = comm_rank_of(p, ME);
    char what[160];
    snprintf(what, sizeof what, "%s of %ld on a communicator of %d (root %d)", coll_names[r->coll], r->count, n,
             r->root);
    const int *out = r->buf2;
    switch (r->coll) {
    case C_BCAST:
        lay_check(&r->L, r->buf, h2(p->salt, (uint64_t)p->map[r->root]), r->L.n, what);
        break;
    case C_ALLREDUCE:
    case C_REDUCE:
        if (r->coll == C_REDUCE && me != r->root)
            break;
        if (r->inplace)
            out = r->buf;
        for (long k = 0; k < r->count; k++) {
            int want = cval(p, p->map[0], k);
            for (int i = 1; i < n; i++) {
                int v = cval(p, p->map[i], k);
                want = r->op == 0 ? want + v : r->op == 1 ? (v > want ? v : want) : want ^ v;
            }
            SCHECK(out[k] == want, "%s: element %ld is %d, want %d", what, k, out[k], want);
        }
        break;
    case C_ALLGATHER:
    case C_ALLTOALL:
        for (int i = 0; i < n; i++) {
            uint64_t base = r->coll == C_ALLGATHER ? h2(p->salt, (uint64_t)p->map[i]) : hash(p->salt, p->map[i], ME, 5);
            for (long k = 0; k < r->count; k++)
                SCHECK((uint32_t)out[i * r->count + k] == ival(base, k),
                       "%s: element %ld from rank %d is %#x, want %#x", what, k, i, out[i * r->count + k],
                       ival(base, k));
        }
        break;
    }
}

/* Collective `type` on my part of f, blocking (checked at once) or not (added to the batch). */
static void coll_run(fam_t *f, uint64_t salt, int type, int blocking)
{
    int rootdraw = g(1 << 20), sizedraw = g(1 << 30), opdraw = g(3), inplace = g(2);
    if (!me_in(f))
        return;
    rec_t *r = rec_new(R_COLL);
    pattern_t *p = pat_new(f, salt, 0, 1);
    int n = p->n, me = comm_rank_of(p, ME);
    MPI_Comm c = f->comm;
    MPI_Request *rq = blocking ? NULL : &r->req;
    r->p = p;
    r->coll = type;
    r->root = rootdraw % n;
    r->op = opdraw;
    long total = (size_bytes(mix((uint64_t)sizedraw)) / 4) & ~7L;
    stat_colls++;
    TRACE("%s %s: %ld ints in all, root %d, op %d, in place %d", blocking ? "blocking" : "nonblocking",
          coll_names[type], total, r->root, r->op, inplace);
    switch (type) {
    case C_BARRIER:
        SCHK(blocking ? MPI_Barrier(c) : MPI_Ibarrier(c, rq));
        break;
    case C_BCAST: {
        /* Each rank its own layout: only the type signatures must agree. */
        lay_make(&r->L, 1, total, hash(salt, ME, 1, 1), 1);
        r->buf = lay_buffer(&r->L, h2(salt, (uint64_t)p->map[r->root]), me == r->root);
        SCHK(blocking ? MPI_Bcast(r->buf, r->L.count, r->L.dt, r->root, c)
                      : MPI_Ibcast(r->buf, r->L.count, r->L.dt, r->root, c, rq));
        break;
    }
    case C_ALLREDUCE:
    case C_REDUCE: {
        r->count = total / 4;
        r->inplace = inplace && type == C_ALLREDUCE;
        int *in = malloc(sizeof(int) * (size_t)(r->count + 1)), *out = malloc(sizeof(int) * (size_t)(r->count + 1));
        for (long k = 0; k < r->count; k++)
            in[k] = cval(p, ME, k);
        r->buf = in;
        r->buf2 = out;
        int cnt = (int)r->count;
        if (type == C_REDUCE)
            SCHK(blocking ? MPI_Reduce(in, out, cnt, MPI_INT, ops[r->op], r->root, c)
                          : MPI_Ireduce(in, out, cnt, MPI_INT, ops[r->op], r->root, c, rq));
        else
            SCHK(blocking ? MPI_Allreduce(r->inplace ? MPI_IN_PLACE : (void *)in, r->inplace ? in : out, cnt, MPI_INT,
                                          ops[r->op], c)
                          : MPI_Iallreduce(r->inplace ? MPI_IN_PLACE : (void *)in, r->inplace ? in : out, cnt,
                                           MPI_INT, ops[r->op], c, rq));
        break;
    }
    case C_ALLGATHER:
    case C_ALLTOALL: {
        r->count = total / n;
        long blocks = type == C_ALLTOALL ? n : 1;
        uint32_t *in = malloc(sizeof(int) * (size_t)(blocks * r->count + 1));
        int *out = malloc(sizeof(int) * (size_t)(n * r->count + 1));
        for (long i = 0; i < blocks; i++) {
            uint64_t base = type == C_ALLGATHER ? h2(salt, (uint64_t)ME) : hash(salt, ME, p->map[i], 5);
            for (long k = 0; k < r->count; k++)
                in[i * r->count + k] = ival(base, k);
        }
        r->buf = in;
        r->buf2 = out;
        int cnt = (int)r->count;
        if (type == C_ALLGATHER)
            SCHK(blocking ? MPI_Allgather(in, cnt, MPI_INT, out, cnt, MPI_INT, c)
                          : MPI_Iallgather(in, cnt, MPI_INT, out, cnt, MPI_INT, c, rq));
        else
            SCHK(blocking ? MPI_Alltoall(in, cnt, MPI_INT, out, cnt, MPI_INT, c)
                          : MPI_Ialltoall(in, cnt, MPI_INT, out, cnt, MPI_INT, c, rq));
        break;
    }
    }
    if (blocking) {
        coll_check(r);
        r->done = 1;
    }
}

#endif
