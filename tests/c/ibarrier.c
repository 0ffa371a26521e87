/* MPI_Ibarrier: nonblocking, and still a barrier.
 *
 *  - It does not block: rank 1 starts one, then sends rank 0 the message rank 0 waits for
 *    before starting its own (a blocking Ibarrier would deadlock; the watchdog says so).
 *  - It does not complete early: until rank 0 has started, rank 1's MPI_Test says not done.
 *  - One in flight beside a blocking MPI_Barrier on the same communicator, and three in flight
 *    at once with a receive, completed by one MPI_Waitall; on a dup as well as the world.
 */
#include "common.h"

static void in_flight(MPI_Comm comm, const char *what)
{
    MPI_Request reqs[4];
    int rank, size, got = -1;
    MPI_CHK(MPI_Comm_rank(comm, &rank));
    MPI_CHK(MPI_Comm_size(comm, &size));
    MPI_CHK(MPI_Ibarrier(comm, &reqs[0]));
    MPI_CHK(MPI_Barrier(comm));
    MPI_CHK(MPI_Ibarrier(comm, &reqs[1]));
    MPI_CHK(MPI_Irecv(&got, 1, MPI_INT, (rank + size - 1) % size, 3, comm, &reqs[2]));
    MPI_CHK(MPI_Ibarrier(comm, &reqs[3]));
    MPI_CHK(MPI_Send(&rank, 1, MPI_INT, (rank + 1) % size, 3, comm));
    MPI_CHK(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 4; i++)
        CHECK(reqs[i] == MPI_REQUEST_NULL, "%s: Waitall left request %d", what, i);
    CHECK(got == (rank + size - 1) % size, "%s: received %d from the left neighbour", what, got);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "ibarrier", 1);

    /* Neither blocking nor early. */
    {
        MPI_Request r;
        int token = 0, flag = 0;
        if (t_rank == 0 && t_size > 1) {
            MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_EQ(token, 77, "token");
            MPI_CHK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
        } else {
            MPI_CHK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
            if (t_rank == 1) {
                /* Rank 0 has not started its Ibarrier: it waits for the token below. */
                for (int i = 0; i < 100; i++) {
                    MPI_CHK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
                    CHECK(!flag, "Ibarrier completed before rank 0 entered it");
                }
                token = 77;
                MPI_CHK(MPI_Send(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD));
            }
        }
        t_wait_bounded(&r, MPI_STATUS_IGNORE, 20.0, "Ibarrier");
        CHECK(r == MPI_REQUEST_NULL, "Test did not free the completed Ibarrier request");
    }

    in_flight(MPI_COMM_WORLD, "world");
    MPI_Comm dup;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    in_flight(dup, "dup");
    MPI_CHK(MPI_Comm_free(&dup));
    return t_finish();
}
