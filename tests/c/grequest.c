/* Generalized requests (MPI_Grequest_start / MPI_Grequest_complete): the program's query_fn
 * gives the status, free_fn runs once when a wait or test completes the request (or
 * MPI_Request_free frees it), cancel_fn is told whether the request was completed. The
 * callbacks call MPI themselves (MPI_Status_set_elements, MPI_Comm_rank), at
 * MPI_THREAD_MULTIPLE, as mpi4py's do: a library that ran them under its own lock deadlocks.
 * A request completed by another thread while the main thread waits in MPI_Wait and
 * MPI_Waitall; generalized requests mixed with point-to-point ones in every list call; errors
 * of query_fn, free_fn and cancel_fn come back as the call's error. Any N >= 1. */
#include <pthread.h>

#include "common.h"

typedef struct {
    int queries, frees, cancels, last_complete;
    int query_rc, free_rc, cancel_rc;
    int tag;
} ctx_t;

static int query_fn(void *extra, MPI_Status *st)
{
    ctx_t *c = extra;
    c->queries++;
    int rank = -1;
    /* MPI calls from inside the callback. */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    st->MPI_SOURCE = rank;
    st->MPI_TAG = c->tag;
    MPI_Status_set_elements(st, MPI_INT, 3);
    MPI_Status_set_cancelled(st, 0);
    return c->query_rc;
}

static int free_fn(void *extra)
{
    ctx_t *c = extra;
    c->frees++;
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return c->free_rc;
}

static int cancel_fn(void *extra, int complete)
{
    ctx_t *c = extra;
    c->cancels++;
    c->last_complete = complete;
    return c->cancel_rc;
}

static ctx_t fresh(int tag)
{
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.tag = tag;
    return c;
}

static MPI_Request start(ctx_t *c)
{
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_CHK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, c, &r));
    CHECK(r != MPI_REQUEST_NULL, "MPI_Grequest_start gave MPI_REQUEST_NULL");
    return r;
}

static void check_status(const MPI_Status *st, int tag, const char *what)
{
    int count = -1;
    CHECK_EQ(st->MPI_SOURCE, t_rank, what);
    CHECK_EQ(st->MPI_TAG, tag, what);
    MPI_CHK(MPI_Get_count(st, MPI_INT, &count));
    CHECK_EQ(count, 3, what);
}

static void *completer(void *arg)
{
    MPI_Request r = *(MPI_Request *)arg;
    usleep(100 * 1000);
    MPI_Grequest_complete(r);
    return NULL;
}

static int error_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    t_name = "grequest";
    t_watchdog();
    int provided = 0;
    MPI_CHK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    t_setup("grequest", 1);
    CHECK_EQ(provided, MPI_THREAD_MULTIPLE, "thread level provided");

    /* ---- Test before and after completion; cancel before and after; free_fn at the end. */
    {
        ctx_t c = fresh(7);
        MPI_Request r = start(&c);
        int flag = 1;
        MPI_Status st;
        MPI_CHK(MPI_Test(&r, &flag, &st));
        CHECK_EQ(flag, 0, "MPI_Test before MPI_Grequest_complete: flag");
        CHECK_EQ(c.frees, 0, "free_fn calls before completion");
        MPI_CHK(MPI_Cancel(&r));
        CHECK_EQ(c.cancels, 1, "cancel_fn calls");
        CHECK_EQ(c.last_complete, 0, "cancel_fn's complete argument before completion");
        MPI_CHK(MPI_Grequest_complete(r));
        MPI_CHK(MPI_Cancel(&r));
        CHECK_EQ(c.last_complete, 1, "cancel_fn's complete argument after completion");
        MPI_CHK(MPI_Test(&r, &flag, &st));
        CHECK_EQ(flag, 1, "MPI_Test after MPI_Grequest_complete: flag");
        CHECK(r == MPI_REQUEST_NULL, "MPI_Test did not null the completed generalized request");
        check_status(&st, 7, "status from query_fn (MPI_Test)");
        CHECK_EQ(c.frees, 1, "free_fn calls after MPI_Test completed it");
        CHECK(c.queries >= 1, "query_fn was not called");
        MPI_CHK(MPI_Wait(&r, &st));
        CHECK_EQ(c.frees, 1, "free_fn calls after a wait on the null handle");
    }

    /* ---- MPI_Request_get_status asks query_fn but leaves the request; MPI_Wait frees it. */
    {
        ctx_t c = fresh(8);
        MPI_Request r = start(&c);
        int flag = 1;
        MPI_Status st;
        MPI_CHK(MPI_Request_get_status(r, &flag, &st));
        CHECK_EQ(flag, 0, "MPI_Request_get_status before completion: flag");
        MPI_CHK(MPI_Grequest_complete(r));
        MPI_CHK(MPI_Request_get_status(r, &flag, &st));
        CHECK_EQ(flag, 1, "MPI_Request_get_status after completion: flag");
        check_status(&st, 8, "status from query_fn (MPI_Request_get_status)");
        CHECK(r != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
        CHECK_EQ(c.frees, 0, "free_fn calls after MPI_Request_get_status");
        MPI_CHK(MPI_Wait(&r, &st));
        check_status(&st, 8, "status from query_fn (MPI_Wait)");
        CHECK_EQ(c.frees, 1, "free_fn calls after MPI_Wait");
    }

    /* ---- Completed by another thread while this one waits. */
    {
        ctx_t c = fresh(9);
        MPI_Request r = start(&c);
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, completer, &r), 0, "pthread_create");
        MPI_Status st;
        MPI_CHK(MPI_Wait(&r, &st));
        pthread_join(th, NULL);
        check_status(&st, 9, "status after a wait completed by another thread");
        CHECK_EQ(c.frees, 1, "free_fn calls (thread)");

        /* Waitall of a ring exchange and a generalized request another thread completes. */
        ctx_t d = fresh(10);
        MPI_Request rs[3];
        rs[0] = start(&d);
        int v = t_rank, w = -1;
        const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
        MPI_CHK(MPI_Irecv(&w, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &rs[1]));
        MPI_CHK(MPI_Isend(&v, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &rs[2]));
        MPI_Request first = rs[0];
        CHECK_EQ(pthread_create(&th, NULL, completer, &first), 0, "pthread_create");
        MPI_Status sts[3];
        MPI_CHK(MPI_Waitall(3, rs, sts));
        pthread_join(th, NULL);
        check_status(&sts[0], 10, "MPI_Waitall: the generalized request's status");
        CHECK_EQ(sts[1].MPI_SOURCE, left, "MPI_Waitall: the receive's source");
        CHECK_EQ(w, left, "MPI_Waitall: the receive's payload");
        CHECK_EQ(d.frees, 1, "free_fn calls (Waitall)");
    }

    /* ---- Testany, Waitany, Testsome, Waitsome, Testall over generalized requests. */
    {
        ctx_t c[4] = {fresh(20), fresh(21), fresh(22), fresh(23)};
        MPI_Request rs[4];
        for (int i = 0; i < 4; i++)
            rs[i] = start(&c[i]);
        int index = -1, flag = 1, outcount = -1, indices[4];
        MPI_Status st, sts[4];
        MPI_CHK(MPI_Testany(4, rs, &index, &flag, &st));
        CHECK_EQ(flag, 0, "MPI_Testany before any completion: flag");
        MPI_CHK(MPI_Grequest_complete(rs[2]));
        MPI_CHK(MPI_Testany(4, rs, &index, &flag, &st));
        CHECK_EQ(flag, 1, "MPI_Testany: flag");
        CHECK_EQ(index, 2, "MPI_Testany: index");
        check_status(&st, 22, "MPI_Testany: status");
        CHECK_EQ(c[2].frees, 1, "MPI_Testany: free_fn calls");
        MPI_CHK(MPI_Grequest_complete(rs[0]));
        MPI_CHK(MPI_Waitany(4, rs, &index, &st));
        CHECK_EQ(index, 0, "MPI_Waitany: index");
        check_status(&st, 20, "MPI_Waitany: status");
        MPI_CHK(MPI_Testsome(4, rs, &outcount, indices, sts));
        CHECK_EQ(outcount, 0, "MPI_Testsome with none complete: outcount");
        MPI_CHK(MPI_Grequest_complete(rs[3]));
        MPI_CHK(MPI_Waitsome(4, rs, &outcount, indices, sts));
        CHECK_EQ(outcount, 1, "MPI_Waitsome: outcount");
        CHECK_EQ(indices[0], 3, "MPI_Waitsome: index");
        check_status(&sts[0], 23, "MPI_Waitsome: status");
        MPI_CHK(MPI_Testall(4, rs, &flag, sts));
        CHECK_EQ(flag, 0, "MPI_Testall with one incomplete: flag");
        CHECK_EQ(c[1].frees, 0, "MPI_Testall freed an incomplete request");
        MPI_CHK(MPI_Grequest_complete(rs[1]));
        MPI_CHK(MPI_Testall(4, rs, &flag, sts));
        CHECK_EQ(flag, 1, "MPI_Testall: flag");
        check_status(&sts[1], 21, "MPI_Testall: status");
        for (int i = 0; i < 4; i++) {
            CHECK(rs[i] == MPI_REQUEST_NULL, "request %d not freed", i);
            CHECK_EQ(c[i].frees, 1, "free_fn calls of each request");
        }
    }

    /* ---- MPI_Request_free before completion: free_fn runs (as in MPICH), once. */
    {
        ctx_t c = fresh(30);
        MPI_Request r = start(&c);
        MPI_CHK(MPI_Request_free(&r));
        CHECK(r == MPI_REQUEST_NULL, "MPI_Request_free did not null the handle");
        CHECK_EQ(c.frees, 1, "free_fn calls after MPI_Request_free");
    }

    /* ---- Errors of the callbacks are the call's error. */
    {
        ctx_t c = fresh(40);
        c.query_rc = MPI_ERR_BUFFER;
        MPI_Request r = start(&c);
        MPI_CHK(MPI_Grequest_complete(r));
        MPI_Status st;
        CHECK_EQ(error_class(MPI_Wait(&r, &st)), MPI_ERR_BUFFER, "MPI_Wait when query_fn fails");
        CHECK_EQ(c.frees, 1, "free_fn runs after a failed query_fn");

        c = fresh(41);
        c.free_rc = MPI_ERR_BUFFER;
        r = start(&c);
        MPI_CHK(MPI_Grequest_complete(r));
        CHECK_EQ(error_class(MPI_Wait(&r, &st)), MPI_ERR_BUFFER, "MPI_Wait when free_fn fails");
        CHECK_EQ(c.frees, 1, "free_fn calls (failing)");

        c = fresh(42);
        c.cancel_rc = MPI_ERR_BUFFER;
        r = start(&c);
        CHECK_EQ(error_class(MPI_Cancel(&r)), MPI_ERR_BUFFER, "MPI_Cancel when cancel_fn fails");
        MPI_CHK(MPI_Grequest_complete(r));
        MPI_CHK(MPI_Wait(&r, &st));

        /* Not a generalized request. */
        MPI_Request recv;
        int x;
        MPI_CHK(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_SELF, &recv));
        CHECK(MPI_Grequest_complete(recv) != MPI_SUCCESS, "MPI_Grequest_complete on a receive succeeded");
        MPI_CHK(MPI_Cancel(&recv));
        MPI_CHK(MPI_Wait(&recv, &st));
    }
    return t_finish();
}
