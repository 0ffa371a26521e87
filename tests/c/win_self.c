/* One-sided operations on the calling process's own part of a window, in a passive-target
 * epoch, take effect when the call returns, as in MPICH: a program may read what MPI_Rget or
 * MPI_Get brought from its own rank, and see its own MPI_Put, MPI_Accumulate and MPI_Raccumulate
 * in the window, without a wait or flush. BAGEL's distributed FCI relies on it (it read
 * garbage, and its energies went wrong, when such operations waited for the next round of
 * progress). Remote targets make no such promise at the call, but MPI_Win_flush completes
 * request-based operations too: MPI_Rget's data from another rank is there after a flush of
 * that rank, before MPI_Wait (BAGEL relies on that as well). */
#include "common.h"

enum { N = 36 };

int main(int argc, char **argv)
{
    t_name = "win_self";
    t_watchdog();
    MPI_Init(&argc, &argv);
    t_setup("win_self", 0);
    double *base;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < N; i++)
            base[i] = 1000.0 * t_rank + i + round;
        MPI_CHK(MPI_Win_sync(win));
        double got[N] = {0}, one = -1;
        MPI_Request r;
        MPI_CHK(MPI_Rget(got, N, MPI_DOUBLE, t_rank, 0, N, MPI_DOUBLE, win, &r));
        CHECK(got[5] == 1000.0 * t_rank + 5 + round, "round %d: MPI_Rget from itself brought %g by its return, want %g",
              round, got[5], 1000.0 * t_rank + 5 + round);
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Get(&one, 1, MPI_DOUBLE, t_rank, 7, 1, MPI_DOUBLE, win));
        CHECK(one == 1000.0 * t_rank + 7 + round, "round %d: MPI_Get from itself brought %g by its return", round, one);
        double v[6] = {1, 2, 3, 4, 5, 6};
        MPI_CHK(MPI_Put(v, 6, MPI_DOUBLE, t_rank, 0, 6, MPI_DOUBLE, win));
        CHECK(base[0] == 1 && base[5] == 6, "round %d: MPI_Put to itself not in the window by its return (%g %g)", round,
              base[0], base[5]);
        MPI_CHK(MPI_Raccumulate(v, 6, MPI_DOUBLE, t_rank, 6, 6, MPI_DOUBLE, MPI_SUM, win, &r));
        CHECK(base[6] == 1000.0 * t_rank + 6 + round + 1, "round %d: MPI_Raccumulate to itself not applied by its return",
              round);
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Accumulate(v, 6, MPI_DOUBLE, t_rank, 12, 6, MPI_DOUBLE, MPI_SUM, win));
        CHECK(base[17] == 1000.0 * t_rank + 17 + round + 6, "round %d: MPI_Accumulate to itself not applied by its return",
              round);
        MPI_CHK(MPI_Win_flush_all(win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        int right = (t_rank + 1) % t_size;
        double far[N] = {0};
        MPI_CHK(MPI_Rget(far, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, win, &r));
        MPI_CHK(MPI_Win_flush(right, win));
        CHECK(far[20] == 1000.0 * right + 20 + round, "round %d: MPI_Rget from rank %d: %g after MPI_Win_flush, want %g",
              round, right, far[20], 1000.0 * right + 20 + round);
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Win_free(&win));
    return t_finish();
}
