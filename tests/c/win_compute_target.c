/* Passive target without the target on MPI_Win_create windows (the program's own memory):
 * rank 0 computes without any MPI call while every other rank does MPI_Win_lock /
 * MPI_Fetch_and_op (MPI_SUM) / MPI_Win_unlock on it OPS times, then puts its "done" word.
 * Rank 0 reads the done words between slices of its compute and stops computing once all are
 * set, or fails after COMPUTE seconds: each origin must finish while the target stays out of
 * MPI (an implementation whose target applies fetch-and-op only inside its own MPI calls
 * cannot pass). Not a timing bound: under load the origins took 0.5 to 2.3 s for what an idle
 * machine does in a fraction of that, so a fixed 2 s compute failed 11 runs in 40. Then the
 * counter must equal the number of operations, and every fetched value must have been unique
 * (each origin checks its values increase; rank 0 gathers their sum).
 *
 * Arguments:
 *   shared    MPI_LOCK_SHARED instead of exclusive
 *   lock_all  one MPI_Win_lock_all epoch, each MPI_Fetch_and_op followed by MPI_Win_flush
 *             (ARMCI-MPI's pattern: NWChem's task counter)
 *   handler   Billboard only: BB_RMA_SHM=0 and BB_ASYNC_PROGRESS=1, everything through the
 *             target's handler, served by the progress thread
 *   nomap     Billboard only: BB_RMA_CREATE_MAP=0, the window's pages private to rank 0 (by
 *             default every member maps them and works on them itself, win/remap.rs)
 *   large     each operation also adds 1 to each of LARGE longs by one MPI_Accumulate
 *             (72 KB: more than Billboard withdraws from the handler) before the fetch-and-op
 *   racc      MPI_Rget_accumulate + MPI_Wait instead of MPI_Fetch_and_op
 *   dynamic   the words attached to an MPI_Win_create_dynamic window (displacements are rank
 *             0's addresses) instead of MPI_Win_create's: Billboard's origins reach attached
 *             regions on one host themselves too (win/attached.rs)
 * On one host Billboard needs no thread otherwise: an origin applies the operations the
 * target's handler has not taken within BB_RMA_WITHDRAW_US itself, under the target's
 * accumulate lock. Across hosts (tests/tests/win_hosts.rs) no argument is needed: the
 * progress thread starts by itself while such a window exists.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include <time.h>

#define OPS 1000
#define LARGE 9000
#define COMPUTE 30.0 /* seconds at most: below the watchdog (BB_CTEST_TIMEOUT, 60 s in the suite) */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    int lock = MPI_LOCK_EXCLUSIVE, all = 0, large = 0, racc = 0, dynamic = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "shared")) {
            lock = MPI_LOCK_SHARED;
        } else if (!strcmp(argv[i], "lock_all")) {
            all = 1;
        } else if (!strcmp(argv[i], "large")) {
            large = 1;
        } else if (!strcmp(argv[i], "racc")) {
            racc = 1;
        } else if (!strcmp(argv[i], "dynamic")) {
            dynamic = 1;
        } else if (!strcmp(argv[i], "nomap")) {
            setenv("BB_RMA_CREATE_MAP", "0", 1);
        } else if (!strcmp(argv[i], "handler")) {
            setenv("BB_RMA_SHM", "0", 1);
            setenv("BB_ASYNC_PROGRESS", "1", 1);
        }
    }
    t_init(&argc, &argv, "win_compute_target", 1);
    int n = t_size, me = t_rank;
    /* mem[0]: the counter, mem[8 + r]: done word of rank r, then LARGE longs if `large` */
    long words = 8 + n + (large ? LARGE : 0);
    long *mem = calloc((size_t)words, sizeof(long));
    long *ones = malloc(LARGE * sizeof(long));
    for (int i = 0; i < LARGE; i++)
        ones[i] = 1;
    MPI_Win win;
    /* Long i of rank 0's words is at displacement at + i * step. */
    MPI_Aint at = 0, step = 1;
    if (dynamic) {
        MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        MPI_CHK(MPI_Win_attach(win, mem, words * (MPI_Aint)sizeof(long)));
        MPI_CHK(MPI_Get_address(mem, &at));
        MPI_CHK(MPI_Bcast(&at, 1, MPI_AINT, 0, MPI_COMM_WORLD));
        step = sizeof(long);
    } else {
        MPI_CHK(MPI_Win_create(mem, words * (MPI_Aint)sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &win));
    }
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    if (me == 0) {
        double end = now_s() + COMPUTE;
        volatile double x = 1.0;
        int done = 0;
        while (done != n - 1 && now_s() < end) {
            for (int k = 0; k < 10000; k++)
                x = x * 1.0000001 + 1e-9;
            done = 0;
            for (int r = 1; r < n; r++)
                done += __atomic_load_n(&mem[8 + r], __ATOMIC_ACQUIRE) == 1;
        }
        if (done != n - 1)
            FAIL("after %.0f s of computing, %d of %d origins had finished %d lock/fetch_and_op/unlock (the target "
                 "stalled them)",
                 COMPUTE, done, n - 1, OPS);
    } else {
        long one = 1, last = -1;
        if (all)
            MPI_CHK(MPI_Win_lock_all(0, win));
        for (int k = 0; k < OPS; k++) {
            long got = -1;
            if (!all)
                MPI_CHK(MPI_Win_lock(lock, 0, 0, win));
            if (large)
                MPI_CHK(MPI_Accumulate(ones, LARGE, MPI_LONG, 0, at + (8 + n) * step, LARGE, MPI_LONG, MPI_SUM, win));
            if (racc) {
                MPI_Request req;
                MPI_CHK(MPI_Rget_accumulate(&one, 1, MPI_LONG, &got, 1, MPI_LONG, 0, at, 1, MPI_LONG, MPI_SUM, win,
                                            &req));
                MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            } else {
                MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, at, MPI_SUM, win));
            }
            MPI_CHK(all ? MPI_Win_flush(0, win) : MPI_Win_unlock(0, win));
            if (got <= last || got < 0)
                FAIL("fetch_and_op %d fetched %ld after %ld", k, got, last);
            last = got;
        }
        if (all) {
            MPI_CHK(MPI_Put(&one, 1, MPI_LONG, 0, at + (8 + me) * step, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_unlock_all(win));
        } else {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            MPI_CHK(MPI_Put(&one, 1, MPI_LONG, 0, at + (8 + me) * step, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_unlock(0, win));
        }
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        CHECK_EQ(mem[0], (long)(n - 1) * OPS, "counter after every fetch_and_op");
        for (int i = 0; large && i < LARGE; i++)
            if (mem[8 + n + i] != (long)(n - 1) * OPS)
                FAIL("long %d of the large accumulates: %ld, expected %ld", i, mem[8 + n + i], (long)(n - 1) * OPS);
    }
    if (dynamic)
        MPI_CHK(MPI_Win_detach(win, mem));
    MPI_CHK(MPI_Win_free(&win));
    free(mem);
    free(ones);
    return t_finish();
}
