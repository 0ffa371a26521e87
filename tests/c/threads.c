/* MPI_THREAD_MULTIPLE: 4 threads per rank, each exchanging with the ring neighbours at once —
 * even threads on their own duplicated communicator, odd threads on MPI_COMM_WORLD with a tag of
 * their own — plus per-thread Allreduce/Bcast on the private communicators, ANY_SOURCE receives with
 * distinct tags, and Iprobe/Test polling. Any N >= 1 (best at N >= 2). */
#include "common.h"
#include <pthread.h>

enum { T = 4, ITERS = 60, BIG = 50000 };
static MPI_Comm comms[T];
static int right, left;
static char errmsg[T][512];

#define TCHECK(cond, ...)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            snprintf(errmsg[t], sizeof errmsg[t], __VA_ARGS__);                                                        \
            return NULL;                                                                                               \
        }                                                                                                              \
    } while (0)
#define TCALL(call) TCHECK((call) == MPI_SUCCESS, "%s failed", #call)

static void *worker(void *arg)
{
    const int t = (int)(long)arg;
    MPI_Comm comm = (t % 2 == 0) ? comms[t] : MPI_COMM_WORLD;
    const int tag = 100 + t;
    int *sbuf = malloc(sizeof(int) * BIG), *rbuf = malloc(sizeof(int) * BIG);
    int main_flag = -1;
    TCALL(MPI_Is_thread_main(&main_flag));
    TCHECK(main_flag == 0, "thread %d: MPI_Is_thread_main = %d, expected 0", t, main_flag);
    for (int it = 0; it < ITERS; it++) {
        int n = (it % 10 == 9) ? BIG : 1 + it % 7;
        for (int i = 0; i < n; i++)
            sbuf[i] = t_rank * 1000000 + t * 10000 + it + i;
        MPI_Request r[2];
        MPI_Status st;
        TCALL(MPI_Irecv(rbuf, BIG, MPI_INT, it % 3 ? left : MPI_ANY_SOURCE, tag, comm, &r[0]));
        TCALL(MPI_Isend(sbuf, n, MPI_INT, right, tag, comm, &r[1]));
        if (it % 2) {
            TCALL(MPI_Wait(&r[0], &st));
        } else {
            int flag = 0;
            double t0 = MPI_Wtime();
            while (!flag) {
                TCALL(MPI_Test(&r[0], &flag, &st));
                TCHECK(flag || MPI_Wtime() - t0 < 30.0, "thread %d iter %d: receive never completed", t, it);
            }
        }
        TCALL(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
        int c = -1;
        MPI_Get_count(&st, MPI_INT, &c);
        TCHECK(c == n, "thread %d iter %d: count %d, expected %d", t, it, c, n);
        TCHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag, "thread %d iter %d: source %d tag %d", t, it, st.MPI_SOURCE,
               st.MPI_TAG);
        for (int i = 0; i < n; i++)
            TCHECK(rbuf[i] == left * 1000000 + t * 10000 + it + i, "thread %d iter %d: [%d] = %d, expected %d", t, it,
                   i, rbuf[i], left * 1000000 + t * 10000 + it + i);
        /* Blocking Sendrecv too. */
        int x = t * 7 + it, y = -1;
        TCALL(MPI_Sendrecv(&x, 1, MPI_INT, right, tag + 50, &y, 1, MPI_INT, left, tag + 50, comm, MPI_STATUS_IGNORE));
        TCHECK(y == t * 7 + it, "thread %d iter %d: Sendrecv got %d", t, it, y);
        /* Collectives on the private communicator (even threads only: one collective stream per comm). */
        if (t % 2 == 0 && it % 10 == 0) {
            int s = -1;
            TCALL(MPI_Allreduce(&t_rank, &s, 1, MPI_INT, MPI_SUM, comm));
            TCHECK(s == t_size * (t_size - 1) / 2, "thread %d: Allreduce %d", t, s);
            int b = t_rank == 0 ? 4242 + it : -1;
            TCALL(MPI_Bcast(&b, 1, MPI_INT, 0, comm));
            TCHECK(b == 4242 + it, "thread %d: Bcast %d", t, b);
        }
    }
    free(sbuf);
    free(rbuf);
    return NULL;
}

int main(int argc, char **argv)
{
    t_name = "threads";
    t_watchdog();
    int provided = -1;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        FAIL("MPI_Init_thread failed");
    t_setup("threads", 1);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d, expected MPI_THREAD_MULTIPLE", provided);
    right = (t_rank + 1) % t_size;
    left = (t_rank + t_size - 1) % t_size;
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
    return t_finish();
}
