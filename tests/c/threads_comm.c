/* Communicator creation under MPI_THREAD_MULTIPLE: 4 threads per rank, each owning a duplicate of
 * MPI_COMM_WORLD, create communicators from it at the same time (MPI_Comm_dup, MPI_Comm_split,
 * MPI_Comm_create_group) and talk on each new one with MPI_ANY_SOURCE / MPI_ANY_TAG. Every
 * message names its thread, iteration, kind and sender, so two communicators given the same
 * context id show up as a message from the wrong thread or iteration. Then 10000 MPI_Comm_dup /
 * MPI_Comm_free cycles, more than any implementation has context ids: freed ids must come back.
 * Any N >= 1 (best at N >= 2). MPICH 4.0.2 quirk: with more ranks than cores (4 ranks of 5 threads
 * on 2 cores) it takes minutes, as its waiting threads poll without yielding; check the test
 * itself under MPICH with as many ranks as cores. */
#include "common.h"
#include <pthread.h>

enum { T = 4, ITERS = 50, CHURN = 10000 };
static MPI_Comm comms[T];
static char errmsg[T][512];

#define TCHECK(cond, ...)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            if (!errmsg[t][0])                                                                                         \
                snprintf(errmsg[t], sizeof errmsg[t], __VA_ARGS__);                                                    \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)
#define TCALL(call)                                                                                                    \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        TCHECK(rc_ == MPI_SUCCESS, "thread %d: %s returned %d (%s)", t, #call, rc_, t_errstr(rc_));                    \
    } while (0)

/* Every member sends one message to every member (itself too), tagged with its rank in `c`;
 * each message carries (thread, iteration, kind, sender) and is received with wildcards. */
static int exchange(MPI_Comm c, int t, int it, int kind)
{
    int n, me;
    TCALL(MPI_Comm_size(c, &n));
    TCALL(MPI_Comm_rank(c, &me));
    int mine[4] = {t, it, kind, me};
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)n);
    char *seen = calloc((size_t)n, 1);
    for (int to = 0; to < n; to++)
        TCALL(MPI_Isend(mine, 4, MPI_INT, to, me, c, &reqs[to]));
    for (int k = 0; k < n; k++) {
        int got[4] = {-1, -1, -1, -1};
        MPI_Status st;
        TCALL(MPI_Recv(got, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st));
        int from = st.MPI_SOURCE;
        TCHECK(from >= 0 && from < n && !seen[from], "thread %d iter %d kind %d: second message from %d", t, it, kind,
               from);
        seen[from] = 1;
        TCHECK(got[0] == t && got[1] == it && got[2] == kind && got[3] == from && st.MPI_TAG == from,
               "thread %d iter %d kind %d: cross-talk: got (thread %d, iter %d, kind %d, rank %d) with tag %d from %d",
               t, it, kind, got[0], got[1], got[2], got[3], st.MPI_TAG, from);
    }
    TCALL(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
    free(reqs);
    free(seen);
    return 0;
}

static int work(int t)
{
    MPI_Comm own = comms[t];
    MPI_Group all, pair;
    TCALL(MPI_Comm_group(own, &all));
    int ends[2] = {t_size - 1, 0};
    TCALL(MPI_Group_incl(all, t_size > 1 ? 2 : 1, ends, &pair));
    for (int it = 0; it < ITERS; it++) {
        MPI_Comm d, s, p;
        TCALL(MPI_Comm_dup(own, &d));
        if (exchange(d, t, it, 0))
            return -1;
        /* Two halves by parity, reverse rank order inside each. */
        TCALL(MPI_Comm_split(own, t_rank % 2, -t_rank, &s));
        int ssize = -1, srank = -1;
        TCALL(MPI_Comm_size(s, &ssize));
        TCALL(MPI_Comm_rank(s, &srank));
        TCHECK(ssize == (t_size + 1 - t_rank % 2) / 2, "thread %d: split size %d", t, ssize);
        TCHECK(srank == (ssize - 1) - t_rank / 2, "thread %d: split rank %d", t, srank);
        if (exchange(s, t, it, 1))
            return -1;
        /* The first and last rank alone (only they call it), a tag per iteration. */
        if (t_rank == 0 || t_rank == t_size - 1) {
            TCALL(MPI_Comm_create_group(own, pair, it, &p));
            if (exchange(p, t, it, 2))
                return -1;
            TCALL(MPI_Comm_free(&p));
        }
        TCALL(MPI_Comm_free(&s));
        TCALL(MPI_Comm_free(&d));
        TCHECK(d == MPI_COMM_NULL && s == MPI_COMM_NULL, "thread %d: MPI_Comm_free left a handle", t);
    }
    TCALL(MPI_Group_free(&pair));
    TCALL(MPI_Group_free(&all));
    return 0;
}

static void *worker(void *arg)
{
    work((int)(long)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    t_name = "threads_comm";
    t_watchdog();
    int provided = -1;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        FAIL("MPI_Init_thread failed");
    t_setup("threads_comm", 1);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d, expected MPI_THREAD_MULTIPLE", provided);
    for (int t = 0; t < T; t++)
        MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));

    pthread_t th[T];
    for (int t = 0; t < T; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)(long)t) == 0, "pthread_create");
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++)
        CHECK(errmsg[t][0] == 0, "%s", errmsg[t]);
    for (int t = 0; t < T; t++)
        MPI_CHK(MPI_Comm_free(&comms[t]));

    /* Long-running dup/free: ids of freed communicators must be reused. */
    for (int i = 0; i < CHURN; i++) {
        MPI_Comm c;
        int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
        if (rc != MPI_SUCCESS)
            FAIL("MPI_Comm_dup failed at iteration %d of the dup/free loop: %s", i, t_errstr(rc));
        if (i % 1000 == 999 && exchange(c, 0, i, 3))
            FAIL("%s", errmsg[0]);
        MPI_CHK(MPI_Comm_free(&c));
    }
    return t_finish();
}
