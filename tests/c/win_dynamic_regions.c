/* Dynamic windows whose regions come and go: results against a serial model, and attach /
 * detach while other ranks access the window.
 *
 * Part 1, ROUNDS rounds: every rank attaches a fresh region of n + 1 longs (malloc'd, so its
 * address may be a freed region's of an earlier round) and gathers everyone's addresses; in
 * one MPI_Win_lock_all epoch every rank, on every target t (itself too): MPI_Accumulate
 * (MPI_SUM) of me + 1 into t's long 0, MPI_Put of its round stamp into t's long 1 + me,
 * MPI_Fetch_and_op (MPI_SUM, 1) on t's counter in a region attached once at the start,
 * MPI_Compare_and_swap of its stamp into t's long 1 + me (expecting the stamp it put: it
 * swaps in stamp + 1), and MPI_Get of long 1 + me after a flush (reads its own writes).
 * After a barrier each rank checks its region against the model (long 0 = n (n + 1) / 2,
 * long 1 + o = o's stamp + 1), then detaches and frees it.
 *
 * Part 2: rank 0 attaches and detaches a scratch region CHURN times while every other rank
 * does MPI_Fetch_and_op on rank 0's counter (in the region attached throughout) in one
 * MPI_Win_lock_all epoch until rank 0 says it is done: each origin's copy of rank 0's table
 * of regions goes stale again and again under it. The counter must equal the operations done.
 *
 * Billboard reaches the regions of one host by single copy from the origin (win/attached.rs);
 * operations the origin's copy of the table does not cover go to the target's handler.
 */
#include "common.h"

#define ROUNDS 40
#define CHURN 2000

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_dynamic_regions", 1);
    int n = t_size, me = t_rank;
    MPI_Win win;
    MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    long *counter = calloc(8, sizeof(long));
    MPI_CHK(MPI_Win_attach(win, counter, 8 * sizeof(long)));
    MPI_Aint mine, *counters = malloc((size_t)n * sizeof(MPI_Aint)), *regions = malloc((size_t)n * sizeof(MPI_Aint));
    MPI_CHK(MPI_Get_address(counter, &mine));
    MPI_CHK(MPI_Allgather(&mine, 1, MPI_AINT, counters, 1, MPI_AINT, MPI_COMM_WORLD));

    for (int k = 0; k < ROUNDS; k++) {
        long *region = calloc((size_t)n + 1, sizeof(long));
        MPI_CHK(MPI_Win_attach(win, region, ((MPI_Aint)n + 1) * (MPI_Aint)sizeof(long)));
        MPI_CHK(MPI_Get_address(region, &mine));
        MPI_CHK(MPI_Allgather(&mine, 1, MPI_AINT, regions, 1, MPI_AINT, MPI_COMM_WORLD));
        long stamp = 1000L * k + me, plus = me + 1, one = 1;
        MPI_CHK(MPI_Win_lock_all(0, win));
        for (int t = 0; t < n; t++) {
            MPI_Aint slot = regions[t] + (MPI_Aint)((1 + me) * sizeof(long));
            MPI_CHK(MPI_Accumulate(&plus, 1, MPI_LONG, t, regions[t], 1, MPI_LONG, MPI_SUM, win));
            MPI_CHK(MPI_Put(&stamp, 1, MPI_LONG, t, slot, 1, MPI_LONG, win));
            long before = -1;
            MPI_CHK(MPI_Fetch_and_op(&one, &before, MPI_LONG, t, counters[t], MPI_SUM, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK(before >= 0 && before < (long)n * (ROUNDS + 1) + 1, "counter of rank %d fetched %ld", t, before);
            long next = stamp + 1, old = -1, back = -1;
            MPI_CHK(MPI_Compare_and_swap(&next, &stamp, &old, MPI_LONG, t, slot, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK(old == stamp, "round %d: compare_and_swap at rank %d found %ld, not the %ld put", k, t, old, stamp);
            MPI_CHK(MPI_Get(&back, 1, MPI_LONG, t, slot, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK(back == stamp + 1, "round %d: get from rank %d read %ld, expected %ld", k, t, back, stamp + 1);
        }
        MPI_CHK(MPI_Win_unlock_all(win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        CHECK(region[0] == (long)n * (n + 1) / 2, "round %d: accumulated %ld, expected %ld", k, region[0],
              (long)n * (n + 1) / 2);
        for (int o = 0; o < n; o++)
            CHECK(region[1 + o] == 1000L * k + o + 1, "round %d: long of rank %d is %ld, expected %ld", k, o,
                  region[1 + o], 1000L * k + o + 1);
        MPI_CHK(MPI_Win_detach(win, region));
        free(region);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_EQ(counter[0], (long)n * ROUNDS, "counter after the rounds' fetch_and_ops");
    /* Part 2's fetch-and-adds on rank 0's counter wait until rank 0 has read it. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* Part 2: rank 0 churns its table while the others fetch-and-add on its counter. */
    long ops = 0, total = 0;
    if (me == 0) {
        for (int j = 0; j < CHURN; j++) {
            long *scratch = malloc(64 + 8 * (size_t)(j % 7));
            MPI_CHK(MPI_Win_attach(win, scratch, 64));
            MPI_CHK(MPI_Win_detach(win, scratch));
            free(scratch);
        }
        for (int r = 1; r < n; r++)
            MPI_CHK(MPI_Send(&ops, 1, MPI_LONG, r, 5, MPI_COMM_WORLD));
    } else {
        ops += t_fetch_adds_until_told(win, counters[0]);
    }
    MPI_CHK(MPI_Reduce(&ops, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0)
        CHECK_EQ(counter[0], (long)n * ROUNDS + total, "counter after the churn's fetch_and_ops");

    MPI_CHK(MPI_Win_detach(win, counter));
    MPI_CHK(MPI_Win_free(&win));
    free(counter);
    free(counters);
    free(regions);
    return t_finish();
}
