/* Request handles at their limits: a stale copy of a completed handle is an invalid request (not
 * a hang, not someone else's operation); requests on a communicator created late (after hundreds
 * of others) and more requests in flight at once than the compact handle form holds; operations
 * left unfinished at MPI_Finalize (an unmatched receive, a large send never waited for) neither
 * hang the job nor lose the message. Ring, any N >= 1. */
#include "common.h"

enum { MANY_COMMS = 600, MANY_REQS = 70000, BIG = 1 << 20 };

static int error_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "requests", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;

    /* ---- A copy of a handle whose operation completed: every call calls it invalid. */
    {
        int v = t_rank, w = -1, flag = 1;
        MPI_Request r, copy;
        MPI_Status st;
        MPI_CHK(MPI_Irecv(&w, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &r));
        copy = r;
        MPI_CHK(MPI_Send(&v, 1, MPI_INT, right, 1, MPI_COMM_WORLD));
        MPI_CHK(MPI_Wait(&r, &st));
        CHECK_EQ(w, left, "payload before the stale-handle checks");
        CHECK(r == MPI_REQUEST_NULL, "MPI_Wait did not null the handle");
        CHECK_EQ(error_class(MPI_Wait(&copy, &st)), MPI_ERR_REQUEST, "MPI_Wait on a stale handle: error class");
        CHECK_EQ(error_class(MPI_Test(&copy, &flag, &st)), MPI_ERR_REQUEST, "MPI_Test on a stale handle: error class");
        CHECK_EQ(error_class(MPI_Request_get_status(copy, &flag, &st)), MPI_ERR_REQUEST,
                 "MPI_Request_get_status on a stale handle: error class");
        CHECK_EQ(error_class(MPI_Cancel(&copy)), MPI_ERR_REQUEST, "MPI_Cancel on a stale handle: error class");
        MPI_Status sts[2];
        MPI_Request list[2] = {MPI_REQUEST_NULL, copy};
        int rc = MPI_Waitall(2, list, sts);
        CHECK_EQ(rc, MPI_ERR_IN_STATUS, "MPI_Waitall with a stale handle: return code");
        CHECK_EQ(sts[0].MPI_ERROR, MPI_SUCCESS, "MPI_Waitall: status of the null handle");
        CHECK_EQ(error_class(sts[1].MPI_ERROR), MPI_ERR_REQUEST, "MPI_Waitall: status of the stale handle");

        /* The same handle twice in one list: it completes once, the second is invalid. */
        w = -1;
        MPI_CHK(MPI_Irecv(&w, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &r));
        list[0] = list[1] = r;
        MPI_CHK(MPI_Send(&v, 1, MPI_INT, right, 2, MPI_COMM_WORLD));
        rc = MPI_Waitall(2, list, sts);
        CHECK_EQ(rc, MPI_ERR_IN_STATUS, "MPI_Waitall with one handle twice: return code");
        CHECK_EQ(sts[0].MPI_ERROR, MPI_SUCCESS, "MPI_Waitall with one handle twice: first status");
        CHECK_EQ(sts[0].MPI_SOURCE, left, "MPI_Waitall with one handle twice: source");
        CHECK_EQ(error_class(sts[1].MPI_ERROR), MPI_ERR_REQUEST, "MPI_Waitall with one handle twice: second status");
        CHECK_EQ(w, left, "payload of the receive named twice");
    }

    /* ---- Requests on the last of MANY_COMMS communicators: results and error handler are its. */
    {
        static MPI_Comm comms[MANY_COMMS];
        for (int i = 0; i < MANY_COMMS; i++)
            MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]));
        MPI_Comm last = comms[MANY_COMMS - 1];
        MPI_CHK(MPI_Comm_set_errhandler(last, MPI_ERRORS_RETURN));
        int sbuf[4], rbuf[4];
        MPI_Request rr[4], sr[4];
        MPI_Status sts[4];
        for (int i = 0; i < 4; i++) {
            rbuf[i] = -1;
            sbuf[i] = 100 * t_rank + i;
            MPI_CHK(MPI_Irecv(&rbuf[i], 1, MPI_INT, left, i, last, &rr[i]));
        }
        /* Nothing sent on MPI_COMM_WORLD with these tags may match them. */
        int flag = 1;
        MPI_CHK(MPI_Testall(4, rr, &flag, sts));
        CHECK_EQ(flag, 0, "Testall on the last communicator before any send");
        MPI_CHK(MPI_Send(&flag, 1, MPI_INT, right, 0, MPI_COMM_WORLD));
        MPI_CHK(MPI_Recv(&flag, 1, MPI_INT, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        for (int i = 0; i < 4; i++)
            MPI_CHK(MPI_Isend(&sbuf[i], 1, MPI_INT, right, i, last, &sr[i]));
        MPI_CHK(MPI_Waitall(4, sr, MPI_STATUSES_IGNORE));
        MPI_CHK(MPI_Waitall(4, rr, sts));
        for (int i = 0; i < 4; i++) {
            CHECK_EQ(rbuf[i], 100 * left + i, "payload on the last communicator");
            CHECK_EQ(sts[i].MPI_SOURCE, left, "source on the last communicator");
            CHECK_EQ(sts[i].MPI_TAG, i, "tag on the last communicator");
        }
        /* A truncating receive there reports through that communicator's handler (RETURN). */
        int two[2] = {1, 2}, one = 0;
        MPI_Request r;
        MPI_CHK(MPI_Irecv(&one, 1, MPI_INT, left, 9, last, &r));
        MPI_CHK(MPI_Send(two, 2, MPI_INT, right, 9, last));
        CHECK_EQ(error_class(MPI_Wait(&r, MPI_STATUS_IGNORE)), MPI_ERR_TRUNCATE,
                 "truncated receive on the last communicator: error class");
        for (int i = 0; i < MANY_COMMS; i++)
            MPI_CHK(MPI_Comm_free(&comms[i]));
    }

    /* ---- MANY_REQS receives in flight at once, then as many sends: all land, in order. */
    {
        int *rbuf = malloc(sizeof(int) * MANY_REQS), *sbuf = malloc(sizeof(int) * MANY_REQS);
        MPI_Request *rr = malloc(sizeof(MPI_Request) * MANY_REQS);
        CHECK(rbuf && sbuf && rr, "out of memory");
        for (int i = 0; i < MANY_REQS; i++) {
            rbuf[i] = -1;
            sbuf[i] = i ^ t_rank;
            MPI_CHK(MPI_Irecv(&rbuf[i], 1, MPI_INT, left, 5, MPI_COMM_WORLD, &rr[i]));
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        for (int i = 0; i < MANY_REQS; i++)
            MPI_CHK(MPI_Send(&sbuf[i], 1, MPI_INT, right, 5, MPI_COMM_WORLD));
        MPI_CHK(MPI_Waitall(MANY_REQS, rr, MPI_STATUSES_IGNORE));
        for (int i = 0; i < MANY_REQS; i++) {
            CHECK_EQ(rbuf[i], i ^ left, "payload of one of many receives");
            CHECK(rr[i] == MPI_REQUEST_NULL, "Waitall left request %d", i);
        }
        free(rbuf);
        free(sbuf);
        free(rr);
    }

    /* ---- Left unfinished at MPI_Finalize: a receive nobody sends to, and a large send that
     * the left neighbour receives but this rank never waits for. Finalize must neither hang
     * nor cut the send short. */
    static char big[BIG], got[BIG];
    for (int i = 0; i < BIG; i++)
        big[i] = (char)t_byte(i, t_rank);
    int never = 0;
    MPI_Request forgotten_recv, forgotten_send;
    MPI_CHK(MPI_Irecv(&never, 1, MPI_INT, left, 77, MPI_COMM_WORLD, &forgotten_recv));
    MPI_CHK(MPI_Isend(big, BIG, MPI_CHAR, right, 78, MPI_COMM_WORLD, &forgotten_send));
    MPI_CHK(MPI_Recv(got, BIG, MPI_CHAR, left, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < BIG; i++)
        if (got[i] != (char)t_byte(i, left))
            FAIL("large message from rank %d: byte %d differs", left, i);
    return t_finish();
}
