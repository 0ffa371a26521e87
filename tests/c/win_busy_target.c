/* Passive target progress without the target: rank 0 sits in a compute loop that makes no MPI
 * call while every other rank locks its window (exclusive and shared), puts, accumulates,
 * flushes and unlocks, ROUNDS times, then puts its "done" word. Rank 0 watches its own
 * window memory (MPI_WIN_UNIFIED: the program's loads see RMA updates) until every done word
 * has come, and fails if DEADLINE seconds pass first: an implementation whose target must
 * enter MPI to serve locks or puts stalls every origin until then. Afterwards the counters
 * are checked against what the origins did.
 *
 * MPICH (ch4, shared memory) passes; Billboard before windows in node shared memory failed
 * here (every operation went through rank 0's handler, which runs only inside MPI calls).
 */
#include "common.h"

#define ROUNDS 200
#define DEADLINE 20.0

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_busy_target", 1);
    int n = t_size, me = t_rank;
    /* mem[0]: sum of puts' values (exclusive RMW), mem[1]: accumulated count,
     * mem[8 + r]: done word of rank r */
    long *mem;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate((MPI_Aint)(8 + n) * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                             &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int i = 0; i < 8 + n; i++)
        mem[i] = 0;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    if (me == 0) {
        double t0 = MPI_Wtime(), deadline = t0 + DEADLINE;
        volatile double x = 1.0;
        int done = 0;
        while (done < n - 1) {
            /* compute: no MPI call inside the loop but the clock */
            for (int k = 0; k < 10000; k++)
                x = x * 1.0000001 + 1e-9;
            done = 0;
            for (int r = 1; r < n; r++)
                done += __atomic_load_n(&mem[8 + r], __ATOMIC_ACQUIRE) == 1;
            if (MPI_Wtime() > deadline)
                FAIL("after %.0f s of computing, %d of %d origins got through (the target's window stalled them)",
                     DEADLINE, done, n - 1);
        }
    } else {
        for (int r = 0; r < ROUNDS; r++) {
            long one = 1, v = -1;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            MPI_CHK(MPI_Get(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_flush(0, win));
            v += 1;
            MPI_CHK(MPI_Put(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_unlock(0, win));
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            MPI_CHK(MPI_Accumulate(&one, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_SUM, win));
            MPI_CHK(MPI_Win_unlock(0, win));
        }
        long one = 1;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_CHK(MPI_Put(&one, 1, MPI_LONG, 0, 8 + me, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(0, win));
        MPI_CHK(MPI_Win_unlock(0, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        CHECK_EQ(mem[0], (long)(n - 1) * ROUNDS, "counter after exclusive read-modify-writes");
        CHECK_EQ(mem[1], (long)(n - 1) * ROUNDS, "accumulated counter");
    }
    MPI_CHK(MPI_Win_free(&win));
    return t_finish();
}
