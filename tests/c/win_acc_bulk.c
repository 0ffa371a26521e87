/* Accumulates of many elements racing with single-element atomics on the same places (MPI
 * 4.0 section 12.7.1: accumulate-family updates of one location are atomic with respect to
 * each other, element by element).
 *
 * On a window from MPI_Win_allocate (the default) Billboard, on one host, folds a long
 * accumulate under the target part's lock with plain loads and stores, and does a short one,
 * a fetch-and-op or a compare-and-swap with CPU atomics: the two paths must not lose each
 * other's updates. With the argument `create` the window is the program's memory
 * (MPI_Win_create): under MPI_Win_lock_all the target's handler applies accumulates, under
 * MPI_Win_lock(MPI_LOCK_SHARED) the origin does by single copies, both under the target's
 * accumulate lock. `create withdraw`: as `create`, and the origins withdraw every operation
 * the handler has not taken yet at once (Billboard's BB_RMA_WITHDRAW_US=0). Billboard maps a
 * created window's pages in every member on one host (win/remap.rs), so there `create` runs
 * the paths of MPI_Win_allocate on the program's memory; `create nomap` (and `create withdraw`)
 * keep the pages private (BB_RMA_CREATE_MAP=0): the handler and single copies as above.
 *
 * Every rank, ROUNDS times, under MPI_Win_lock_all on rank 0's window:
 *   - MPI_Accumulate(MPI_SUM) of a run of 1 to 700 longs at a place that moves with the round
 *     and the rank, so the runs of all ranks overlap;
 *   - MPI_Fetch_and_op(MPI_SUM) on a single long inside those runs;
 *   - MPI_Get_accumulate(MPI_SUM) of a run, and a compare-and-swap loop adding 1 to a long;
 *   - MPI_Accumulate of a strided vector (every third long) and of doubles (integral values,
 *     so sums are exact);
 * remembering what it added to each element; then a hammer phase on the first HOT longs,
 * where odd ranks add to single ones by MPI_Fetch_and_op, each batch under its own
 * MPI_Win_lock(MPI_LOCK_SHARED), for HAMMER_S seconds, while even ranks fold
 * MPI_Accumulate(MPI_SUM) of all of them under MPI_Win_lock_all until every odd rank is done
 * (a lost update needs the two to meet on one element within a few instructions, and on a
 * busy machine the two ranks to hold a core at once: many tries, for a while; with the
 * fold's exclusion of the atomics removed, this loses updates). Rank 0 checks every element
 * equals the sum of all ranks' additions. Meanwhile each rank also checks the order of its
 * own operations on a block of its own (MPI's default accumulate_ordering): MPI_REPLACE of 16
 * longs (a fold), then a fetch-and-op adding 1 to its first (an atomic), then
 * MPI_Get_accumulate(MPI_NO_OP) of the 16 (a fold) must read the round + 1, then the round
 * 15 times.
 */
#include "common.h"

#define ROUNDS 400
#define LEN 2048 /* longs summed */
#define DLEN 256 /* doubles summed */
#define OWN 16   /* longs of each rank's ordering block */
#define HOT 64   /* longs of the hammer phase */
#define HAMMER_S 0.5

int main(int argc, char **argv)
{
    /* Billboard: an origin withdraws every accumulate its target's handler has not taken at
     * the first look of a flush (tests/c/win_compute_target.c says why it may), so origins
     * and the handler race for each operation (MPICH and Open MPI ignore it). */
    if (argc > 2 && !strcmp(argv[2], "withdraw")) {
        setenv("BB_RMA_WITHDRAW_US", "0", 1);
        setenv("BB_RMA_CREATE_MAP", "0", 1);
    } else if (argc > 2 && !strcmp(argv[2], "nomap")) {
        setenv("BB_RMA_CREATE_MAP", "0", 1);
    }
    t_init(&argc, &argv, "win_acc_bulk", 1);
    int n = t_size, me = t_rank;
    MPI_Aint bytes = (MPI_Aint)(LEN + DLEN + OWN * n) * 8;
    long *mem;
    MPI_Win win;
    if (argc > 1 && !strcmp(argv[1], "create")) {
        mem = malloc((size_t)bytes);
        MPI_CHK(MPI_Win_create(mem, bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        MPI_CHK(MPI_Win_allocate(bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    memset(mem, 0, (size_t)bytes);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const MPI_Aint DSUM = LEN, OWNED = LEN + DLEN + OWN * me, DONE = LEN - 1;

    long *added = calloc(LEN, sizeof(long)), *want = calloc(LEN, sizeof(long));
    double *dadded = calloc(DLEN, sizeof(double)), *dwant = calloc(DLEN, sizeof(double));
    long *ones = malloc(LEN * sizeof(long)), *got = malloc(LEN * sizeof(long));
    double *dvals = malloc(DLEN * sizeof(double));
    MPI_Datatype every_third;
    MPI_CHK(MPI_Type_vector(LEN / 3, 1, 3, MPI_LONG, &every_third));
    MPI_CHK(MPI_Type_commit(&every_third));

    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < LEN; k++)
            ones[k] = 1 + (k + r + me) % 3;
        /* a run of 1..700 longs whose start moves with the round and the rank */
        int run = 1 + (r * 37 + me * 11) % 700;
        int at = (r * 101 + me * 53) % (LEN - 1 - run);
        MPI_CHK(MPI_Accumulate(ones, run, MPI_LONG, 0, at, run, MPI_LONG, MPI_SUM, win));
        for (int k = 0; k < run; k++)
            added[at + k] += ones[k];
        /* single longs inside the runs, by fetch-and-op */
        for (int j = 0; j < 4; j++) {
            long one = 1, old;
            int place = (at + j * 97 + r) % (LEN - 1);
            MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, place, MPI_SUM, win));
            added[place] += 1;
        }
        /* a get-accumulate of a shorter run */
        int grun = 1 + (r * 13 + me) % 64, gat = (r * 29 + me * 7) % (LEN - grun);
        MPI_CHK(MPI_Get_accumulate(ones, grun, MPI_LONG, got, grun, MPI_LONG, 0, gat, grun, MPI_LONG, MPI_SUM, win));
        for (int k = 0; k < grun; k++)
            added[gat + k] += ones[k];
        /* a compare-and-swap loop adding 1 */
        {
            int place = (r * 7 + me * 3) % (LEN - 1);
            long old, seen = -1;
            MPI_CHK(MPI_Fetch_and_op(NULL, &old, MPI_LONG, 0, place, MPI_NO_OP, win));
            MPI_CHK(MPI_Win_flush(0, win));
            for (;;) {
                long next = old + 1;
                MPI_CHK(MPI_Compare_and_swap(&next, &old, &seen, MPI_LONG, 0, place, win));
                MPI_CHK(MPI_Win_flush(0, win));
                if (seen == old)
                    break;
                old = seen;
            }
            added[place] += 1;
        }
        /* every third long, from the start */
        if (r % 8 == me % 8) {
            MPI_CHK(MPI_Accumulate(ones, LEN / 3, MPI_LONG, 0, 0, 1, every_third, MPI_SUM, win));
            for (int k = 0; k < LEN / 3; k++)
                added[3 * k] += ones[k];
        }
        /* doubles: a run, and a single one by fetch-and-op (a compare-exchange loop) */
        int drun = 1 + (r * 5 + me) % DLEN, dat = (r * 3) % (DLEN - drun + 1);
        for (int k = 0; k < drun; k++)
            dvals[k] = (double)(1 + (k + me) % 4);
        MPI_CHK(MPI_Accumulate(dvals, drun, MPI_DOUBLE, 0, DSUM + dat, drun, MPI_DOUBLE, MPI_SUM, win));
        for (int k = 0; k < drun; k++)
            dadded[dat + k] += dvals[k];
        {
            double two = 2.0, old;
            int place = (dat + r) % DLEN;
            MPI_CHK(MPI_Fetch_and_op(&two, &old, MPI_DOUBLE, 0, DSUM + place, MPI_SUM, win));
            dadded[place] += 2.0;
        }
        /* this rank's own block: the order of its operations */
        {
            long v[OWN], seen[OWN], one = 1, old;
            for (int k = 0; k < OWN; k++)
                v[k] = r;
            MPI_CHK(MPI_Accumulate(v, OWN, MPI_LONG, 0, OWNED, OWN, MPI_LONG, MPI_REPLACE, win));
            MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, OWNED, MPI_SUM, win));
            MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_LONG, seen, OWN, MPI_LONG, 0, OWNED, OWN, MPI_LONG, MPI_NO_OP, win));
            MPI_CHK(MPI_Win_flush(0, win));
            CHECK(old == r, "round %d: fetch-and-op after MPI_REPLACE of %d read %ld", r, r, old);
            CHECK(seen[0] == r + 1, "round %d: first long read %ld after replace + 1, want %d", r, seen[0], r + 1);
            for (int k = 1; k < OWN; k++)
                CHECK(seen[k] == r, "round %d: long %d read %ld after MPI_REPLACE, want %d", r, k, seen[k], r);
        }
        if (r % 16 == 0)
            MPI_CHK(MPI_Win_flush(0, win));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Type_free(&every_third));

    /* the hammer phase: folds against fetch-and-ops on the same HOT longs */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < HOT; k++)
        ones[k] = 1;
    if (me % 2 == 1 || n == 1) {
        long one = 1, old;
        double end = MPI_Wtime() + HAMMER_S;
        while (MPI_Wtime() < end) {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            for (int k = 0; k < HOT; k++) {
                MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, k, MPI_SUM, win));
                added[k] += 1;
            }
            MPI_CHK(MPI_Win_unlock(0, win));
        }
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_CHK(MPI_Accumulate(&one, 1, MPI_LONG, 0, DONE, 1, MPI_LONG, MPI_SUM, win));
        MPI_CHK(MPI_Win_unlock(0, win));
        added[DONE] += 1;
    }
    if (me % 2 == 0) {
        long folds = 0, done = 0;
        MPI_CHK(MPI_Win_lock_all(0, win));
        while (done < n / 2) {
            MPI_CHK(MPI_Accumulate(ones, HOT, MPI_LONG, 0, 0, HOT, MPI_LONG, MPI_SUM, win));
            if (++folds % 16 == 0) {
                MPI_CHK(MPI_Fetch_and_op(NULL, &done, MPI_LONG, 0, DONE, MPI_NO_OP, win));
                MPI_CHK(MPI_Win_flush(0, win));
            }
        }
        MPI_CHK(MPI_Win_unlock_all(win));
        for (int k = 0; k < HOT; k++)
            added[k] += folds;
    }

    MPI_CHK(MPI_Reduce(added, want, LEN, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Reduce(dadded, dwant, DLEN, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        int bad = 0;
        for (int k = 0; k < LEN; k++)
            if (mem[k] != want[k] && bad++ < 5)
                fprintf(stderr, "long %d is %ld, the ranks added %ld\n", k, mem[k], want[k]);
        double *d = (double *)(mem + DSUM);
        for (int k = 0; k < DLEN; k++)
            if (d[k] != dwant[k] && bad++ < 10)
                fprintf(stderr, "double %d is %g, the ranks added %g\n", k, d[k], dwant[k]);
        CHECK(bad == 0, "%d elements lost or gained updates", bad);
    }
    MPI_CHK(MPI_Win_free(&win));
    if (argc > 1 && !strcmp(argv[1], "create"))
        free(mem);
    free(added);
    free(want);
    free(dadded);
    free(dwant);
    free(ones);
    free(got);
    free(dvals);
    return t_finish();
}
