/* Completion calls: Waitall, Waitany, Waitsome, Testall, Testany, Testsome on mixed and null
 * request lists; Request_free; Request_get_status; Cancel + Test_cancelled. Ring, any N >= 1. */
#include "common.h"

enum { K = 8 };

/* Every rank posts K receives from left with tags 0..K-1, then (after a barrier) sends K messages
 * right in reverse tag order. */
static void post(int *rbuf, MPI_Request *rr, int left)
{
    for (int i = 0; i < K; i++) {
        rbuf[i] = -1;
        MPI_CHK(MPI_Irecv(&rbuf[i], 1, MPI_INT, left, i, MPI_COMM_WORLD, &rr[i]));
    }
}
static void send_all(int *sbuf, MPI_Request *sr, int right, int round)
{
    for (int i = K - 1; i >= 0; i--) {
        sbuf[i] = round * 1000 + i;
        MPI_CHK(MPI_Isend(&sbuf[i], 1, MPI_INT, right, i, MPI_COMM_WORLD, &sr[i]));
    }
}
static void check_recvd(const int *rbuf, int round, const char *what)
{
    for (int i = 0; i < K; i++)
        if (rbuf[i] != round * 1000 + i)
            FAIL("%s: message %d: expected %d, got %d", what, i, round * 1000 + i, rbuf[i]);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "completion", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    int rbuf[K], sbuf[K];
    MPI_Request rr[K], sr[K];
    MPI_Status sts[K];

    /* ---- Testall: false before anything was sent, true eventually; statuses filled. */
    post(rbuf, rr, left);
    int flag = 1;
    MPI_CHK(MPI_Testall(K, rr, &flag, sts));
    CHECK_EQ(flag, 0, "Testall before any send");
    for (int i = 0; i < K; i++)
        CHECK(rr[i] != MPI_REQUEST_NULL, "Testall (false) nulled request %d", i);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    send_all(sbuf, sr, right, 1);
    double t0 = MPI_Wtime();
    for (flag = 0; !flag;) {
        MPI_CHK(MPI_Testall(K, rr, &flag, sts));
        CHECK(flag || MPI_Wtime() - t0 < 20.0, "Testall never became true");
    }
    for (int i = 0; i < K; i++) {
        CHECK(rr[i] == MPI_REQUEST_NULL, "Testall (true) left request %d", i);
        CHECK_EQ(sts[i].MPI_TAG, i, "Testall status tag");
        CHECK_EQ(sts[i].MPI_SOURCE, left, "Testall status source");
    }
    check_recvd(rbuf, 1, "Testall");
    MPI_CHK(MPI_Waitall(K, sr, sts));
    for (int i = 0; i < K; i++)
        CHECK(sr[i] == MPI_REQUEST_NULL, "Waitall left send request %d", i);

    /* ---- Waitany: each index exactly once, then MPI_UNDEFINED. */
    post(rbuf, rr, left);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    send_all(sbuf, sr, right, 2);
    {
        int seen[K] = {0};
        for (int j = 0; j < K; j++) {
            int idx = -5;
            MPI_Status st;
            MPI_CHK(MPI_Waitany(K, rr, &idx, &st));
            CHECK(idx >= 0 && idx < K, "Waitany index %d", idx);
            CHECK(!seen[idx], "Waitany returned index %d twice", idx);
            seen[idx] = 1;
            CHECK(rr[idx] == MPI_REQUEST_NULL, "Waitany did not null request %d", idx);
            CHECK_EQ(st.MPI_TAG, idx, "Waitany status tag");
            CHECK_EQ(rbuf[idx], 2000 + idx, "Waitany payload");
        }
        int idx = -5;
        MPI_Status st;
        MPI_CHK(MPI_Waitany(K, rr, &idx, &st));
        CHECK_EQ(idx, MPI_UNDEFINED, "Waitany on all-null list");
        idx = -5;
        MPI_CHK(MPI_Waitany(0, NULL, &idx, MPI_STATUS_IGNORE));
        CHECK_EQ(idx, MPI_UNDEFINED, "Waitany on an empty list");
    }
    MPI_CHK(MPI_Waitall(K, sr, MPI_STATUSES_IGNORE));

    /* ---- Waitsome: union of returned indices is everything, then outcount MPI_UNDEFINED. */
    post(rbuf, rr, left);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    send_all(sbuf, sr, right, 3);
    {
        int seen[K] = {0}, total = 0;
        while (total < K) {
            int out = -5, idx[K];
            MPI_CHK(MPI_Waitsome(K, rr, &out, idx, sts));
            CHECK(out >= 1 && out <= K - total, "Waitsome outcount %d with %d left", out, K - total);
            for (int j = 0; j < out; j++) {
                CHECK(idx[j] >= 0 && idx[j] < K && !seen[idx[j]], "Waitsome index %d", idx[j]);
                seen[idx[j]] = 1;
                CHECK_EQ(sts[j].MPI_TAG, idx[j], "Waitsome status tag (statuses are per completed index)");
                CHECK(rr[idx[j]] == MPI_REQUEST_NULL, "Waitsome did not null %d", idx[j]);
            }
            total += out;
        }
        int out = -5, idx[K];
        MPI_CHK(MPI_Waitsome(K, rr, &out, idx, sts));
        CHECK_EQ(out, MPI_UNDEFINED, "Waitsome on all-null list");
        check_recvd(rbuf, 3, "Waitsome");
    }
    MPI_CHK(MPI_Waitall(K, sr, MPI_STATUSES_IGNORE));

    /* ---- Waitall on a mixed list: a null handle and a receive from MPI_PROC_NULL before the
     * receives (which the library waits for together): each status lands at its own index. */
    {
        MPI_Request mix[K + 2];
        MPI_Status mst[K + 2];
        int nothing = -1;
        post(rbuf, rr, left);
        mix[0] = MPI_REQUEST_NULL;
        MPI_CHK(MPI_Irecv(&nothing, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &mix[1]));
        for (int i = 0; i < K; i++)
            mix[i + 2] = rr[i];
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        send_all(sbuf, sr, right, 5);
        MPI_CHK(MPI_Waitall(K + 2, mix, mst));
        CHECK_EQ(mst[0].MPI_SOURCE, MPI_ANY_SOURCE, "Waitall: source in a null request's status");
        CHECK_EQ(mst[1].MPI_SOURCE, MPI_PROC_NULL, "Waitall: source in a PROC_NULL receive's status");
        for (int i = 0; i < K; i++) {
            CHECK_EQ(mst[i + 2].MPI_TAG, i, "Waitall: tag in a receive's status");
            CHECK_EQ(mst[i + 2].MPI_SOURCE, left, "Waitall: source in a receive's status");
            CHECK(mix[i + 2] == MPI_REQUEST_NULL, "Waitall left receive request %d", i);
        }
        check_recvd(rbuf, 5, "Waitall (mixed)");
        MPI_CHK(MPI_Waitall(K, sr, MPI_STATUSES_IGNORE));
    }

    /* ---- Testany / Testsome: bounded polling. */
    post(rbuf, rr, left);
    {
        int idx = -5;
        flag = 1;
        MPI_CHK(MPI_Testany(K, rr, &idx, &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0 && idx == MPI_UNDEFINED, "Testany before any send: flag %d index %d", flag, idx);
        int out = -5, idxs[K];
        MPI_CHK(MPI_Testsome(K, rr, &out, idxs, MPI_STATUSES_IGNORE));
        CHECK_EQ(out, 0, "Testsome before any send");
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    send_all(sbuf, sr, right, 4);
    {
        int got = 0, seen[K] = {0};
        t0 = MPI_Wtime();
        while (got < K / 2) {
            int idx = -5;
            MPI_Status st;
            MPI_CHK(MPI_Testany(K, rr, &idx, &flag, &st));
            if (flag) {
                CHECK(idx >= 0 && idx < K && !seen[idx], "Testany index %d", idx);
                seen[idx] = 1;
                CHECK_EQ(st.MPI_TAG, idx, "Testany status tag");
                got++;
            }
            CHECK(MPI_Wtime() - t0 < 20.0, "Testany: only %d of %d completed in 20 s", got, K);
        }
        while (got < K) {
            int out = -5, idxs[K];
            MPI_CHK(MPI_Testsome(K, rr, &out, idxs, sts));
            CHECK(out >= 0 && out <= K - got, "Testsome outcount %d", out);
            for (int j = 0; j < out; j++) {
                CHECK(!seen[idxs[j]], "Testsome index %d seen before", idxs[j]);
                seen[idxs[j]] = 1;
                CHECK_EQ(sts[j].MPI_TAG, idxs[j], "Testsome status tag");
            }
            got += out;
            CHECK(MPI_Wtime() - t0 < 20.0, "Testsome: only %d of %d completed in 20 s", got, K);
        }
        int out = -5, idxs[K], idx = -5;
        MPI_CHK(MPI_Testsome(K, rr, &out, idxs, sts));
        CHECK_EQ(out, MPI_UNDEFINED, "Testsome on all-null list");
        flag = 0;
        MPI_CHK(MPI_Testany(K, rr, &idx, &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 1 && idx == MPI_UNDEFINED, "Testany on all-null list: flag %d index %d", flag, idx);
        flag = 0;
        MPI_CHK(MPI_Testall(K, rr, &flag, MPI_STATUSES_IGNORE));
        CHECK_EQ(flag, 1, "Testall on all-null list");
        check_recvd(rbuf, 4, "Testany/Testsome");
    }
    MPI_CHK(MPI_Waitall(K, sr, MPI_STATUSES_IGNORE));

    /* ---- Waitall on a list mixing MPI_REQUEST_NULL and real requests. */
    {
        MPI_Request mix[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        int v = 5 + t_rank, w = -1;
        MPI_CHK(MPI_Irecv(&w, 1, MPI_INT, left, 50, MPI_COMM_WORLD, &mix[2]));
        MPI_CHK(MPI_Isend(&v, 1, MPI_INT, right, 50, MPI_COMM_WORLD, &mix[0]));
        MPI_Status s3[3];
        MPI_CHK(MPI_Waitall(3, mix, s3));
        CHECK_EQ(w, 5 + left, "Waitall mixed payload");
        CHECK_EQ(s3[2].MPI_TAG, 50, "Waitall mixed status tag");
        CHECK_EQ(s3[1].MPI_SOURCE, MPI_ANY_SOURCE, "empty status source for a null request in Waitall");
        CHECK_EQ(s3[1].MPI_TAG, MPI_ANY_TAG, "empty status tag for a null request in Waitall");
    }

    /* ---- Request_free on an active send: the message still arrives. */
    {
        int v = 4242 + t_rank, w = -1;
        MPI_Request r;
        MPI_CHK(MPI_Isend(&v, 1, MPI_INT, right, 60, MPI_COMM_WORLD, &r));
        MPI_CHK(MPI_Request_free(&r));
        CHECK(r == MPI_REQUEST_NULL, "Request_free did not null the handle");
        MPI_CHK(MPI_Recv(&w, 1, MPI_INT, left, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(w, 4242 + left, "message of a freed send request");
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* v stays alive until everyone received */
    }

    /* ---- Request_get_status: does not free; eventually true; status filled; then Wait. */
    {
        int v = 31 + t_rank, w = -1;
        MPI_Request r;
        MPI_Status st;
        MPI_CHK(MPI_Irecv(&w, 1, MPI_INT, left, 70, MPI_COMM_WORLD, &r));
        flag = 1;
        MPI_CHK(MPI_Request_get_status(r, &flag, &st));
        CHECK_EQ(flag, 0, "Request_get_status before the send");
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Send(&v, 1, MPI_INT, right, 70, MPI_COMM_WORLD));
        t0 = MPI_Wtime();
        for (flag = 0; !flag;) {
            MPI_CHK(MPI_Request_get_status(r, &flag, &st));
            CHECK(flag || MPI_Wtime() - t0 < 20.0, "Request_get_status never true");
        }
        CHECK(r != MPI_REQUEST_NULL, "Request_get_status freed the request");
        CHECK_EQ(st.MPI_TAG, 70, "Request_get_status tag");
        CHECK_EQ(st.MPI_SOURCE, left, "Request_get_status source");
        CHECK_EQ(w, 31 + left, "Request_get_status payload");
        MPI_CHK(MPI_Wait(&r, &st));
        CHECK(r == MPI_REQUEST_NULL, "Wait after Request_get_status");
        CHECK_EQ(st.MPI_TAG, 70, "Wait status after Request_get_status");
        flag = 0;
        MPI_CHK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
        CHECK_EQ(flag, 1, "Request_get_status(MPI_REQUEST_NULL) flag");
    }

    /* ---- Cancel an unmatched receive: Wait completes, Test_cancelled true. A matched receive is
     * not cancelled. */
    {
        int w = -1;
        MPI_Request r;
        MPI_Status st;
        MPI_CHK(MPI_Irecv(&w, 1, MPI_INT, left, 80, MPI_COMM_WORLD, &r));
        MPI_CHK(MPI_Cancel(&r));
        t_wait_bounded(&r, &st, 10.0, "cancelled receive");
        flag = 0;
        MPI_CHK(MPI_Test_cancelled(&st, &flag));
        CHECK_EQ(flag, 1, "Test_cancelled of a cancelled receive");
        CHECK_EQ(w, -1, "cancelled receive changed the buffer");

        int v = 9;
        MPI_CHK(MPI_Irecv(&w, 1, MPI_INT, left, 81, MPI_COMM_WORLD, &r));
        MPI_CHK(MPI_Send(&v, 1, MPI_INT, right, 81, MPI_COMM_WORLD));
        t0 = MPI_Wtime();
        for (flag = 0; !flag;) {
            MPI_CHK(MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE));
            CHECK(flag || MPI_Wtime() - t0 < 20.0, "receive of tag 81 never completed");
        }
        MPI_CHK(MPI_Cancel(&r)); /* too late: no effect */
        MPI_CHK(MPI_Wait(&r, &st));
        flag = 1;
        MPI_CHK(MPI_Test_cancelled(&st, &flag));
        CHECK_EQ(flag, 0, "Test_cancelled of a receive that completed before Cancel");
        CHECK_EQ(w, 9, "payload of a receive cancelled too late");
    }
    return t_finish();
}
