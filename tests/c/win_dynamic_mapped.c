/* Dynamic windows on MPI_Alloc_mem memory: results against a serial model, regions attached,
 * detached, freed and allocated again while other ranks operate, and the count that shows
 * how the operations went.
 *
 * Part 1, ROUNDS rounds: every rank allocates a region with MPI_Alloc_mem (n + 2 longs, or
 * in odd rounds 600 KiB: a chunk of Billboard's arena of its own, so a freed one's address
 * may come back in a later round on other pages of the memory file), attaches it and gathers
 * everyone's addresses. In one MPI_Win_lock_all epoch every rank, on every target t (itself
 * too): MPI_Accumulate (MPI_SUM) of me + 1 into t's long 0, MPI_Put of its stamp into t's long
 * 2 + me, MPI_Fetch_and_op (MPI_SUM, 1) on t's counter (a region attached throughout), an
 * MPI_Accumulate of 0.5 (MPI_SUM, double: a compare-exchange loop) into t's long 1 as a
 * double, MPI_Compare_and_swap of its stamp (stamp + 1 in), MPI_Get of its long after a flush
 * (its own writes). Then a fence epoch: each rank puts its stamp into the next rank's long 0.
 * After a barrier each rank checks its region against the model, detaches it and frees it.
 *
 * Part 2: rank 0 allocates, attaches, detaches and frees a scratch region CHURN times while
 * every other rank fetch-and-adds on rank 0's counter until rank 0 says it is done.
 *
 * On Billboard every region lies in the arena (win/arena.rs) and is mapped by every origin of
 * the host, so no operation may take a single copy (process_vm_writev/readv): the MPI_T
 * counter bb_rma_single_copies stays 0, and bb_rma_mapped_operations counts every operation
 * on another rank. Elsewhere (MPICH) those counters do not exist and only results are checked.
 */
#include "common.h"

#define ROUNDS 20
#define CHURN 1000
#define BIG (600 * 1024)

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_dynamic_mapped", 1);
    int n = t_size, me = t_rank, provided;
    MPI_CHK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_T_pvar_session session;
    MPI_CHK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle copies = t_pvar_counter(session, "bb_rma_single_copies");
    MPI_T_pvar_handle mapped = t_pvar_counter(session, "bb_rma_mapped_operations");

    MPI_Win win;
    MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    long *counter;
    MPI_CHK(MPI_Alloc_mem(8 * sizeof(long), MPI_INFO_NULL, &counter));
    memset(counter, 0, 8 * sizeof(long));
    MPI_CHK(MPI_Win_attach(win, counter, 8 * sizeof(long)));
    MPI_Aint mine, *counters = malloc((size_t)n * sizeof(MPI_Aint)), *regions = malloc((size_t)n * sizeof(MPI_Aint));
    MPI_CHK(MPI_Get_address(counter, &mine));
    MPI_CHK(MPI_Allgather(&mine, 1, MPI_AINT, counters, 1, MPI_AINT, MPI_COMM_WORLD));

    for (int k = 0; k < ROUNDS; k++) {
        MPI_Aint bytes = k % 2 ? BIG : ((MPI_Aint)n + 2) * (MPI_Aint)sizeof(long);
        long *region;
        MPI_CHK(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &region));
        memset(region, 0, (size_t)bytes);
        MPI_CHK(MPI_Win_attach(win, region, bytes));
        MPI_CHK(MPI_Get_address(region, &mine));
        MPI_CHK(MPI_Allgather(&mine, 1, MPI_AINT, regions, 1, MPI_AINT, MPI_COMM_WORLD));
        long stamp = 1000L * k + me, plus = me + 1, one = 1;
        double half = 0.5;
        MPI_CHK(MPI_Win_lock_all(0, win));
        for (int t = 0; t < n; t++) {
            MPI_Aint slot = regions[t] + (MPI_Aint)((2 + me) * sizeof(long));
            MPI_CHK(MPI_Accumulate(&plus, 1, MPI_LONG, t, regions[t], 1, MPI_LONG, MPI_SUM, win));
            MPI_CHK(MPI_Put(&stamp, 1, MPI_LONG, t, slot, 1, MPI_LONG, win));
            long before = -1;
            MPI_CHK(MPI_Fetch_and_op(&one, &before, MPI_LONG, t, counters[t], MPI_SUM, win));
            MPI_CHK(MPI_Accumulate(&half, 1, MPI_DOUBLE, t, regions[t] + (MPI_Aint)sizeof(long), 1, MPI_DOUBLE,
                                   MPI_SUM, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK(before >= 0 && before < (long)n * ROUNDS, "counter of rank %d fetched %ld", t, before);
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
        double sum;
        memcpy(&sum, &region[1], sizeof sum);
        CHECK(sum == 0.5 * n, "round %d: double sum %g, expected %g", k, sum, 0.5 * n);
        for (int o = 0; o < n; o++)
            CHECK(region[2 + o] == 1000L * k + o + 1, "round %d: long of rank %d is %ld, expected %ld", k, o,
                  region[2 + o], 1000L * k + o + 1);
        /* A fence epoch: each rank's stamp into the next rank's long 0. */
        MPI_CHK(MPI_Win_fence(0, win));
        MPI_CHK(MPI_Put(&stamp, 1, MPI_LONG, (me + 1) % n, regions[(me + 1) % n], 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_fence(0, win));
        long left = 1000L * k + (me + n - 1) % n;
        CHECK(region[0] == left, "round %d: fence put brought %ld, expected %ld", k, region[0], left);
        MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        MPI_CHK(MPI_Win_detach(win, region));
        MPI_CHK(MPI_Free_mem(region));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_EQ(counter[0], (long)n * ROUNDS, "counter after the rounds' fetch_and_ops");
    /* Part 2's fetch-and-adds on rank 0's counter wait until rank 0 has read it. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* Part 2: rank 0 churns its table (arena memory coming and going) under the others. */
    long ops = 0, total = 0;
    if (me == 0) {
        for (int j = 0; j < CHURN; j++) {
            long *scratch;
            MPI_CHK(MPI_Alloc_mem(j % 3 ? 64 : BIG, MPI_INFO_NULL, &scratch));
            MPI_CHK(MPI_Win_attach(win, scratch, 64));
            MPI_CHK(MPI_Win_detach(win, scratch));
            MPI_CHK(MPI_Free_mem(scratch));
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

    if (copies && mapped) {
        /* Per round on each other rank: 6 operations of the epoch, 1 put of the fence. */
        unsigned long long c = t_pvar_read(session, copies), m = t_pvar_read(session, mapped);
        CHECK(c == 0, "%llu single copies: operations on MPI_Alloc_mem regions must be loads and stores", c);
        CHECK(m >= (unsigned long long)(n - 1) * ROUNDS * 6, "only %llu operations took the mapped path", m);
    } else if (me == 0 && t_on_billboard()) {
        FAIL("Billboard has no MPI_T counters bb_rma_single_copies and bb_rma_mapped_operations");
    }

    MPI_CHK(MPI_Win_detach(win, counter));
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_Free_mem(counter));
    free(counters);
    free(regions);
    MPI_CHK(MPI_T_pvar_session_free(&session));
    MPI_CHK(MPI_T_finalize());
    return t_finish();
}
