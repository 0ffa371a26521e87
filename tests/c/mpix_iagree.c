/* MPIX_Comm_iagree (MPICH 4.1's signature; Billboard exports it beyond MPICH 4.0's ABI): the
 * bitwise AND of every member's flag, written when the request completes.
 *
 *  - mpi4py's testIAgree order, which breaks MPI's ordering rule: rank 0 starts the iagree,
 *    tests it, then enters a barrier; the others enter the barrier first and start the iagree
 *    after it. On MPI_COMM_WORLD, and on a duplicate whose blocking collectives already run on
 *    the shared-memory board (where an allreduce standing in for the iagree would pair with the
 *    others' barrier). Rank 0's tests must not complete before the others joined.
 *  - Several iagrees in flight at once, mixed with Ibarrier and Iallreduce, completed in reverse
 *    order, by MPI_Waitall and by MPI_Testany sweeps; rank 0 starts an iagree before an
 *    Iallreduce, the others after it.
 *  - A blocking MPIX_Comm_agree between iagrees (they take turns together).
 *  - On a revoked communicator (rank 0 revokes it while the others may be starting theirs),
 *    and on an intercommunicator (both groups' flags).
 *  - Bad arguments: a null request or flag, MPI_COMM_NULL.
 *
 * Built against MPICH 4.0.2's mpi.h (which has no MPIX_Comm_iagree), the program finds the
 * function in the library it runs with. MPICH 4.0.2 itself has none: run on Billboard only.
 * Any N >= 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "common.h"

typedef int (*iagree_fn)(MPI_Comm, int *, MPI_Request *);
static iagree_fn iagree;

enum { INFLIGHT = 8 };

static int class_of(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

/* mpi4py's testIAgree: rank 0 iagree, test, barrier, wait; the others barrier, iagree, wait. */
static void mpi4py_order(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int round = 0; round < 3; round++) {
        int flag = t_flag_of(rank, round);
        MPI_Request r = MPI_REQUEST_NULL;
        if (rank == 0) {
            MPI_CHK(iagree(comm, &flag, &r));
            int done = 0;
            for (int k = 0; k < 100 && !done; k++)
                MPI_CHK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
            /* The others start theirs only after the barrier, which waits for this rank. */
            CHECK(!done || size == 1, "%s: the iagree completed before the others started theirs (flag %#x)", what,
                  flag);
            MPI_CHK(MPI_Barrier(comm));
            if (!done)
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            MPI_CHK(MPI_Barrier(comm));
            MPI_CHK(iagree(comm, &flag, &r));
            MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
        CHECK(r == MPI_REQUEST_NULL, "%s: the completed request was not freed", what);
        CHECK(flag == t_flags_and(size, round), "%s round %d: agreed flag %#x, expected %#x", what, round, flag,
              t_flags_and(size, round));
        /* The barrier and the agreement did not mix: collectives still line up after them. */
        int one = 1, sum = 0;
        MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
        CHECK_EQ(sum, size, "MPI_Allreduce after mpi4py's order");
    }
}

/* Several iagrees in flight at once, with other nonblocking collectives between them. */
static void in_flight(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int how = 0; how < 3; how++) {
        int flags[INFLIGHT], sums[INFLIGHT], one = 1;
        MPI_Request agrees[INFLIGHT], others[INFLIGHT];
        for (int i = 0; i < INFLIGHT; i++) {
            flags[i] = t_flag_of(rank, 3 * how + i);
            sums[i] = -1;
            /* Rank 0 starts each iagree before the Iallreduce beside it, the others after. */
            if (rank == 0)
                MPI_CHK(iagree(comm, &flags[i], &agrees[i]));
            if (i % 2 == 0)
                MPI_CHK(MPI_Iallreduce(&one, &sums[i], 1, MPI_INT, MPI_SUM, comm, &others[i]));
            else
                MPI_CHK(MPI_Ibarrier(comm, &others[i]));
            if (rank != 0)
                MPI_CHK(iagree(comm, &flags[i], &agrees[i]));
        }
        if (how == 0) {
            for (int i = INFLIGHT - 1; i >= 0; i--) {
                MPI_CHK(MPI_Wait(&agrees[i], MPI_STATUS_IGNORE));
                MPI_CHK(MPI_Wait(&others[i], MPI_STATUS_IGNORE));
            }
        } else if (how == 1) {
            MPI_CHK(MPI_Waitall(INFLIGHT, agrees, MPI_STATUSES_IGNORE));
            MPI_CHK(MPI_Waitall(INFLIGHT, others, MPI_STATUSES_IGNORE));
        } else {
            MPI_Request all[2 * INFLIGHT];
            for (int i = 0; i < INFLIGHT; i++)
                all[i] = agrees[i], all[INFLIGHT + i] = others[i];
            for (int left = 2 * INFLIGHT; left > 0;) {
                int at = MPI_UNDEFINED, done = 0;
                MPI_CHK(MPI_Testany(2 * INFLIGHT, all, &at, &done, MPI_STATUS_IGNORE));
                if (done && at != MPI_UNDEFINED)
                    left--;
            }
        }
        for (int i = 0; i < INFLIGHT; i++) {
            CHECK(flags[i] == t_flags_and(size, 3 * how + i),
                  "iagree %d of %d in flight (completion %d): %#x, expected %#x", i, INFLIGHT, how, flags[i],
                  t_flags_and(size, 3 * how + i));
            if (i % 2 == 0)
                CHECK_EQ(sums[i], size, "an MPI_Iallreduce between iagrees");
        }
        /* A blocking agree takes its turn among the iagrees. */
        int flag = t_flag_of(rank, 40 + how);
        MPI_CHK(MPIX_Comm_agree(comm, &flag));
        CHECK(flag == t_flags_and(size, 40 + how), "MPIX_Comm_agree after iagrees: %#x", flag);
    }
}

/* On a revoked communicator: rank 0 revokes it and starts an iagree, the others start theirs
 * whether or not the notice is there yet; then once every rank has seen it. */
static void revoked(void)
{
    MPI_Comm comm;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_CHK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Barrier(comm));
    if (t_rank == 0)
        MPI_CHK(MPIX_Comm_revoke(comm));
    int flag = t_flag_of(t_rank, 50);
    MPI_Request r;
    MPI_CHK(iagree(comm, &flag, &r));
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(flag == t_flags_and(t_size, 50), "MPIX_Comm_iagree while the communicator is revoked: %#x", flag);
    int rc, probed = 0;
    do
        rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &probed, MPI_STATUS_IGNORE);
    while (rc == MPI_SUCCESS);
    CHECK_EQ(class_of(rc), MPIX_ERR_REVOKED, "MPI_Iprobe on the revoked communicator");
    CHECK_EQ(class_of(MPI_Ibarrier(comm, &r)), MPIX_ERR_REVOKED, "MPI_Ibarrier on the revoked communicator");
    MPI_Request rs[2];
    int flags[2] = {t_flag_of(t_rank, 51), t_flag_of(t_rank, 52)};
    MPI_CHK(iagree(comm, &flags[0], &rs[0]));
    MPI_CHK(iagree(comm, &flags[1], &rs[1]));
    MPI_CHK(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
    CHECK(flags[0] == t_flags_and(t_size, 51) && flags[1] == t_flags_and(t_size, 52),
          "two iagrees on the revoked communicator: %#x %#x", flags[0], flags[1]);
    MPI_CHK(MPI_Comm_free(&comm));
}

/* On an intercommunicator of the even world ranks and the odd ones: the AND of both groups. */
static void intercomm(void)
{
    MPI_Comm local, inter;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_rank, &local));
    MPI_CHK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, t_rank % 2 == 0 ? 1 : 0, 43, &inter));
    MPI_Request rs[2];
    int flags[2] = {t_flag_of(t_rank, 60), t_flag_of(t_rank, 61)};
    MPI_CHK(iagree(inter, &flags[0], &rs[0]));
    MPI_CHK(MPI_Barrier(inter));
    MPI_CHK(iagree(inter, &flags[1], &rs[1]));
    MPI_CHK(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
    CHECK(flags[0] == t_flags_and(t_size, 60) && flags[1] == t_flags_and(t_size, 61),
          "iagrees on an intercommunicator: %#x %#x, expected %#x %#x", flags[0], flags[1], t_flags_and(t_size, 60),
          t_flags_and(t_size, 61));
    MPI_CHK(MPI_Comm_free(&inter));
    MPI_CHK(MPI_Comm_free(&local));
}

static void bad_arguments(void)
{
    MPI_Comm comm;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_CHK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    int flag = 1;
    MPI_Request r;
    CHECK(iagree(comm, &flag, NULL) != MPI_SUCCESS, "MPIX_Comm_iagree with a null request succeeded");
    CHECK(iagree(comm, NULL, &r) != MPI_SUCCESS, "MPIX_Comm_iagree with a null flag succeeded");
    CHECK_EQ(class_of(iagree(MPI_COMM_NULL, &flag, &r)), MPI_ERR_COMM, "MPIX_Comm_iagree on MPI_COMM_NULL");
    MPI_CHK(MPI_Comm_free(&comm));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "mpix_iagree", 1);
#ifdef BILLBOARD_MPI
    iagree = MPIX_Comm_iagree;
#else
    iagree = (iagree_fn)dlsym(RTLD_DEFAULT, "MPIX_Comm_iagree");
    CHECK(iagree != NULL, "the library has no MPIX_Comm_iagree");
#endif
    mpi4py_order(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    MPI_Comm dup;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHK(MPI_Barrier(dup)); /* on the board from here, where the ranks share a host */
    mpi4py_order(dup, "a duplicate with collectives on the board");
    in_flight(dup);
    MPI_CHK(MPI_Comm_free(&dup));
    revoked();
    if (t_size >= 2)
        intercomm();
    bad_arguments();
    return t_finish();
}
