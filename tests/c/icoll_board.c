/* Nonblocking and persistent collectives that overlap, on one node (on Billboard, on the board
 * once a blocking collective agreed its slot), completed in arbitrary orders, with values
 * checked element by element. Any N >= 1.
 *
 *  - Batches of Ibarrier, Ibcast (1 to 256 ints, every root), Iallreduce and Ireduce with a
 *    non-commutative user operator (2x2 matrix products: rank order shows), Iallgather, Igather
 *    and Iscatter (1 to 16 ints a rank, every root), on MPI_COMM_WORLD
 *    and a duplicate, a blocking MPI_Allreduce between the starts, completed by MPI_Waitany,
 *    by MPI_Testall sweeps, or one MPI_Wait each in reverse order, beside a ring of
 *    point-to-point messages.
 *  - Persistent MPI_Barrier_init, MPI_Bcast_init, MPI_Allreduce_init and MPI_Reduce_init
 *    started ROUNDS times with MPI_Startall, new data before each start, results checked after
 *    each completion; two rounds' requests in flight at once on two sets of requests.
 */
#include "common.h"

enum { BATCHES = 40, K = 14, ROUNDS = 150, MAXLEN = 256, MAXN = 16, PART = 16 };

/* A 2x2 integer matrix product in rank order: inout = in x inout (mod 2^32). */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    unsigned *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        unsigned c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                         a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

/* Rank r's matrix k in op i. */
static void matrix(int r, int i, int k, unsigned m[4])
{
    m[0] = 1 + (r + i + k) % 3, m[1] = (r * 7 + k) % 5, m[2] = (i + k) % 4, m[3] = 1 + (r + k) % 2;
}

/* Every rank's matrix k in op i multiplied in rank order. */
static void product(int n, int i, int k, unsigned out[4])
{
    matrix(0, i, k, out);
    for (int r = 1; r < n; r++) {
        unsigned m[4];
        matrix(r, i, k, m);
        int one = 1;
        matmul(out, m, &one, NULL);
        memcpy(out, m, sizeof m);
    }
}

static int value(int root, int i, int j) { return root * 1000 + i * 31 + j; }

struct op {
    int kind, i, root, len;
    int bcast[MAXLEN];
    unsigned send[4 * 8], recv[4 * 8];
    int mine[MAXN * PART], all[MAXN * PART];
};

/* Element j of rank `from`'s part for rank `to` in op i. */
static int part_value(int from, int to, int i, int j) { return from * 100000 + to * 1000 + i * 7 + j; }

static MPI_Datatype mat;
static MPI_Op mul;

static void start(MPI_Comm c, struct op *o, int i, MPI_Request *r)
{
    int n, me;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    o->kind = i % 7, o->i = i, o->root = (i * 5 + 1) % n, o->len = 1 + (i * 37) % MAXLEN;
    if (o->kind >= 4) {
        o->len = 1 + i % PART;
        for (int to = 0; to < n; to++)
            for (int j = 0; j < o->len; j++) {
                o->mine[to * o->len + j] = part_value(me, o->kind == 6 ? to : 0, i, j);
                o->all[to * o->len + j] = -1;
            }
    }
    switch (o->kind) {
    case 4: MPI_CHK(MPI_Iallgather(o->mine, o->len, MPI_INT, o->all, o->len, MPI_INT, c, r)); break;
    case 5: MPI_CHK(MPI_Igather(o->mine, o->len, MPI_INT, o->all, o->len, MPI_INT, o->root, c, r)); break;
    case 6: MPI_CHK(MPI_Iscatter(o->mine, o->len, MPI_INT, o->all, o->len, MPI_INT, o->root, c, r)); break;
    case 0: MPI_CHK(MPI_Ibarrier(c, r)); break;
    case 1:
        for (int j = 0; j < o->len; j++)
            o->bcast[j] = me == o->root ? value(o->root, i, j) : -1;
        MPI_CHK(MPI_Ibcast(o->bcast, o->len, MPI_INT, o->root, c, r));
        break;
    case 2:
    case 3:
        o->len = 1 + i % 8;
        for (int k = 0; k < o->len; k++)
            matrix(me, i, k, &o->send[4 * k]);
        memset(o->recv, 0, sizeof o->recv);
        if (o->kind == 2)
            MPI_CHK(MPI_Iallreduce(o->send, o->recv, o->len, mat, mul, c, r));
        else
            MPI_CHK(MPI_Ireduce(o->send, o->recv, o->len, mat, mul, o->root, c, r));
    }
}

static void check(MPI_Comm c, const struct op *o)
{
    int n, me;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    if (o->kind == 1)
        for (int j = 0; j < o->len; j++)
            CHECK_EQ(o->bcast[j], value(o->root, o->i, j), "Ibcast element");
    if (o->kind == 4 || (o->kind == 5 && me == o->root))
        for (int from = 0; from < n; from++)
            for (int j = 0; j < o->len; j++)
                CHECK_EQ(o->all[from * o->len + j], part_value(from, 0, o->i, j), o->kind == 4 ? "Iallgather" : "Igather");
    if (o->kind == 6)
        for (int j = 0; j < o->len; j++)
            CHECK_EQ(o->all[j], part_value(o->root, me, o->i, j), "Iscatter");
    if (o->kind == 2 || (o->kind == 3 && me == o->root))
        for (int k = 0; k < o->len; k++) {
            unsigned want[4];
            product(n, o->i, k, want);
            for (int x = 0; x < 4; x++)
                CHECK_EQ(o->recv[4 * k + x], want[x], o->kind == 2 ? "Iallreduce in rank order" : "Ireduce in rank order");
        }
}

static void batches(MPI_Comm *comms, int ncomms)
{
    static struct op ops[2][K];
    MPI_Request r[2 * K];
    int n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    for (int b = 0; b < BATCHES; b++) {
        int in = -1, out = me * 100 + b;
        MPI_Request p2p[2];
        for (int k = 0; k < K; k++) {
            for (int c = 0; c < ncomms; c++)
                start(comms[c], &ops[c][k], b * K + k, &r[c * K + k]);
            if (k == K / 2) {
                int x = me + b, sum = 0;
                MPI_CHK(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comms[b % ncomms]));
                CHECK_EQ(sum, n * (n - 1) / 2 + n * b, "blocking Allreduce between the starts");
            }
            if (k == 1) {
                MPI_CHK(MPI_Irecv(&in, 1, MPI_INT, (me + n - 1) % n, 7, MPI_COMM_WORLD, &p2p[0]));
                MPI_CHK(MPI_Isend(&out, 1, MPI_INT, (me + 1) % n, 7, MPI_COMM_WORLD, &p2p[1]));
            }
        }
        int total = ncomms * K;
        switch (b % 3) {
        case 0:
            for (int left = total; left > 0; left--) {
                int idx;
                MPI_CHK(MPI_Waitany(total, r, &idx, MPI_STATUS_IGNORE));
                check(comms[idx / K], &ops[idx / K][idx % K]);
            }
            break;
        case 1: {
            int done = 0;
            while (!done)
                MPI_CHK(MPI_Testall(total, r, &done, MPI_STATUSES_IGNORE));
            for (int x = 0; x < total; x++)
                check(comms[x / K], &ops[x / K][x % K]);
            break;
        }
        default:
            for (int x = total - 1; x >= 0; x--) {
                MPI_CHK(MPI_Wait(&r[x], MPI_STATUS_IGNORE));
                check(comms[x / K], &ops[x / K][x % K]);
            }
        }
        MPI_CHK(MPI_Waitall(2, p2p, MPI_STATUSES_IGNORE));
        CHECK_EQ(in, ((me + n - 1) % n) * 100 + b, "point-to-point beside the collectives");
    }
}

/* One set of persistent requests on `c` with its buffers. */
struct persistent {
    MPI_Request r[4];
    int bcast[64], root;
    unsigned send[8], all[8], red[8];
};

static void persistent_init(MPI_Comm c, struct persistent *p, int root)
{
    p->root = root;
    MPI_CHK(MPI_Barrier_init(c, MPI_INFO_NULL, &p->r[0]));
    MPI_CHK(MPI_Bcast_init(p->bcast, 64, MPI_INT, root, c, MPI_INFO_NULL, &p->r[1]));
    MPI_CHK(MPI_Allreduce_init(p->send, p->all, 2, mat, mul, c, MPI_INFO_NULL, &p->r[2]));
    MPI_CHK(MPI_Reduce_init(p->send, p->red, 2, mat, mul, root, c, MPI_INFO_NULL, &p->r[3]));
}

static void persistent_start(struct persistent *p, int me, int i)
{
    for (int j = 0; j < 64; j++)
        p->bcast[j] = me == p->root ? value(p->root, i, j) : -1;
    for (int k = 0; k < 2; k++)
        matrix(me, i, k, &p->send[4 * k]);
    memset(p->all, 0, sizeof p->all);
    memset(p->red, 0, sizeof p->red);
    MPI_CHK(MPI_Startall(4, p->r));
}

static void persistent_check(struct persistent *p, int n, int me, int i)
{
    for (int j = 0; j < 64; j++)
        CHECK_EQ(p->bcast[j], value(p->root, i, j), "MPI_Bcast_init element");
    for (int k = 0; k < 2; k++) {
        unsigned want[4];
        product(n, i, k, want);
        for (int x = 0; x < 4; x++) {
            CHECK_EQ(p->all[4 * k + x], want[x], "MPI_Allreduce_init in rank order");
            if (me == p->root)
                CHECK_EQ(p->red[4 * k + x], want[x], "MPI_Reduce_init in rank order");
        }
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "icoll_board", 1);
    const int n = t_size, me = t_rank;
    CHECK(n <= MAXN, "at most %d ranks", MAXN);
    MPI_CHK(MPI_Type_contiguous(4, MPI_UNSIGNED, &mat));
    MPI_CHK(MPI_Type_commit(&mat));
    MPI_CHK(MPI_Op_create(matmul, 0, &mul));
    MPI_Comm comms[2] = {MPI_COMM_WORLD, MPI_COMM_NULL};
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]));
    /* A blocking collective first on each (on Billboard it agrees the board slot). */
    for (int c = 0; c < 2; c++)
        MPI_CHK(MPI_Barrier(comms[c]));
    batches(comms, 2);

    /* Persistent: two sets in flight at once on the duplicate, then one after another. */
    struct persistent a, b;
    persistent_init(comms[1], &a, 0);
    persistent_init(comms[1], &b, n - 1);
    for (int i = 0; i < ROUNDS; i += 2) {
        persistent_start(&a, me, i);
        persistent_start(&b, me, i + 1);
        if (i % 4 == 0) {
            MPI_CHK(MPI_Waitall(4, b.r, MPI_STATUSES_IGNORE));
            MPI_CHK(MPI_Waitall(4, a.r, MPI_STATUSES_IGNORE));
        } else {
            /* MPI_Test sweeps (MPICH 4.0.2's MPI_Testall answers MPI_ERR_IN_STATUS with
             * MPI_ERR_PENDING on persistent collectives not all complete yet). */
            int done[4] = {0, 0, 0, 0};
            while (!(done[0] && done[1] && done[2] && done[3]))
                for (int x = 0; x < 4; x++)
                    if (!done[x])
                        MPI_CHK(MPI_Test(&a.r[x], &done[x], MPI_STATUS_IGNORE));
            MPI_CHK(MPI_Waitall(4, b.r, MPI_STATUSES_IGNORE));
        }
        persistent_check(&a, n, me, i);
        persistent_check(&b, n, me, i + 1);
    }
    for (int x = 0; x < 4; x++) {
        MPI_CHK(MPI_Request_free(&a.r[x]));
        MPI_CHK(MPI_Request_free(&b.r[x]));
    }
    MPI_CHK(MPI_Comm_free(&comms[1]));
    MPI_CHK(MPI_Op_free(&mul));
    MPI_CHK(MPI_Type_free(&mat));
    return t_finish();
}
