/* Completion calls on requests that end in error (a truncated receive), on null and inactive
 * persistent requests, and on invalid requests: what each call leaves in handles, flags,
 * indices and statuses (MPI 4.0 section 3.7; MPICH 4.0.2 agrees). Every rank sends to itself,
 * so any N >= 1 works.
 *
 * - Single completions (Wait, Test, Waitany, Testany, Request_get_status) return the
 *   request's own error, set the status (source, tag, the count that fit) but not its
 *   MPI_ERROR, and free the request (Request_get_status keeps it), nulling the handle; a
 *   persistent request turns inactive and keeps its handle.
 * - Multiple completions (Waitall, Testall, Waitsome, Testsome) return MPI_ERR_IN_STATUS
 *   (MPI_STATUSES_IGNORE too) and set each status's MPI_ERROR: MPI_SUCCESS, the error, or
 *   MPI_ERR_PENDING for a request that is neither (it stays, and completes later).
 * - Null and inactive requests: an empty status (MPI_ANY_SOURCE, MPI_ANY_TAG, count 0);
 *   Waitany/Testany give index MPI_UNDEFINED, Waitsome/Testsome outcount MPI_UNDEFINED. */
#include "common.h"

static int eclass(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

static const int SENTINEL = -77;

/* Posts a receive of one int with `tag` from this rank. */
static MPI_Request post(int *buf, int tag)
{
    MPI_Request r;
    MPI_CHK(MPI_Irecv(buf, 1, MPI_INT, t_rank, tag, MPI_COMM_WORLD, &r));
    return r;
}

/* Sends `n` ints with `tag` to this rank (n = 2 truncates a one-int receive). */
static void send_self(int n, int tag)
{
    int data[2] = {100 + tag, 200 + tag};
    MPI_CHK(MPI_Send(data, n, MPI_INT, t_rank, tag, MPI_COMM_WORLD));
}

static void clear(MPI_Status *st, int n)
{
    for (int i = 0; i < n; i++) {
        st[i].MPI_SOURCE = st[i].MPI_TAG = SENTINEL;
        st[i].MPI_ERROR = SENTINEL;
    }
}

/* A truncated receive's status: who sent it, with which tag, and the int that fit (MPICH 4.0.2
 * says count 0 on some routes, so the count is checked only for being at most the buffer). */
static void check_truncated_status(const MPI_Status *st, int tag, const char *what)
{
    int count = -1;
    MPI_CHK(MPI_Get_count(st, MPI_INT, &count));
    if (st->MPI_SOURCE != t_rank || st->MPI_TAG != tag || count < 0 || count > 1)
        FAIL("%s: status source %d tag %d count %d, expected %d, %d, 1", what, st->MPI_SOURCE, st->MPI_TAG, count,
             t_rank, tag);
}

static void check_empty_status(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_CHK(MPI_Get_count(st, MPI_INT, &count));
    if (st->MPI_SOURCE != MPI_ANY_SOURCE || st->MPI_TAG != MPI_ANY_TAG || count != 0)
        FAIL("%s: status source %d tag %d count %d, expected the empty status (%d, %d, 0)", what, st->MPI_SOURCE,
             st->MPI_TAG, count, MPI_ANY_SOURCE, MPI_ANY_TAG);
}

static void single_completions(void)
{
    int buf[4];
    MPI_Status st;
    int rc, flag, idx;

    /* MPI_Wait */
    MPI_Request r = post(buf, 1);
    send_self(2, 1);
    clear(&st, 1);
    rc = MPI_Wait(&r, &st);
    CHECK_EQ(eclass(rc), MPI_ERR_TRUNCATE, "MPI_Wait on a truncated receive: class");
    CHECK(r == MPI_REQUEST_NULL, "MPI_Wait left the handle of a receive that failed");
    check_truncated_status(&st, 1, "MPI_Wait");
    CHECK_EQ(st.MPI_ERROR, SENTINEL, "MPI_Wait wrote status.MPI_ERROR (single completions leave it)");

    /* MPI_Test */
    r = post(buf, 2);
    send_self(2, 2);
    clear(&st, 1);
    flag = 0;
    for (double t0 = MPI_Wtime(); !flag && MPI_Wtime() - t0 < 20;) {
        rc = MPI_Test(&r, &flag, &st);
        if (rc != MPI_SUCCESS)
            break;
    }
    CHECK_EQ(eclass(rc), MPI_ERR_TRUNCATE, "MPI_Test on a truncated receive: class");
    CHECK_EQ(flag, 1, "MPI_Test's flag for a receive that failed");
    CHECK(r == MPI_REQUEST_NULL, "MPI_Test left the handle of a receive that failed");
    check_truncated_status(&st, 2, "MPI_Test");

    /* MPI_Waitany: the failed one's index, its handle nulled, the raw error (not IN_STATUS); the
     * other request is untouched and completes in the next call. */
    MPI_Request rs[3] = {MPI_REQUEST_NULL, post(buf, 3), post(buf + 1, 4)};
    send_self(2, 4);
    clear(&st, 1);
    idx = -5;
    rc = MPI_Waitany(3, rs, &idx, &st);
    CHECK_EQ(eclass(rc), MPI_ERR_TRUNCATE, "MPI_Waitany on a truncated receive: class");
    CHECK_EQ(idx, 2, "MPI_Waitany's index of the receive that failed");
    CHECK(rs[2] == MPI_REQUEST_NULL, "MPI_Waitany left the handle of a receive that failed");
    CHECK(rs[1] != MPI_REQUEST_NULL, "MPI_Waitany freed a request still in flight");
    check_truncated_status(&st, 4, "MPI_Waitany");
    send_self(1, 3);
    MPI_CHK(MPI_Waitany(3, rs, &idx, &st));
    CHECK_EQ(idx, 1, "MPI_Waitany after an error: index of the good receive");
    CHECK_EQ(buf[0], 103, "MPI_Waitany after an error: payload");
    MPI_CHK(MPI_Waitany(3, rs, &idx, &st));
    CHECK_EQ(idx, MPI_UNDEFINED, "MPI_Waitany on null requests after an error");

    /* MPI_Testany */
    rs[0] = post(buf, 5);
    rs[1] = post(buf + 1, 6);
    idx = -5;
    flag = -5;
    MPI_CHK(MPI_Testany(2, rs, &idx, &flag, &st));
    CHECK_EQ(flag, 0, "MPI_Testany with nothing complete: flag");
    CHECK_EQ(idx, MPI_UNDEFINED, "MPI_Testany with nothing complete: index");
    send_self(2, 5);
    flag = 0;
    for (double t0 = MPI_Wtime(); !flag && MPI_Wtime() - t0 < 20;) {
        rc = MPI_Testany(2, rs, &idx, &flag, &st);
        if (rc != MPI_SUCCESS)
            break;
    }
    CHECK_EQ(eclass(rc), MPI_ERR_TRUNCATE, "MPI_Testany on a truncated receive: class");
    CHECK_EQ(flag, 1, "MPI_Testany's flag for a receive that failed");
    CHECK_EQ(idx, 0, "MPI_Testany's index of the receive that failed");
    CHECK(rs[0] == MPI_REQUEST_NULL, "MPI_Testany left the handle of a receive that failed");
    check_truncated_status(&st, 5, "MPI_Testany");
    send_self(1, 6);
    MPI_CHK(MPI_Wait(&rs[1], MPI_STATUS_IGNORE));

    /* MPI_Request_get_status: the error, the request stays; the wait then frees it and
     * reports the error again. */
    r = post(buf, 7);
    send_self(2, 7);
    flag = 0;
    for (double t0 = MPI_Wtime(); !flag && MPI_Wtime() - t0 < 20;) {
        rc = MPI_Request_get_status(r, &flag, &st);
        if (rc != MPI_SUCCESS)
            break;
    }
    CHECK_EQ(eclass(rc), MPI_ERR_TRUNCATE, "MPI_Request_get_status on a truncated receive: class");
    CHECK_EQ(flag, 1, "MPI_Request_get_status's flag for a receive that failed");
    CHECK(r != MPI_REQUEST_NULL, "MPI_Request_get_status changed the handle");
    check_truncated_status(&st, 7, "MPI_Request_get_status");
    clear(&st, 1);
    rc = MPI_Wait(&r, &st);
    CHECK_EQ(eclass(rc), MPI_ERR_TRUNCATE, "MPI_Wait after MPI_Request_get_status: class");
    CHECK(r == MPI_REQUEST_NULL, "MPI_Wait after MPI_Request_get_status left the handle");
    check_truncated_status(&st, 7, "MPI_Wait after MPI_Request_get_status");
}

/* Accumulates Waitsome/Testsome results over calls until `want` requests completed; the call
 * that reports the truncated one (index `bad`) returns MPI_ERR_IN_STATUS. */
static void some(int testsome, MPI_Request *rs, int n, int want, int bad, int tag_of_bad, const char *what)
{
    int got = 0, seen_bad = 0;
    for (double t0 = MPI_Wtime(); got < want;) {
        if (MPI_Wtime() - t0 > 20)
            FAIL("%s: %d of %d requests completed in 20 s", what, got, want);
        MPI_Status st[4];
        int idx[4], out = -5;
        clear(st, 4);
        int rc = testsome ? MPI_Testsome(n, rs, &out, idx, st) : MPI_Waitsome(n, rs, &out, idx, st);
        CHECK(out >= 0 && out <= n, "%s: outcount %d", what, out);
        int has_bad = 0;
        for (int j = 0; j < out; j++) {
            CHECK(rs[idx[j]] == MPI_REQUEST_NULL, "%s: request %d completed but its handle stays", what, idx[j]);
            if (idx[j] == bad) {
                has_bad = 1;
                CHECK_EQ(eclass(st[j].MPI_ERROR), MPI_ERR_TRUNCATE, "status.MPI_ERROR of the truncated receive");
                check_truncated_status(&st[j], tag_of_bad, what);
            }
        }
        if (has_bad) {
            CHECK_EQ(rc, MPI_ERR_IN_STATUS, "return code of the call that completed the truncated receive");
            for (int j = 0; j < out; j++)
                if (idx[j] != bad)
                    CHECK_EQ(st[j].MPI_ERROR, MPI_SUCCESS, "status.MPI_ERROR of a good receive beside a failed one");
        } else {
            MPI_CHK(rc);
        }
        seen_bad |= has_bad;
        got += out;
    }
    CHECK(seen_bad || bad < 0, "%s: the truncated receive was never reported", what);
}

static void multiple_completions(void)
{
    int buf[4];
    MPI_Status st[4];
    MPI_Request rs[4];
    int rc, flag, out, idx[4];

    for (int testsome = 0; testsome < 2; testsome++) {
        const char *what = testsome ? "MPI_Testsome" : "MPI_Waitsome";
        rs[0] = post(buf, 10);
        rs[1] = post(buf + 1, 11);
        rs[2] = post(buf + 2, 12);
        send_self(1, 10);
        send_self(2, 12);
        some(testsome, rs, 3, 2, 2, 12, what);
        CHECK(rs[1] != MPI_REQUEST_NULL, "%s freed a request still in flight", what);
        send_self(1, 11);
        some(testsome, rs, 3, 1, -1, 0, what);
        out = -5;
        MPI_CHK(testsome ? MPI_Testsome(3, rs, &out, idx, st) : MPI_Waitsome(3, rs, &out, idx, st));
        CHECK_EQ(out, MPI_UNDEFINED, "outcount of Waitsome/Testsome on null requests after an error");
    }

    /* MPI_STATUSES_IGNORE: still MPI_ERR_IN_STATUS. */
    rs[0] = post(buf, 13);
    send_self(2, 13);
    out = -5;
    rc = MPI_Waitsome(1, rs, &out, idx, MPI_STATUSES_IGNORE);
    CHECK_EQ(rc, MPI_ERR_IN_STATUS, "MPI_Waitsome(MPI_STATUSES_IGNORE) on a truncated receive");
    CHECK_EQ(out, 1, "MPI_Waitsome(MPI_STATUSES_IGNORE): outcount");
    CHECK(rs[0] == MPI_REQUEST_NULL, "MPI_Waitsome(MPI_STATUSES_IGNORE) left the failed handle");

    /* MPI_Testall: one failed, one not complete: MPI_ERR_IN_STATUS, flag false, the failed one
     * freed with its error, the other MPI_ERR_PENDING and still there. */
    rs[0] = post(buf, 14);
    rs[1] = post(buf + 1, 15);
    rs[2] = MPI_REQUEST_NULL;
    send_self(2, 14);
    rc = MPI_SUCCESS;
    flag = -5;
    for (double t0 = MPI_Wtime(); rc == MPI_SUCCESS && MPI_Wtime() - t0 < 20;) {
        clear(st, 3);
        rc = MPI_Testall(3, rs, &flag, st);
    }
    CHECK_EQ(rc, MPI_ERR_IN_STATUS, "MPI_Testall with a truncated receive");
    CHECK_EQ(flag, 0, "MPI_Testall's flag with a request still in flight");
    CHECK_EQ(eclass(st[0].MPI_ERROR), MPI_ERR_TRUNCATE, "MPI_Testall: status.MPI_ERROR of the truncated receive");
    check_truncated_status(&st[0], 14, "MPI_Testall");
    CHECK(rs[0] == MPI_REQUEST_NULL, "MPI_Testall left the handle of the receive that failed");
    CHECK_EQ(st[1].MPI_ERROR, MPI_ERR_PENDING, "MPI_Testall: status.MPI_ERROR of the receive in flight");
    CHECK(rs[1] != MPI_REQUEST_NULL, "MPI_Testall freed the receive in flight");
    send_self(1, 15);
    MPI_CHK(MPI_Wait(&rs[1], &st[1]));
    CHECK_EQ(buf[1], 115, "receive left pending by MPI_Testall: payload");

    /* MPI_Waitall: good, truncated, good. A request after the failed one is either complete
     * (MPI_SUCCESS, freed) or MPI_ERR_PENDING (still there, and a wait completes it). */
    rs[0] = post(buf, 16);
    rs[1] = post(buf + 1, 17);
    rs[2] = post(buf + 2, 18);
    send_self(1, 16);
    send_self(2, 17);
    send_self(1, 18);
    clear(st, 3);
    rc = MPI_Waitall(3, rs, st);
    CHECK_EQ(rc, MPI_ERR_IN_STATUS, "MPI_Waitall with a truncated receive");
    CHECK_EQ(st[0].MPI_ERROR, MPI_SUCCESS, "MPI_Waitall: status.MPI_ERROR of the good receive before");
    CHECK(rs[0] == MPI_REQUEST_NULL && rs[1] == MPI_REQUEST_NULL, "MPI_Waitall left completed handles");
    CHECK_EQ(eclass(st[1].MPI_ERROR), MPI_ERR_TRUNCATE, "MPI_Waitall: status.MPI_ERROR of the truncated receive");
    check_truncated_status(&st[1], 17, "MPI_Waitall");
    if (st[2].MPI_ERROR == MPI_ERR_PENDING) {
        CHECK(rs[2] != MPI_REQUEST_NULL, "MPI_Waitall: a request reported MPI_ERR_PENDING was freed");
        MPI_CHK(MPI_Wait(&rs[2], MPI_STATUS_IGNORE));
    } else {
        CHECK_EQ(st[2].MPI_ERROR, MPI_SUCCESS, "MPI_Waitall: status.MPI_ERROR of the good receive after");
        CHECK(rs[2] == MPI_REQUEST_NULL, "MPI_Waitall left a request it reported complete");
    }
    CHECK_EQ(buf[2], 118, "MPI_Waitall: payload after the failed receive");

    /* MPI_Waitall(MPI_STATUSES_IGNORE): still MPI_ERR_IN_STATUS, the handle freed. */
    rs[0] = post(buf, 19);
    send_self(2, 19);
    rc = MPI_Waitall(1, rs, MPI_STATUSES_IGNORE);
    CHECK_EQ(rc, MPI_ERR_IN_STATUS, "MPI_Waitall(MPI_STATUSES_IGNORE) with a truncated receive");
    CHECK(rs[0] == MPI_REQUEST_NULL, "MPI_Waitall(MPI_STATUSES_IGNORE) left the failed handle");
}

static void persistent(void)
{
    int buf[4];
    MPI_Status st;
    MPI_Request p[3];
    int rc, idx, flag, out, ind[3];

    /* A persistent receive that fails turns inactive: the handle stays, it can start again. */
    MPI_CHK(MPI_Recv_init(buf, 1, MPI_INT, t_rank, 20, MPI_COMM_WORLD, &p[0]));
    MPI_CHK(MPI_Start(&p[0]));
    send_self(2, 20);
    clear(&st, 1);
    rc = MPI_Wait(&p[0], &st);
    CHECK_EQ(eclass(rc), MPI_ERR_TRUNCATE, "MPI_Wait on a truncated persistent receive");
    CHECK(p[0] != MPI_REQUEST_NULL, "MPI_Wait freed a persistent request that failed");
    check_truncated_status(&st, 20, "MPI_Wait (persistent)");
    MPI_CHK(MPI_Start(&p[0]));
    send_self(1, 20);
    MPI_CHK(MPI_Wait(&p[0], &st));
    CHECK_EQ(buf[0], 120, "persistent receive restarted after an error: payload");

    /* Inactive persistent requests count as null: Waitany returns each started one once. */
    MPI_CHK(MPI_Recv_init(buf + 1, 1, MPI_INT, t_rank, 21, MPI_COMM_WORLD, &p[1]));
    MPI_CHK(MPI_Recv_init(buf + 2, 1, MPI_INT, t_rank, 22, MPI_COMM_WORLD, &p[2]));
    for (int round = 0; round < 2; round++) {
        MPI_CHK(MPI_Startall(3, p));
        send_self(1, 20);
        send_self(round ? 2 : 1, 21); /* round 1: one of them fails */
        send_self(1, 22);
        int seen[3] = {0, 0, 0};
        for (int k = 0; k < 3; k++) {
            idx = -5;
            rc = MPI_Waitany(3, p, &idx, &st);
            CHECK(idx >= 0 && idx < 3, "round %d: MPI_Waitany index %d", round, idx);
            CHECK(!seen[idx], "round %d: MPI_Waitany returned index %d twice (a completed persistent request must "
                              "turn inactive)", round, idx);
            seen[idx] = 1;
            CHECK(p[idx] != MPI_REQUEST_NULL, "MPI_Waitany freed persistent request %d", idx);
            if (round == 1 && idx == 1)
                CHECK_EQ(eclass(rc), MPI_ERR_TRUNCATE, "MPI_Waitany on a truncated persistent receive");
            else
                MPI_CHK(rc);
        }
        clear(&st, 1);
        idx = -5;
        MPI_CHK(MPI_Waitany(3, p, &idx, &st));
        CHECK_EQ(idx, MPI_UNDEFINED, "MPI_Waitany on inactive persistent requests: index");
        check_empty_status(&st, "MPI_Waitany on inactive persistent requests");
        idx = -5;
        flag = -5;
        clear(&st, 1);
        MPI_CHK(MPI_Testany(3, p, &idx, &flag, &st));
        CHECK(flag == 1 && idx == MPI_UNDEFINED, "MPI_Testany on inactive requests: flag %d index %d", flag, idx);
        /* MPI 4.0 asks for an empty status here too; MPICH 4.0.2 leaves it, so it is not checked. */
        out = -5;
        MPI_CHK(MPI_Waitsome(3, p, &out, ind, MPI_STATUSES_IGNORE));
        CHECK_EQ(out, MPI_UNDEFINED, "MPI_Waitsome on inactive persistent requests: outcount");
        out = -5;
        MPI_CHK(MPI_Testsome(3, p, &out, ind, MPI_STATUSES_IGNORE));
        CHECK_EQ(out, MPI_UNDEFINED, "MPI_Testsome on inactive persistent requests: outcount");
        flag = -5;
        MPI_Status sts[3];
        clear(sts, 3);
        MPI_CHK(MPI_Testall(3, p, &flag, sts));
        CHECK_EQ(flag, 1, "MPI_Testall on inactive persistent requests: flag");
        for (int i = 0; i < 3; i++)
            check_empty_status(&sts[i], "MPI_Testall on inactive persistent requests");
        clear(&st, 1);
        flag = -5;
        MPI_CHK(MPI_Test(&p[0], &flag, &st));
        CHECK_EQ(flag, 1, "MPI_Test on an inactive persistent request: flag");
        check_empty_status(&st, "MPI_Test on an inactive persistent request");
        flag = -5;
        MPI_CHK(MPI_Request_get_status(p[0], &flag, &st));
        CHECK_EQ(flag, 1, "MPI_Request_get_status on an inactive persistent request: flag");
    }

    /* Cancel and Start need an active request; Start refuses an active one. */
    CHECK_EQ(eclass(MPI_Cancel(&p[0])), MPI_ERR_REQUEST, "MPI_Cancel of an inactive persistent request");
    MPI_CHK(MPI_Start(&p[0]));
    CHECK_EQ(eclass(MPI_Start(&p[0])), MPI_ERR_REQUEST, "MPI_Start of an active persistent request");
    CHECK_EQ(eclass(MPI_Startall(1, &p[0])), MPI_ERR_REQUEST, "MPI_Startall of an active persistent request");
    send_self(1, 20);
    MPI_CHK(MPI_Wait(&p[0], MPI_STATUS_IGNORE));
    for (int i = 0; i < 3; i++) {
        MPI_CHK(MPI_Request_free(&p[i]));
        CHECK(p[i] == MPI_REQUEST_NULL, "MPI_Request_free of an inactive persistent request left the handle");
    }
}

static void null_requests(void)
{
    MPI_Request r = MPI_REQUEST_NULL, rs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st, sts[2];
    int flag, idx, out, ind[2];

    clear(&st, 1);
    MPI_CHK(MPI_Wait(&r, &st));
    check_empty_status(&st, "MPI_Wait on MPI_REQUEST_NULL");
    clear(&st, 1);
    flag = -5;
    MPI_CHK(MPI_Test(&r, &flag, &st));
    CHECK_EQ(flag, 1, "MPI_Test on MPI_REQUEST_NULL: flag");
    check_empty_status(&st, "MPI_Test on MPI_REQUEST_NULL");
    clear(&st, 1);
    flag = -5;
    MPI_CHK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    CHECK_EQ(flag, 1, "MPI_Request_get_status on MPI_REQUEST_NULL: flag");
    check_empty_status(&st, "MPI_Request_get_status on MPI_REQUEST_NULL");
    clear(sts, 2);
    MPI_CHK(MPI_Waitall(2, rs, sts));
    check_empty_status(&sts[1], "MPI_Waitall on MPI_REQUEST_NULL");
    clear(sts, 2);
    flag = -5;
    MPI_CHK(MPI_Testall(2, rs, &flag, sts));
    CHECK_EQ(flag, 1, "MPI_Testall on MPI_REQUEST_NULL: flag");
    check_empty_status(&sts[1], "MPI_Testall on MPI_REQUEST_NULL");
    clear(&st, 1);
    idx = -5;
    MPI_CHK(MPI_Waitany(2, rs, &idx, &st));
    CHECK_EQ(idx, MPI_UNDEFINED, "MPI_Waitany on MPI_REQUEST_NULL: index");
    check_empty_status(&st, "MPI_Waitany on MPI_REQUEST_NULL");
    out = -5;
    MPI_CHK(MPI_Testsome(2, rs, &out, ind, sts));
    CHECK_EQ(out, MPI_UNDEFINED, "MPI_Testsome on MPI_REQUEST_NULL: outcount");

    CHECK_EQ(eclass(MPI_Cancel(&r)), MPI_ERR_REQUEST, "MPI_Cancel of MPI_REQUEST_NULL");
    CHECK_EQ(eclass(MPI_Request_free(&r)), MPI_ERR_REQUEST, "MPI_Request_free of MPI_REQUEST_NULL");
    CHECK_EQ(eclass(MPI_Start(&r)), MPI_ERR_REQUEST, "MPI_Start of MPI_REQUEST_NULL");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "completion_errors", 1);
    single_completions();
    multiple_completions();
    persistent();
    null_requests();
    return t_finish();
}
