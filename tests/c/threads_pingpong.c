/* Waiting threads hand over the core: 2 ranks at MPI_THREAD_MULTIPLE, rank 0 pings from one
 * thread while two threads of rank 1 each receive their own tag and answer, over sizes 0 B to
 * 4 MiB, contents checked. Three threads wait on two engines on a 2-core machine: when waiting
 * threads spun against each other a message took a scheduler tick (1 to 2 ms) and this job
 * outlived the watchdog; handing the engine to one polling thread makes it take seconds.
 *
 * Then MPI_Waitany and MPI_Waitsome on a receive that only comes after a pause: the waiting
 * rank must step down to sleeping (its CPU time stays well below the pause) instead of
 * sweeping its requests with sched_yield forever.
 *
 * Needs exactly 2 ranks. */
#include "common.h"
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

enum { SMALL_ROUNDS = 30000, PAUSE_MS = 1500 };

static long rounds_for(long size)
{
    long r = (256L << 10) / (size > 0 ? size : 1);
    return r > SMALL_ROUNDS ? SMALL_ROUNDS : r < 4 ? 4 : r;
}

static void fill(unsigned char *b, long n, int tag, long round)
{
    for (long i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 7 + tag * 31 + round);
}

static int check(const unsigned char *b, long n, int tag, long round)
{
    for (long i = 0; i < n; i++)
        if (b[i] != (unsigned char)(i * 7 + tag * 31 + round))
            return 0;
    return 1;
}

static const long sizes[] = {0, 1, 64, 1024, 4096, 8192, 65536, 1 << 20, 4 << 20};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

static char errmsg[2][256];

static void *answer(void *arg)
{
    int tag = (int)(long)arg;
    unsigned char *buf = malloc(4 << 20);
    for (int s = 0; s < NSIZES; s++) {
        for (long r = 0; r < rounds_for(sizes[s]); r++) {
            MPI_Status st;
            if (MPI_Recv(buf, (int)sizes[s], MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st) != MPI_SUCCESS) {
                snprintf(errmsg[tag], sizeof errmsg[tag], "thread %d: MPI_Recv failed", tag);
                return NULL;
            }
            int n = -1;
            MPI_Get_count(&st, MPI_BYTE, &n);
            if (n != sizes[s] || !check(buf, sizes[s], tag, r)) {
                snprintf(errmsg[tag], sizeof errmsg[tag], "thread %d: size %ld round %ld arrived wrong (count %d)",
                         tag, sizes[s], r, n);
                return NULL;
            }
            fill(buf, sizes[s], tag + 2, r);
            MPI_Send(buf, (int)sizes[s], MPI_BYTE, 0, tag, MPI_COMM_WORLD);
        }
    }
    free(buf);
    return NULL;
}

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec * 1e-6;
}

/* Rank 1 waits in MPI_Waitany (then MPI_Waitsome) for a message rank 0 sends after a pause. */
static void waits_sleep(void)
{
    int token = 0;
    for (int round = 0; round < 2; round++) {
        if (t_rank == 0) {
            struct timespec pause = {PAUSE_MS / 1000, (PAUSE_MS % 1000) * 1000000L};
            MPI_Barrier(MPI_COMM_WORLD);
            nanosleep(&pause, NULL);
            token = 100 + round;
            MPI_Send(&token, 1, MPI_INT, 1, 50 + round, MPI_COMM_WORLD);
            continue;
        }
        MPI_Request reqs[2];
        int other = -1, index = -1, outcount = -1, indices[2];
        MPI_Irecv(&token, 1, MPI_INT, 0, 50 + round, MPI_COMM_WORLD, &reqs[0]);
        MPI_Irecv(&other, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, &reqs[1]); /* never sent */
        MPI_Barrier(MPI_COMM_WORLD);
        double cpu = cpu_seconds(), wall = MPI_Wtime();
        if (round == 0) {
            CHECK(MPI_Waitany(2, reqs, &index, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Waitany failed");
            CHECK(index == 0 && token == 100, "MPI_Waitany: index %d token %d, expected 0 and 100", index, token);
        } else {
            CHECK(MPI_Waitsome(2, reqs, &outcount, indices, MPI_STATUSES_IGNORE) == MPI_SUCCESS,
                  "MPI_Waitsome failed");
            CHECK(outcount == 1 && indices[0] == 0 && token == 101, "MPI_Waitsome: outcount %d index %d token %d",
                  outcount, indices[0], token);
        }
        cpu = cpu_seconds() - cpu, wall = MPI_Wtime() - wall;
        CHECK(wall > PAUSE_MS * 1e-3 * 0.5, "%s returned after %.3f s, before the message was sent",
              round ? "MPI_Waitsome" : "MPI_Waitany", wall);
        CHECK(cpu < 0.5 * wall, "%s burned %.3f s of CPU in %.3f s of waiting: it never went to sleep",
              round ? "MPI_Waitsome" : "MPI_Waitany", cpu, wall);
        MPI_Cancel(&reqs[1]);
        MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    int provided;
    t_name = "threads_pingpong";
    t_watchdog();
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        FAIL("MPI_Init_thread failed");
    t_setup("threads_pingpong", 2);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d, expected MPI_THREAD_MULTIPLE", provided);
    CHECK(t_size == 2, "needs exactly 2 ranks, got %d", t_size);
    if (t_rank == 1) {
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            CHECK(pthread_create(&t[i], NULL, answer, (void *)i) == 0, "pthread_create failed");
        for (int i = 0; i < 2; i++) {
            pthread_join(t[i], NULL);
            CHECK(errmsg[i][0] == 0, "%s", errmsg[i]);
        }
    } else {
        unsigned char *sbuf = malloc(4 << 20), *rbuf = malloc(4 << 20);
        for (int s = 0; s < NSIZES; s++) {
            for (long r = 0; r < rounds_for(sizes[s]); r++) {
                for (int tag = 0; tag < 2; tag++) {
                    fill(sbuf, sizes[s], tag, r);
                    MPI_Send(sbuf, (int)sizes[s], MPI_BYTE, 1, tag, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, (int)sizes[s], MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    CHECK(check(rbuf, sizes[s], tag + 2, r), "answer of thread %d, size %ld round %ld is wrong", tag,
                          sizes[s], r);
                }
            }
        }
        free(sbuf), free(rbuf);
    }
    waits_sleep();
    return t_finish();
}
