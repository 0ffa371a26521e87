/* Nonblocking collectives started in another order, relative to the blocking ones, on
 * different ranks. The standard calls this erroneous (all collectives in one order), but MPICH
 * and Open MPI keep the two apart (their tags differ) and real programs rely on it: mpi4py's
 * test_ulfm testIAgree, whose fallback for MPIX_Comm_iagree is an MPI_Iallreduce(MPI_BAND).
 * On Billboard the board (shared-memory collectives, once a blocking collective agreed the
 * communicator's slot) must pair nonblocking collectives only with nonblocking ones and
 * blocking only with blocking ones, each in their own order.
 *
 *  - mpi4py's fallback order: rank 0 starts an MPI_Iallreduce(BAND), tests it 100 times, enters
 *    MPI_Barrier, then waits; the others enter MPI_Barrier first, then start the Iallreduce and
 *    wait. Rank 0's tests must not complete before the others started theirs (they cannot: the
 *    barrier holds them), and every rank gets the AND of every member's flag.
 *  - Batches of Ibarrier, Ibcast, Ireduce and Iallreduce merged with Barrier, Bcast, Reduce and
 *    Allreduce in a different order on each rank (and each round), 1 to 100 ints (inline and
 *    data-area posts), every root; the requests completed at the end of the batch; every
 *    result checked on every rank.
 * On MPI_COMM_WORLD and on a duplicate, each after a blocking collective (the board's slot is
 * agreed), and on a fresh duplicate before any blocking one. Any N >= 1. */
#include "common.h"

enum { ROUNDS = 12, BATCHES = 24, NB = 4, MAXLEN = 100 };

/* mpi4py's testIAgree with its fallback: rank 0 Iallreduce, Test x100, Barrier, Wait; the
 * others Barrier, Iallreduce, Wait. */
static void mpi4py_fallback(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int round = 0; round < ROUNDS; round++) {
        int flag = t_flag_of(rank, round), agreed = -1;
        MPI_Request r = MPI_REQUEST_NULL;
        if (rank == 0) {
            MPI_CHK(MPI_Iallreduce(&flag, &agreed, 1, MPI_INT, MPI_BAND, comm, &r));
            int done = 0;
            for (int k = 0; k < 100 && !done; k++)
                MPI_CHK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
            CHECK(!done || size == 1,
                  "%s round %d: rank 0's Iallreduce completed (result %#x) before the others started theirs", what,
                  round, agreed);
            MPI_CHK(MPI_Barrier(comm));
            MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            MPI_CHK(MPI_Barrier(comm));
            MPI_CHK(MPI_Iallreduce(&flag, &agreed, 1, MPI_INT, MPI_BAND, comm, &r));
            MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
        CHECK(agreed == t_flags_and(size, round), "%s round %d: Iallreduce(BAND) gave %#x, expected %#x", what, round,
              agreed, t_flags_and(size, round));
        /* Blocking collectives still line up after it. */
        int one = 1, sum = 0;
        MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
        CHECK_EQ(sum, size, "allreduce after the fallback");
    }
}

/* The value rank r contributes at element i of op k in batch b. */
static int val(int r, int b, int k, int i)
{
    return (r + 1) * 1000 + b * 37 + k * 11 + i;
}

static int sum_of(int n, int b, int k, int i)
{
    int s = 0;
    for (int r = 0; r < n; r++)
        s += val(r, b, k, i);
    return s;
}

/* One batch: NB nonblocking collectives (Ibarrier, Ibcast, Ireduce, Iallreduce) in that order,
 * NB blocking ones (Barrier, Bcast, Reduce, Allreduce) in that order, merged in an order of
 * this rank's own; then the requests are waited for and every result checked. */
static void batch(MPI_Comm comm, int b, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int len = 1 + (b * 13) % MAXLEN, root = b % size;
    static int nsend[NB][MAXLEN], nrecv[NB][MAXLEN], bsend[NB][MAXLEN], brecv[NB][MAXLEN];
    for (int k = 0; k < NB; k++)
        for (int i = 0; i < MAXLEN; i++) {
            nsend[k][i] = val(rank, b, k, i), nrecv[k][i] = -1;
            bsend[k][i] = val(rank, b, k + NB, i), brecv[k][i] = -1;
        }
    /* Ibcast and Bcast move the root's buffer: prefill it, the others' hold garbage. */
    if (rank == root) {
        memcpy(nrecv[1], nsend[1], sizeof nrecv[1]);
        memcpy(brecv[1], bsend[1], sizeof brecv[1]);
    }
    MPI_Request reqs[NB];
    /* This rank's merge: bit s of `pattern` set = the s-th call is a nonblocking one. */
    unsigned pattern = (unsigned)(rank * 0x9e37 + b * 0x45d9 + 0x1234) * 2654435761u >> 7;
    int n = 0, m = 0;
    for (int s = 0; n < NB || m < NB; s++) {
        int take_nb = m == NB || (n < NB && (pattern >> (s % 24) & 1));
        if (take_nb) {
            switch (n) {
            case 0:
                MPI_CHK(MPI_Ibarrier(comm, &reqs[0]));
                break;
            case 1:
                MPI_CHK(MPI_Ibcast(nrecv[1], len, MPI_INT, root, comm, &reqs[1]));
                break;
            case 2:
                MPI_CHK(MPI_Ireduce(nsend[2], nrecv[2], len, MPI_INT, MPI_SUM, root, comm, &reqs[2]));
                break;
            case 3:
                MPI_CHK(MPI_Iallreduce(nsend[3], nrecv[3], len, MPI_INT, MPI_SUM, comm, &reqs[3]));
                break;
            }
            n++;
        } else {
            switch (m) {
            case 0:
                MPI_CHK(MPI_Barrier(comm));
                break;
            case 1:
                MPI_CHK(MPI_Bcast(brecv[1], len, MPI_INT, root, comm));
                break;
            case 2:
                MPI_CHK(MPI_Reduce(bsend[2], brecv[2], len, MPI_INT, MPI_SUM, root, comm));
                break;
            case 3:
                MPI_CHK(MPI_Allreduce(bsend[3], brecv[3], len, MPI_INT, MPI_SUM, comm));
                break;
            }
            m++;
        }
    }
    MPI_CHK(MPI_Waitall(NB, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < len; i++) {
        CHECK(nrecv[1][i] == val(root, b, 1, i), "%s batch %d: Ibcast[%d] from %d gave %d, expected %d", what, b, i,
              root, nrecv[1][i], val(root, b, 1, i));
        CHECK(brecv[1][i] == val(root, b, 1 + NB, i), "%s batch %d: Bcast[%d] from %d gave %d, expected %d", what, b,
              i, root, brecv[1][i], val(root, b, 1 + NB, i));
        if (rank == root) {
            CHECK(nrecv[2][i] == sum_of(size, b, 2, i), "%s batch %d: Ireduce[%d] gave %d, expected %d", what, b, i,
                  nrecv[2][i], sum_of(size, b, 2, i));
            CHECK(brecv[2][i] == sum_of(size, b, 2 + NB, i), "%s batch %d: Reduce[%d] gave %d, expected %d", what, b,
                  i, brecv[2][i], sum_of(size, b, 2 + NB, i));
        }
        CHECK(nrecv[3][i] == sum_of(size, b, 3, i), "%s batch %d: Iallreduce[%d] gave %d, expected %d", what, b, i,
              nrecv[3][i], sum_of(size, b, 3, i));
        CHECK(brecv[3][i] == sum_of(size, b, 3 + NB, i), "%s batch %d: Allreduce[%d] gave %d, expected %d", what, b,
              i, brecv[3][i], sum_of(size, b, 3 + NB, i));
    }
}

static void all_cases(MPI_Comm comm, const char *what)
{
    mpi4py_fallback(comm, what);
    for (int b = 0; b < BATCHES; b++)
        batch(comm, b, what);
    mpi4py_fallback(comm, what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    t_setup("icoll_order", 1);

    MPI_Comm fresh;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &fresh));
    /* Before any blocking collective on it: nonblocking ones first on some ranks. */
    all_cases(fresh, "fresh duplicate");
    MPI_CHK(MPI_Comm_free(&fresh));

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    all_cases(MPI_COMM_WORLD, "MPI_COMM_WORLD");

    MPI_Comm dup;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHK(MPI_Barrier(dup));
    all_cases(dup, "duplicate");
    MPI_CHK(MPI_Comm_free(&dup));

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (t_rank == 0)
        printf("PASS icoll_order\n");
    MPI_Finalize();
    return 0;
}
