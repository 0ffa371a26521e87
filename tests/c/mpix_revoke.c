/* MPIX_Comm_revoke for real: rank 1 revokes a duplicate of MPI_COMM_WORLD once every other rank
 * is waiting on it (rank 0 in two nonblocking receives, one from any source; rank 2, if there is
 * one, in a blocking receive; the last rank of 3 or more after a large send to rank 0 that
 * nobody receives). The waiting receives fail with MPIX_ERR_REVOKED, the large send is released
 * (it completes), every rank learns of the revocation (a probe fails once the notice is there),
 * and every later call that communicates on the communicator fails with MPIX_ERR_REVOKED as it
 * starts: send, receive, barrier, allreduce, dup. Local calls, a second revoke and
 * MPI_Comm_free still work; so do MPIX_Comm_agree and MPIX_Comm_shrink (ULFM: how a program
 * recovers). A barrier already waiting when its communicator is revoked fails with
 * MPIX_ERR_REVOKED. MPI_COMM_WORLD and a new communicator are untouched. An intercommunicator
 * is revoked in both groups, and agree and shrink work on it over both groups; a late notice
 * does not revoke a newer communicator that reused the freed id without the revoker. MPICH 4.0.2
 * (ch4) stops the job with an internal assertion in MPIX_Comm_revoke: run on Billboard only.
 * N >= 2. */
#include <stdlib.h>
#include <unistd.h>
#include "common.h"

#define LARGE (1 << 20)

static int class_of(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

#define CHECK_REVOKED(rc, what) CHECK_EQ(class_of(rc), MPIX_ERR_REVOKED, what)

/* Rank 1 revokes an intercommunicator (even world ranks against odd ones) once every other rank
 * waits on it in a receive: the receives fail, every rank learns of it, and sends and
 * collectives on it fail as they start, in both groups; agree and shrink still work. */
static void revoke_intercomm(void)
{
    MPI_Comm local, inter;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_rank, &local));
    MPI_CHK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, t_rank % 2 == 0 ? 1 : 0, 42, &inter));
    MPI_CHK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    int x = -1, ready = 1, one = 1, sum = 0;
    MPI_Request r = MPI_REQUEST_NULL;
    if (t_rank != 1) {
        MPI_CHK(MPI_Irecv(&x, 1, MPI_INT, 0, 5, inter, &r));
        MPI_CHK(MPI_Send(&ready, 1, MPI_INT, 1, 98, MPI_COMM_WORLD));
    } else {
        for (int i = 0; i < t_size - 1; i++)
            MPI_CHK(MPI_Recv(&ready, 1, MPI_INT, MPI_ANY_SOURCE, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPIX_Comm_revoke(inter));
    }
    if (r != MPI_REQUEST_NULL)
        CHECK_REVOKED(MPI_Wait(&r, MPI_STATUS_IGNORE), "a receive on the revoked intercommunicator");
    int rc, flag = 0;
    do
        rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &flag, MPI_STATUS_IGNORE);
    while (rc == MPI_SUCCESS);
    CHECK_REVOKED(rc, "MPI_Iprobe on the revoked intercommunicator");
    CHECK_REVOKED(MPI_Send(&one, 1, MPI_INT, 0, 1, inter), "MPI_Send on the revoked intercommunicator");
    CHECK_REVOKED(MPI_Barrier(inter), "MPI_Barrier on the revoked intercommunicator");
    CHECK_REVOKED(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter), "MPI_Allreduce on it");

    /* ULFM over both groups, on the revoked intercommunicator: agree ANDs every member's flag
     * (each clears its world rank's bit), shrink gives an intercommunicator of both groups. */
    flag = 0xff & ~(1 << t_rank);
    MPI_CHK(MPIX_Comm_agree(inter, &flag));
    CHECK_EQ(flag, 0xff & ~((1 << t_size) - 1), "MPIX_Comm_agree on the revoked intercommunicator");
    MPI_Comm shrunk;
    MPI_CHK(MPIX_Comm_shrink(inter, &shrunk));
    int is_inter = 0, lsize = -1, rsize = -1, remote_sum = 0;
    MPI_CHK(MPI_Comm_test_inter(shrunk, &is_inter));
    MPI_CHK(MPI_Comm_size(shrunk, &lsize));
    MPI_CHK(MPI_Comm_remote_size(shrunk, &rsize));
    int evens = (t_size + 1) / 2, odds = t_size / 2;
    CHECK(is_inter, "MPIX_Comm_shrink of an intercommunicator is an intercommunicator");
    CHECK_EQ(lsize, t_rank % 2 == 0 ? evens : odds, "local size of the shrunk intercommunicator");
    CHECK_EQ(rsize, t_rank % 2 == 0 ? odds : evens, "remote size of the shrunk intercommunicator");
    for (int r = 1 - t_rank % 2; r < t_size; r += 2)
        remote_sum += r;
    MPI_CHK(MPI_Allreduce(&t_rank, &sum, 1, MPI_INT, MPI_SUM, shrunk));
    CHECK_EQ(sum, remote_sum, "MPI_Allreduce on the shrunk intercommunicator (the remote group's world ranks)");
    MPI_CHK(MPI_Comm_free(&shrunk));
    MPI_CHK(MPI_Comm_free(&inter));
    MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, local));
    MPI_CHK(MPI_Comm_free(&local));
}

/* A revoke notice that arrives after its communicator was freed cannot revoke a new
 * communicator that took the same context id without the revoker: the others free `old` and
 * make `fresh` of themselves alone (MPI_Comm_create_group: only they agree on its id, which is
 * then old's), and only then does rank 1 revoke `old`. */
static void late_notice(void)
{
    MPI_Comm old, fresh = MPI_COMM_NULL;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &old));
    int done = 1, one = 1, sum = 0;
    if (t_rank != 1) {
        MPI_CHK(MPI_Comm_free(&old));
        MPI_Group world, others;
        int revoker[1] = {1};
        MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
        MPI_CHK(MPI_Group_excl(world, 1, revoker, &others));
        MPI_CHK(MPI_Comm_create_group(MPI_COMM_WORLD, others, 7, &fresh));
        MPI_CHK(MPI_Comm_set_errhandler(fresh, MPI_ERRORS_RETURN));
        MPI_CHK(MPI_Group_free(&others));
        MPI_CHK(MPI_Group_free(&world));
        MPI_CHK(MPI_Send(&done, 1, MPI_INT, 1, 97, MPI_COMM_WORLD));
        /* The notice left rank 1 before this message on the same route: it is here. */
        MPI_CHK(MPI_Recv(&done, 1, MPI_INT, 1, 96, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        int flag = 0;
        MPI_CHK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, fresh, &flag, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, fresh));
        CHECK_EQ(sum, t_size - 1, "MPI_Allreduce on the communicator made after the free");
        MPI_CHK(MPI_Comm_free(&fresh));
    } else {
        for (int i = 0; i < t_size - 1; i++)
            MPI_CHK(MPI_Recv(&done, 1, MPI_INT, MPI_ANY_SOURCE, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPIX_Comm_revoke(old));
        for (int r = 0; r < t_size; r++)
            if (r != 1)
                MPI_CHK(MPI_Send(&done, 1, MPI_INT, r, 96, MPI_COMM_WORLD));
        MPI_CHK(MPI_Comm_free(&old));
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "mpix_revoke", 2);
    MPI_Comm comm;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_CHK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    int a = -1, b = -1, c = -1, ready = 1;
    char *large = calloc(LARGE, 1);
    CHECK(large != NULL, "no memory");
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, big = MPI_REQUEST_NULL;
    if (t_rank == 0) {
        MPI_CHK(MPI_Irecv(&a, 1, MPI_INT, 1, 5, comm, &r[0]));
        MPI_CHK(MPI_Irecv(&b, 1, MPI_INT, MPI_ANY_SOURCE, 6, comm, &r[1]));
    }
    if (t_size >= 3 && t_rank == t_size - 1)
        MPI_CHK(MPI_Isend(large, LARGE, MPI_CHAR, 0, 9, comm, &big));
    /* Rank 1 revokes once every other rank has said it is about to wait. */
    if (t_rank == 1) {
        for (int i = 0; i < t_size - 1; i++)
            MPI_CHK(MPI_Recv(&ready, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPIX_Comm_revoke(comm));
    } else {
        MPI_CHK(MPI_Send(&ready, 1, MPI_INT, 1, 99, MPI_COMM_WORLD));
    }
    if (t_rank == 0) {
        CHECK_REVOKED(MPI_Wait(&r[0], MPI_STATUS_IGNORE), "a receive from the revoker");
        CHECK_REVOKED(MPI_Wait(&r[1], MPI_STATUS_IGNORE), "a receive from any source");
        CHECK(a == -1 && b == -1, "a failed receive wrote its buffer (%d, %d)", a, b);
    }
    if (t_size >= 3 && t_rank == 2)
        CHECK_REVOKED(MPI_Recv(&c, 1, MPI_INT, 0, 7, comm, MPI_STATUS_IGNORE), "a blocking receive");
    if (big != MPI_REQUEST_NULL)
        MPI_CHK(MPI_Wait(&big, MPI_STATUS_IGNORE)); /* released by the receiver's revocation */

    /* Every rank learns of it (the test's watchdog bounds the wait). */
    int rc, flag = 0;
    do
        rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
    while (rc == MPI_SUCCESS);
    CHECK_REVOKED(rc, "MPI_Iprobe on a revoked communicator");

    /* Every later call that communicates on it fails as it starts. */
    int right = (t_rank + 1) % t_size, sum = 0, one = 1;
    CHECK_REVOKED(MPI_Send(&one, 1, MPI_INT, right, 1, comm), "MPI_Send");
    CHECK_REVOKED(MPI_Recv(&c, 1, MPI_INT, right, 1, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    MPI_Request q;
    CHECK_REVOKED(MPI_Isend(&one, 1, MPI_INT, right, 1, comm, &q), "MPI_Isend");
    CHECK_REVOKED(MPI_Barrier(comm), "MPI_Barrier");
    CHECK_REVOKED(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm), "MPI_Allreduce");
    MPI_Comm d = MPI_COMM_NULL;
    CHECK_REVOKED(MPI_Comm_dup(comm, &d), "MPI_Comm_dup");

    /* Local calls, a second revoke (by anyone), freeing. */
    int rank = -1, size = -1;
    MPI_CHK(MPI_Comm_rank(comm, &rank));
    MPI_CHK(MPI_Comm_size(comm, &size));
    CHECK(rank == t_rank && size == t_size, "rank %d of %d on the revoked communicator", rank, size);
    MPI_CHK(MPIX_Comm_revoke(comm));

    /* How a program recovers (ULFM): agree and shrink work on the revoked communicator. */
    flag = t_rank == 1 ? 0x0f : 0xff;
    MPI_CHK(MPIX_Comm_agree(comm, &flag));
    CHECK_EQ(flag, 0x0f, "MPIX_Comm_agree on the revoked communicator: the AND of the flags");
    MPI_Comm shrunk = MPI_COMM_NULL;
    MPI_CHK(MPIX_Comm_shrink(comm, &shrunk));
    MPI_CHK(MPI_Comm_size(shrunk, &size));
    CHECK_EQ(size, t_size, "size of the shrunk communicator (no process failed)");
    MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, shrunk));
    CHECK_EQ(sum, t_size, "MPI_Allreduce on the shrunk communicator");
    MPI_CHK(MPI_Comm_free(&shrunk));
    MPI_CHK(MPI_Comm_free(&comm));

    /* A collective already waiting (on the shared-memory board, where the ranks share a host)
     * is woken by a revocation and fails: the last rank revokes instead of joining. */
    MPI_Comm late;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &late));
    MPI_CHK(MPI_Comm_set_errhandler(late, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Barrier(late)); /* the board slot is agreed on: the next waits there */
    if (t_rank == t_size - 1) {
        usleep(200 * 1000);
        MPI_CHK(MPIX_Comm_revoke(late));
    } else {
        CHECK_REVOKED(MPI_Barrier(late), "MPI_Barrier waiting when its communicator is revoked");
        CHECK_REVOKED(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, late), "MPI_Allreduce after that");
    }
    MPI_CHK(MPI_Comm_free(&late));

    /* MPI_COMM_WORLD and a new communicator are untouched. */
    MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(sum, t_size, "MPI_Allreduce on MPI_COMM_WORLD after the revocation");
    MPI_Comm fresh;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &fresh));
    int got = -1, left = (t_rank + t_size - 1) % t_size;
    MPI_CHK(MPI_Sendrecv(&t_rank, 1, MPI_INT, right, 3, &got, 1, MPI_INT, left, 3, fresh, MPI_STATUS_IGNORE));
    CHECK_EQ(got, left, "a message on a communicator made after the revocation");
    MPI_CHK(MPI_Barrier(fresh));
    MPI_CHK(MPI_Comm_free(&fresh));
    free(large);
    revoke_intercomm();
    late_notice();
    return t_finish();
}
