/* Request-based accumulates on dynamic windows: MPI_Raccumulate, MPI_Rget_accumulate, and
 * MPI_Rput / MPI_Rget beside them, under MPI_Win_lock_all, on memory each rank attached:
 * from malloc (reached through the target's handler or single copies) and, with the
 * argument `alloc_mem`, from MPI_Alloc_mem (Billboard maps such regions in the origins on
 * its host: loads, stores and CPU atomics).
 *
 * Every rank, ROUNDS times, on the region of rank (me + 1 + round) % n:
 *   - MPI_Raccumulate(MPI_SUM) of LEN longs (1 + (k + me) % 5);
 *   - MPI_Rget_accumulate(MPI_SUM) of 1 long at place LEN + me's own counter (the old value
 *     it returns is the round, as only this rank adds there, 1 each time);
 *   - MPI_Rget_accumulate(MPI_NO_OP) of its own counter of the round before (a read);
 *   - MPI_Rput of its tag into its own slot, MPI_Rget of it back after the flush;
 * waiting for each request with MPI_Wait / MPI_Waitall (out of order) before the flush.
 * Then every rank checks its region against the serial model of what all ranks added.
 */
#include "common.h"

#define LEN 64
#define ROUNDS 50

int main(int argc, char **argv)
{
    int alloc_mem = argc > 1 && !strcmp(argv[1], "alloc_mem");
    t_init(&argc, &argv, "win_dynamic_racc", 1);
    int n = t_size, me = t_rank;
    MPI_Win win;
    MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    /* LEN summed longs, one counter per rank, one slot per rank */
    MPI_Aint bytes = (MPI_Aint)(LEN + 2 * n) * sizeof(long);
    long *mem;
    if (alloc_mem)
        MPI_CHK(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &mem));
    else
        mem = malloc((size_t)bytes);
    memset(mem, 0, (size_t)bytes);
    MPI_CHK(MPI_Win_attach(win, mem, bytes));
    MPI_Aint mine, *base = malloc(sizeof(MPI_Aint) * n);
    MPI_CHK(MPI_Get_address(mem, &mine));
    MPI_CHK(MPI_Allgather(&mine, 1, MPI_AINT, base, 1, MPI_AINT, MPI_COMM_WORLD));

    long add[LEN];
    for (int k = 0; k < LEN; k++)
        add[k] = 1 + (k + me) % 5;
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; r++) {
        int t = (me + 1 + r) % n;
        MPI_Aint sum_at = base[t], counter = base[t] + (LEN + me) * (MPI_Aint)sizeof(long);
        MPI_Aint slot = base[t] + (LEN + n + me) * (MPI_Aint)sizeof(long);
        MPI_Request rq[4];
        long one = 1, old = -1, seen = -1, tag = me * 1000 + r, back = -1;
        MPI_CHK(MPI_Raccumulate(add, LEN, MPI_LONG, t, sum_at, LEN, MPI_LONG, MPI_SUM, win, &rq[0]));
        MPI_CHK(MPI_Rget_accumulate(&one, 1, MPI_LONG, &old, 1, MPI_LONG, t, counter, 1, MPI_LONG, MPI_SUM, win, &rq[1]));
        MPI_CHK(MPI_Rput(&tag, 1, MPI_LONG, t, slot, 1, MPI_LONG, win, &rq[2]));
        MPI_CHK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
        /* the rounds this rank made on target t so far */
        long before = 0;
        for (int q = 0; q < r; q++)
            before += (me + 1 + q) % n == t;
        CHECK(old == before, "round %d: MPI_Rget_accumulate on rank %d returned %ld, want %ld", r, t, old, before);
        MPI_CHK(MPI_Rget_accumulate(NULL, 0, MPI_LONG, &seen, 1, MPI_LONG, t, counter, 1, MPI_LONG, MPI_NO_OP, win,
                                    &rq[3]));
        MPI_Request two[2] = {rq[3], rq[0]};
        MPI_Status st[2];
        MPI_CHK(MPI_Waitall(2, two, st));
        CHECK(seen == before + 1, "round %d: MPI_NO_OP read %ld on rank %d, want %ld", r, seen, t, before + 1);
        MPI_CHK(MPI_Wait(&rq[2], MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Win_flush(t, win));
        MPI_CHK(MPI_Rget(&back, 1, MPI_LONG, t, slot, 1, MPI_LONG, win, &rq[0]));
        MPI_CHK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        CHECK(back == tag, "round %d: MPI_Rget read %ld from rank %d after MPI_Rput of %ld", r, back, t, tag);
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* The serial model of rank `me`'s region (every origin's MPI_Win_unlock_all completed
     * its operations here before the barrier; MPI_Win_sync needs an epoch, so one is open). */
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    MPI_CHK(MPI_Win_sync(win));
    for (int k = 0; k < LEN; k++) {
        long want = 0;
        for (int q = 0; q < n; q++)
            for (int r = 0; r < ROUNDS; r++)
                want += (q + 1 + r) % n == me ? 1 + (k + q) % 5 : 0;
        CHECK(mem[k] == want, "long %d of rank %d: %ld after every MPI_Raccumulate, want %ld", k, me, mem[k], want);
    }
    for (int q = 0; q < n; q++) {
        long rounds = 0, last = -1;
        for (int r = 0; r < ROUNDS; r++)
            if ((q + 1 + r) % n == me) {
                rounds++;
                last = q * 1000 + r;
            }
        CHECK(mem[LEN + q] == rounds, "rank %d's counter on rank %d: %ld, want %ld", q, me, mem[LEN + q], rounds);
        if (rounds)
            CHECK(mem[LEN + n + q] == last, "rank %d's slot on rank %d: %ld, want %ld", q, me, mem[LEN + n + q], last);
    }
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_detach(win, mem));
    MPI_CHK(MPI_Win_free(&win));
    if (alloc_mem)
        MPI_CHK(MPI_Free_mem(mem));
    else
        free(mem);
    free(base);
    return t_finish();
}
