/* Objects the program frees while something still uses them (MPI 4.0 sections 6.4.3, 5.1.9,
 * 6.3.2, 6.9, 8.3): MPI_Comm_free, MPI_Type_free, MPI_Op_free, MPI_Errhandler_free and
 * MPI_Group_free only mark the object; it lives on while operations, requests or other objects
 * use it, as in MPICH 4.0.2.
 *
 *  - Persistent requests of every mode on a communicator freed after the init: they start and
 *    complete round after round, on that communicator and no other (a communicator made after
 *    the free, which may take its place in the tables, does not see their messages).
 *  - Nonblocking sends and receives, a nonblocking barrier and reduction (user operator, derived
 *    datatype), all started, then their communicator, datatype and operator freed, new types
 *    made, then waited: the user function is handed the live type, not a freed or reused handle.
 *  - A pending request's error does not go to the error handler of a communicator made after
 *    its own was freed.
 *  - MPI_Comm_idup whose parent is freed before the idup completes.
 *  - A user error handler freed while attached: MPI_Comm_get_errhandler gives it back, a dup
 *    inherits it, and an error calls it.
 *  - A group freed after MPI_Comm_create used it; a communicator's group outliving it.
 *  - A datatype freed while a type built from it lives (MPI_Type_contiguous of it keeps working,
 *    MPI_Type_get_contents names it).
 * Any N >= 1. */
#include "common.h"

enum { N = 64 };

static int right, left;

/* Sends `k` messages on `a` (tag 7) and `k` on `b` (tag 7), then receives `k` on a persistent
 * receive of `a`: each must be from `a`. */
static void persistent_on_freed(void)
{
    MPI_Comm c, other;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    static int sbuf[5][N], rbuf[5][N];
    int bsize = 0;
    MPI_CHK(MPI_Pack_size(N, MPI_INT, c, &bsize));
    bsize = 2 * (bsize + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc(bsize);
    MPI_CHK(MPI_Buffer_attach(bbuf, bsize));
    MPI_Request r[10];
    MPI_CHK(MPI_Send_init(sbuf[0], N, MPI_INT, right, 0, c, &r[0]));
    MPI_CHK(MPI_Bsend_init(sbuf[1], N, MPI_INT, right, 1, c, &r[1]));
    MPI_CHK(MPI_Ssend_init(sbuf[2], N, MPI_INT, right, 2, c, &r[2]));
    MPI_CHK(MPI_Rsend_init(sbuf[3], N, MPI_INT, right, 3, c, &r[3]));
    MPI_CHK(MPI_Send_init(sbuf[4], N, MPI_INT, right, 4, c, &r[4]));
    for (int m = 0; m < 5; m++)
        MPI_CHK(MPI_Recv_init(rbuf[m], N, MPI_INT, left, m, c, &r[5 + m]));
    MPI_CHK(MPI_Comm_free(&c));
    CHECK(c == MPI_COMM_NULL, "MPI_Comm_free left the handle");
    /* Started before any new communicator is made. */
    for (int i = 0; i < N; i++)
        sbuf[0][i] = t_rank + i;
    MPI_CHK(MPI_Startall(5, &r[5]));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Startall(5, r));
    MPI_CHK(MPI_Waitall(10, r, MPI_STATUSES_IGNORE));
    CHECK_EQ(rbuf[0][N - 1], left + N - 1, "persistent receive on a freed communicator");
    /* A new communicator, which may reuse the freed one's place: messages on it with the same
     * tags must not reach the persistent receives. */
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &other));
    int decoy[N], got[N];
    for (int i = 0; i < N; i++)
        decoy[i] = -7;
    for (int round = 0; round < 3; round++) {
        for (int m = 0; m < 5; m++)
            for (int i = 0; i < N; i++) {
                sbuf[m][i] = round * 1000000 + m * 10000 + t_rank * 100 + i;
                rbuf[m][i] = -1;
            }
        MPI_CHK(MPI_Startall(5, &r[5]));
        /* Posted after the persistent receives: were they on `other`, the decoy would match
         * the one of tag 4. */
        MPI_Request d[2];
        MPI_CHK(MPI_Isend(decoy, N, MPI_INT, right, 4, other, &d[1]));
        MPI_CHK(MPI_Irecv(got, N, MPI_INT, left, 4, other, &d[0]));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* receives posted before the Rsend */
        MPI_CHK(MPI_Startall(5, r));
        MPI_CHK(MPI_Waitall(10, r, MPI_STATUSES_IGNORE));
        MPI_CHK(MPI_Waitall(2, d, MPI_STATUSES_IGNORE));
        for (int m = 0; m < 5; m++)
            for (int i = 0; i < N; i++)
                CHECK(rbuf[m][i] == round * 1000000 + m * 10000 + left * 100 + i,
                      "round %d: persistent receive %d on a freed communicator got [%d] = %d", round, m, i,
                      rbuf[m][i]);
        CHECK_EQ(got[0], -7, "the decoy on the new communicator");
    }
    for (int k = 0; k < 10; k++)
        MPI_CHK(MPI_Request_free(&r[k]));
    MPI_CHK(MPI_Comm_free(&other));
    void *d;
    int ds;
    MPI_CHK(MPI_Buffer_detach(&d, &ds));
    free(bbuf);
}

/* Calls whose datatype argument was not the live type (resized MPI_INT: 4 bytes of data). */
static int user_sum_bad;

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    int size = -1;
    if (MPI_Type_size(*t, &size) != MPI_SUCCESS || size != (int)sizeof(int))
        user_sum_bad++;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[2 * i] += ((int *)in)[2 * i];
}

/* Nonblocking operations whose communicator, datatype and operator are freed before the wait. */
static void nonblocking_on_freed(void)
{
    MPI_Comm c;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_Datatype every2; /* one int of each pair */
    MPI_CHK(MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every2));
    MPI_CHK(MPI_Type_commit(&every2));
    MPI_Datatype pair; /* an int and a hole: two ints wide */
    MPI_CHK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &pair));
    MPI_CHK(MPI_Type_commit(&pair));
    MPI_Op op;
    MPI_CHK(MPI_Op_create(user_sum, 1, &op));
    int s[N], rv[N], in[2 * N], red[2 * N];
    for (int i = 0; i < N; i++) {
        s[i] = t_rank * 1000 + i;
        rv[i] = -1;
    }
    for (int i = 0; i < 2 * N; i++) {
        in[i] = i % 2 ? -5 : t_rank + i;
        red[i] = -1;
    }
    MPI_Request r[4];
    MPI_CHK(MPI_Irecv(rv, 1, every2, left, 3, c, &r[0]));
    MPI_CHK(MPI_Isend(s, 1, every2, right, 3, c, &r[1]));
    MPI_CHK(MPI_Ibarrier(c, &r[2]));
    MPI_CHK(MPI_Iallreduce(in, red, N, pair, op, c, &r[3]));
    MPI_CHK(MPI_Comm_free(&c));
    MPI_CHK(MPI_Type_free(&every2));
    MPI_CHK(MPI_Type_free(&pair));
    MPI_CHK(MPI_Op_free(&op));
    /* New types, which would take the freed ones' places if they were gone. */
    MPI_Datatype decoys[4];
    for (int k = 0; k < 4; k++) {
        MPI_CHK(MPI_Type_contiguous(3 + k, MPI_CHAR, &decoys[k]));
        MPI_CHK(MPI_Type_commit(&decoys[k]));
    }
    MPI_CHK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
    for (int k = 0; k < 4; k++)
        MPI_CHK(MPI_Type_free(&decoys[k]));
    CHECK_EQ(user_sum_bad, 0, "user function calls handed a freed or reused datatype handle");
    for (int i = 0; i < N; i++)
        CHECK_EQ(rv[i], i % 2 ? -1 : left * 1000 + i, "receive with a freed datatype and communicator");
    int ranks = t_size * (t_size - 1) / 2;
    for (int i = 0; i < 2 * N; i += 2)
        CHECK_EQ(red[i], ranks + t_size * i, "Iallreduce with a freed operator, datatype, communicator");
}

/* An error of a pending request does not go to the handler of a communicator made after its own
 * was freed (fatal here). (Which one applies: MPICH 4.0.2 raises errors of MPI_Wait on the
 * world, whatever the request's communicator; ours on that communicator; both return here.) */
static void error_on_freed(void)
{
    MPI_Comm c, other;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_CHK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    int small = 0, big[4] = {1, 2, 3, 4};
    MPI_Request r[2];
    MPI_CHK(MPI_Irecv(&small, 1, MPI_INT, left, 0, c, &r[0]));
    MPI_CHK(MPI_Isend(big, 4, MPI_INT, right, 0, c, &r[1]));
    MPI_CHK(MPI_Comm_free(&c));
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &other));
    MPI_CHK(MPI_Comm_set_errhandler(other, MPI_ERRORS_ARE_FATAL));
    MPI_Status st;
    int rc = MPI_Wait(&r[0], &st);
    int class = -1;
    MPI_Error_class(rc, &class);
    CHECK_EQ(class, MPI_ERR_TRUNCATE, "truncated receive on a freed communicator: error class");
    MPI_CHK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Comm_free(&other));
}

/* MPI_Comm_idup whose parent is freed before the idup completes. */
static void idup_of_freed(void)
{
    MPI_Comm parent, c;
    MPI_Request r;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &parent));
    MPI_CHK(MPI_Comm_idup(parent, &c, &r));
    MPI_CHK(MPI_Comm_free(&parent));
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    int v = t_rank, w = -1;
    MPI_CHK(MPI_Sendrecv(&v, 1, MPI_INT, right, 0, &w, 1, MPI_INT, left, 0, c, MPI_STATUS_IGNORE));
    CHECK_EQ(w, left, "message on the idup of a freed communicator");
    MPI_CHK(MPI_Comm_free(&c));
}

static int handler_calls;
static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    handler_calls++;
}

/* A user error handler freed while attached stays attached. */
static void errhandler_freed(void)
{
    MPI_Comm c, d;
    MPI_Errhandler eh, got, got_d;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_CHK(MPI_Comm_create_errhandler(count_errors, &eh));
    MPI_CHK(MPI_Comm_set_errhandler(c, eh));
    MPI_Errhandler kept = eh;
    MPI_CHK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free left the handle");
    MPI_CHK(MPI_Comm_get_errhandler(c, &got));
    CHECK(got == kept, "MPI_Comm_get_errhandler after the handler was freed: %#x, want %#x", (unsigned)got,
          (unsigned)kept);
    MPI_CHK(MPI_Comm_dup(c, &d));
    MPI_CHK(MPI_Comm_get_errhandler(d, &got_d));
    CHECK(got_d == kept, "a dup inherits the freed handler: %#x, want %#x", (unsigned)got_d, (unsigned)kept);
    handler_calls = 0;
    int v = 0;
    MPI_Send(&v, 1, MPI_INT, t_size, 0, c); /* invalid rank: the handler runs */
    CHECK_EQ(handler_calls, 1, "calls of the freed handler on c");
    MPI_Send(&v, 1, MPI_INT, t_size, 0, d);
    CHECK_EQ(handler_calls, 2, "calls of the freed handler on its dup");
    MPI_CHK(MPI_Errhandler_free(&got));
    MPI_CHK(MPI_Errhandler_free(&got_d));
    MPI_CHK(MPI_Comm_free(&c));
    MPI_CHK(MPI_Comm_free(&d));
}

/* Groups: one freed after MPI_Comm_create used it; a communicator's group outliving it. */
static void groups_freed(void)
{
    MPI_Group world, odd;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int keep[1] = {0};
    MPI_CHK(MPI_Group_excl(world, 1, keep, &odd)); /* all but rank 0 */
    MPI_Comm c;
    MPI_CHK(MPI_Comm_create(MPI_COMM_WORLD, odd, &c));
    MPI_CHK(MPI_Group_free(&odd));
    MPI_CHK(MPI_Group_free(&world));
    if (t_rank == 0) {
        CHECK(c == MPI_COMM_NULL, "rank 0 is not in the group");
    } else {
        int size = -1, sum = 0, one = 1;
        MPI_CHK(MPI_Comm_size(c, &size));
        CHECK_EQ(size, t_size - 1, "size of the communicator of a freed group");
        MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
        CHECK_EQ(sum, t_size - 1, "allreduce on the communicator of a freed group");
        MPI_Group g;
        MPI_CHK(MPI_Comm_group(c, &g));
        MPI_CHK(MPI_Comm_free(&c));
        int gsize = -1, rank = -2;
        MPI_CHK(MPI_Group_size(g, &gsize));
        MPI_CHK(MPI_Group_rank(g, &rank));
        CHECK_EQ(gsize, t_size - 1, "size of a group whose communicator was freed");
        CHECK_EQ(rank, t_rank - 1, "rank in a group whose communicator was freed");
        MPI_CHK(MPI_Group_free(&g));
    }
}

/* A datatype freed while types built from it live. */
static void types_freed(void)
{
    MPI_Datatype pair, four, dup;
    MPI_CHK(MPI_Type_contiguous(2, MPI_INT, &pair));
    MPI_CHK(MPI_Type_dup(pair, &dup));
    MPI_CHK(MPI_Type_contiguous(2, pair, &four));
    MPI_Datatype kept = pair;
    MPI_CHK(MPI_Type_free(&pair));
    CHECK(pair == MPI_DATATYPE_NULL, "MPI_Type_free left the handle");
    MPI_Datatype eight;
    MPI_CHK(MPI_Type_contiguous(2, four, &eight)); /* built from a type whose base is freed */
    MPI_CHK(MPI_Type_commit(&eight));
    MPI_CHK(MPI_Type_commit(&dup));
    int size = 0;
    MPI_CHK(MPI_Type_size(eight, &size));
    CHECK_EQ(size, 8 * (int)sizeof(int), "size of a type over a freed one");
    int ni, na, nt, comb;
    MPI_CHK(MPI_Type_get_envelope(four, &ni, &na, &nt, &comb));
    CHECK_EQ(comb, MPI_COMBINER_CONTIGUOUS, "combiner of a type over a freed one");
    int ints[1];
    MPI_Aint aints[1];
    MPI_Datatype inner[1];
    MPI_CHK(MPI_Type_get_contents(four, 1, 0, 1, ints, aints, inner));
    CHECK(inner[0] == kept, "MPI_Type_get_contents names the freed type: %#x, want %#x", (unsigned)inner[0],
          (unsigned)kept);
    MPI_CHK(MPI_Type_size(inner[0], &size));
    CHECK_EQ(size, 2 * (int)sizeof(int), "size of the freed type through get_contents");
    MPI_CHK(MPI_Type_free(&inner[0]));
    int s[8], r[8];
    for (int i = 0; i < 8; i++) {
        s[i] = t_rank * 10 + i;
        r[i] = -1;
    }
    MPI_CHK(MPI_Sendrecv(s, 1, eight, right, 0, r, 1, eight, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 8; i++)
        CHECK_EQ(r[i], left * 10 + i, "data of a type over a freed one");
    MPI_CHK(MPI_Sendrecv(s, 1, dup, right, 0, r, 1, dup, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_EQ(r[1], left * 10 + 1, "data of the dup of a freed type");
    MPI_CHK(MPI_Type_free(&eight));
    MPI_CHK(MPI_Type_free(&four));
    MPI_CHK(MPI_Type_free(&dup));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "freed_handles", 1);
    right = (t_rank + 1) % t_size;
    left = (t_rank + t_size - 1) % t_size;
    persistent_on_freed();
    nonblocking_on_freed();
    error_on_freed();
    idup_of_freed();
    errhandler_freed();
    groups_freed();
    types_freed();
    return t_finish();
}
