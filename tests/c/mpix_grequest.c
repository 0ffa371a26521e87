/* MPICH's generalized requests with poll and wait functions (MPIX_Grequest_start) and classes
 * of them (MPIX_Grequest_class_create/allocate): the library drives the request itself. Each
 * MPI_Test of a pending request polls it once (the poll_fn here completes it at its third
 * call), MPI_Wait polls until it is complete, MPI_Waitall hands each pending request to
 * wait_fn (count 1), as MPICH 4.0.2 does; query_fn gives the status and free_fn runs once.
 * Null poll_fn/wait_fn are MPI_ERR_ARG, and (on Billboard) a handle that is not a class is
 * refused. Any N >= 1. */
#include "common.h"

typedef struct {
    int id, polls, waits, frees, wait_count;
    MPI_Request req;
} greq_t;

static int query_fn(void *extra, MPI_Status *st)
{
    greq_t *g = extra;
    MPI_Status_set_elements(st, MPI_BYTE, g->id);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    ((greq_t *)extra)->frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static int poll_fn(void *extra, MPI_Status *st)
{
    (void)st;
    greq_t *g = extra;
    if (++g->polls == 3)
        MPI_Grequest_complete(g->req);
    return MPI_SUCCESS;
}

static int wait_fn(int count, void **states, double timeout, MPI_Status *st)
{
    (void)timeout;
    (void)st;
    for (int i = 0; i < count; i++) {
        greq_t *g = states[i];
        g->waits++;
        g->wait_count = count;
        MPI_Grequest_complete(g->req);
    }
    return MPI_SUCCESS;
}

static void check_done(greq_t *g, const MPI_Status *st, const char *what)
{
    int n = -1;
    MPI_CHK(MPI_Get_count(st, MPI_BYTE, &n));
    CHECK(n == g->id, "%s: count %d from query_fn, expected %d", what, n, g->id);
    CHECK(g->frees == 1, "%s: free_fn ran %d times, expected once", what, g->frees);
    CHECK(g->req == MPI_REQUEST_NULL, "%s: the handle is not MPI_REQUEST_NULL", what);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "mpix_grequest", 1);
    MPI_Status st;

    /* MPI_Test polls once a call: pending after two, complete at the third. */
    greq_t a = {.id = 11};
    MPI_CHK(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &a, &a.req));
    int flag = 0, tests = 0;
    while (!flag && tests < 10) {
        MPI_CHK(MPI_Test(&a.req, &flag, &st));
        tests++;
        CHECK(a.polls == tests, "MPI_Test %d: poll_fn ran %d times", tests, a.polls);
    }
    CHECK_EQ(tests, 3, "MPI_Test calls until the poll_fn completed the request");
    CHECK_EQ(a.waits, 0, "wait_fn calls from MPI_Test");
    check_done(&a, &st, "MPI_Test");

    /* MPI_Wait polls until complete. */
    greq_t b = {.id = 12};
    MPI_CHK(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &b, &b.req));
    MPI_CHK(MPI_Wait(&b.req, &st));
    CHECK_EQ(b.polls, 3, "poll_fn calls in MPI_Wait");
    check_done(&b, &st, "MPI_Wait");

    /* Classes: distinct handles; requests allocated from them carry the class's callbacks. */
    MPIX_Grequest_class c1, c2;
    MPI_CHK(MPIX_Grequest_class_create(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &c1));
    MPI_CHK(MPIX_Grequest_class_create(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &c2));
    CHECK(c1 != c2, "two classes with the same handle %#x", c1);

    /* MPI_Waitall hands each pending request of a class to wait_fn, with a point-to-point
     * request in the same list. */
    greq_t g[2] = {{.id = 21}, {.id = 22}};
    MPI_CHK(MPIX_Grequest_class_allocate(c1, &g[0], &g[0].req));
    MPI_CHK(MPIX_Grequest_class_allocate(c2, &g[1], &g[1].req));
    int out = 5, in = 0;
    MPI_Request reqs[4];
    MPI_CHK(MPI_Irecv(&in, 1, MPI_INT, t_rank, 7, MPI_COMM_WORLD, &reqs[2]));
    MPI_CHK(MPI_Isend(&out, 1, MPI_INT, t_rank, 7, MPI_COMM_WORLD, &reqs[3]));
    reqs[0] = g[0].req;
    reqs[1] = g[1].req;
    MPI_Status sts[4];
    MPI_CHK(MPI_Waitall(4, reqs, sts));
    CHECK_EQ(in, 5, "the point-to-point message in the same MPI_Waitall");
    for (int i = 0; i < 2; i++) {
        g[i].req = reqs[i];
        CHECK(g[i].waits == 1 && g[i].wait_count == 1, "request %d: wait_fn ran %d times (count %d)", i, g[i].waits,
              g[i].wait_count);
        check_done(&g[i], &sts[i], "MPI_Waitall");
    }

    /* A class's request tested: polled like any other. */
    greq_t d = {.id = 31};
    MPI_CHK(MPIX_Grequest_class_allocate(c2, &d, &d.req));
    t_wait_bounded(&d.req, &st, 10.0, "a class's request under MPI_Test");
    CHECK_EQ(d.polls, 3, "poll_fn calls of a class's request");
    check_done(&d, &st, "MPI_Test of a class's request");

    /* MPICH refuses null poll and wait functions, and a handle that is no class. */
    MPI_Request r = MPI_REQUEST_NULL;
    int cls = -1, rc;
    rc = MPIX_Grequest_start(query_fn, free_fn, cancel_fn, NULL, wait_fn, &d, &r);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_ARG, "class of MPIX_Grequest_start with a null poll_fn");
    rc = MPIX_Grequest_class_create(query_fn, free_fn, cancel_fn, poll_fn, NULL, &c1);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_ARG, "class of MPIX_Grequest_class_create with a null wait_fn");
#ifdef BILLBOARD_MPI
    /* MPICH 4.0.2 does not check the handle: it crashes (SIGSEGV) here. */
    rc = MPIX_Grequest_class_allocate((MPIX_Grequest_class)MPI_COMM_WORLD, &d, &r);
    CHECK(rc != MPI_SUCCESS, "MPIX_Grequest_class_allocate took MPI_COMM_WORLD as a class");
#endif
    return t_finish();
}
