/* MPICH's fault-tolerance calls (ULFM) on a job where no process fails (a failed rank ends a
 * Billboard job): MPIX_Comm_agree gives the bitwise AND of every rank's flag (on
 * MPI_COMM_WORLD and on a split), MPIX_Comm_failure_ack succeeds and the acknowledged group
 * is empty, MPIX_Comm_shrink makes a new communicator of every member (a new context: a
 * message on it does not match a receive on the parent); MPIX_Comm_revoke: mpix_revoke.c.
 * MPICH 4.0.2 (ch4) stops
 * the job with an internal assertion in each of these: run on Billboard only. Any N >= 1. */
#include "common.h"

static void agree(MPI_Comm comm, int rank, int size, const char *what)
{
    /* Rank r clears bit r % 8 of 0xff, and keeps bit 8: the AND clears the first min(size, 8). */
    int flag = 0x1ff & ~(1 << (rank % 8));
    int want = 0x1ff;
    for (int r = 0; r < size; r++)
        want &= ~(1 << (r % 8));
    MPI_CHK(MPIX_Comm_agree(comm, &flag));
    CHECK(flag == want, "%s: agreed flag %#x, expected %#x", what, flag, want);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "mpix_ft", 1);
    agree(MPI_COMM_WORLD, t_rank, t_size, "MPI_COMM_WORLD");
    MPI_Comm half;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_rank, &half));
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    agree(half, hr, hs, "a split of MPI_COMM_WORLD");

    MPI_CHK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
    MPI_Group failed = MPI_GROUP_NULL;
    MPI_CHK(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &failed));
    int n = -1;
    MPI_CHK(MPI_Group_size(failed, &n));
    CHECK_EQ(n, 0, "size of the acknowledged failed group");
    if (failed != MPI_GROUP_EMPTY)
        MPI_Group_free(&failed);

    MPI_Comm shrunk = MPI_COMM_NULL;
    MPI_CHK(MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk));
    int sr, ss, cmp;
    MPI_CHK(MPI_Comm_rank(shrunk, &sr));
    MPI_CHK(MPI_Comm_size(shrunk, &ss));
    CHECK(sr == t_rank && ss == t_size, "shrunk communicator: rank %d of %d", sr, ss);
    MPI_CHK(MPI_Comm_compare(shrunk, MPI_COMM_WORLD, &cmp));
    CHECK_EQ(cmp, MPI_CONGRUENT, "MPI_Comm_compare(shrunk, MPI_COMM_WORLD)");
    /* A new context: a message on the shrunk communicator is not seen on MPI_COMM_WORLD. */
    int v = 40 + t_rank, got = -1, pending = 1;
    MPI_Request s;
    MPI_CHK(MPI_Isend(&v, 1, MPI_INT, t_rank, 3, shrunk, &s));
    MPI_CHK(MPI_Iprobe(t_rank, 3, MPI_COMM_WORLD, &pending, MPI_STATUS_IGNORE));
    CHECK(!pending, "a message sent on the shrunk communicator matched on MPI_COMM_WORLD");
    MPI_CHK(MPI_Recv(&got, 1, MPI_INT, t_rank, 3, shrunk, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    CHECK_EQ(got, 40 + t_rank, "message on the shrunk communicator");
    agree(shrunk, sr, ss, "the shrunk communicator");

    MPI_CHK(MPI_Barrier(half));
    MPI_CHK(MPI_Comm_free(&half));
    MPI_CHK(MPI_Comm_free(&shrunk));
    return t_finish();
}
