/* Which instructions a fetch-and-op takes on a window in shared memory, and that the updates
 * stay exact while folds (long accumulates under the target part's lock) come and go.
 *
 * Billboard (win/shm_sync.rs): an origin's CPU atomic announces itself to folds by a plain
 * store while the part's atomics mode allows it; a fold that finds that mode fences the
 * members' CPUs (membarrier) and sets exchanges, and an origin sets plain stores again after
 * MODE_SWITCH_BACK (64) exchanges in a row. MPI_T counters: bb_rma_locked_atomic_sections
 * (sections entered by a locked exchange), bb_rma_fold_barriers (fences by folds).
 * With the argument `exchange` (BB_RMA_FOLD_BARRIER=0) every section is an exchange and no
 * fold fences; `shared`: the window is MPI_Win_allocate_shared's.
 *
 * Under MPI_Win_lock_all on rank 0's window, with a flush after each call:
 *  1. every rank adds 1 to long 0 by MPI_Fetch_and_op N times: the fetched values of all
 *     ranks are 0 .. n*N-1, each once (serial model); plain mode: no exchange, no fence;
 *     exchange mode: one exchange a call;
 *  2. every rank, ROUNDS times, folds MPI_Accumulate(MPI_SUM) of 8 longs (1..8) onto longs
 *     8..15 and adds 1 to one of them by fetch-and-op BURST times: each long ends at the sum
 *     of all (serial model); plain mode: folds fence at least once and atomics exchange;
 *  3. step 1 again on long 1: plain mode: at most 64 exchanges a rank (the switch back), no
 *     fence.
 */
#include "common.h"

#define N 3000
#define ROUNDS 200
#define BURST 100

/* A counter's value (0 where this MPI has none). */
static unsigned long long count(MPI_T_pvar_session session, MPI_T_pvar_handle h)
{
    return h ? t_pvar_read(session, h) : 0;
}

static void fetch_adds(MPI_Win win, long *fetched, MPI_Aint at)
{
    for (int i = 0; i < N; i++) {
        long one = 1;
        MPI_CHK(MPI_Fetch_and_op(&one, &fetched[i], MPI_LONG, 0, at, MPI_SUM, win));
        MPI_CHK(MPI_Win_flush(0, win));
    }
}

/* Rank 0: every value 0 .. n*N-1 fetched once among all ranks' `fetched`. */
static void check_each_value_once(const long *fetched, int n, const char *step)
{
    long *all = t_rank == 0 ? malloc(sizeof(long) * N * n) : NULL;
    MPI_CHK(MPI_Gather(fetched, N, MPI_LONG, all, N, MPI_LONG, 0, MPI_COMM_WORLD));
    if (t_rank != 0)
        return;
    char *seen = calloc((size_t)N * n, 1);
    for (long i = 0; i < (long)N * n; i++) {
        CHECK(all[i] >= 0 && all[i] < (long)N * n, "%s: fetched %ld, outside 0..%ld", step, all[i], (long)N * n - 1);
        CHECK(!seen[all[i]], "%s: value %ld fetched twice", step, all[i]);
        seen[all[i]] = 1;
    }
    free(seen);
    free(all);
}

int main(int argc, char **argv)
{
    int exchange = 0, shared = 0;
    for (int a = 1; a < argc; a++) {
        exchange |= !strcmp(argv[a], "exchange");
        shared |= !strcmp(argv[a], "shared");
    }
    if (exchange)
        setenv("BB_RMA_FOLD_BARRIER", "0", 1);
    t_init(&argc, &argv, "win_atomics_path", 1);
    int n = t_size, me = t_rank, provided;
    MPI_CHK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_T_pvar_session session;
    MPI_CHK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle locked = t_pvar_counter(session, "bb_rma_locked_atomic_sections");
    MPI_T_pvar_handle fences = t_pvar_counter(session, "bb_rma_fold_barriers");
    /* Another MPI: the serial models only. */
    int paths = t_on_billboard();
    if (paths && !(locked && fences))
        FAIL("Billboard has no MPI_T counter bb_rma_locked_atomic_sections or bb_rma_fold_barriers");

    long *mem;
    MPI_Win win;
    MPI_Aint bytes = 16 * sizeof(long);
    if (shared)
        MPI_CHK(MPI_Win_allocate_shared(bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    else
        MPI_CHK(MPI_Win_allocate(bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    memset(mem, 0, (size_t)bytes);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    long *fetched = malloc(sizeof(long) * N);

    /* 1. fetch-and-ops alone */
    unsigned long long l0 = count(session, locked), f0 = count(session, fences);
    MPI_CHK(MPI_Win_lock_all(0, win));
    fetch_adds(win, fetched, 0);
    MPI_CHK(MPI_Win_unlock_all(win));
    unsigned long long l1 = count(session, locked), f1 = count(session, fences);
    check_each_value_once(fetched, n, "fetch-and-ops alone");
    if (paths && exchange)
        CHECK(l1 - l0 == N, "exchange mode: %llu locked sections for %d fetch-and-ops", l1 - l0, N);
    else if (paths)
        CHECK(l1 - l0 == 0, "%llu of %d fetch-and-ops announced by a locked exchange, none wanted", l1 - l0, N);
    CHECK(!paths || f1 == f0, "%llu fold fences with no fold", f1 - f0);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* 2. folds among fetch-and-ops */
    long add[8];
    for (int k = 0; k < 8; k++)
        add[k] = k + 1;
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; r++) {
        MPI_CHK(MPI_Accumulate(add, 8, MPI_LONG, 0, 8, 8, MPI_LONG, MPI_SUM, win));
        MPI_CHK(MPI_Win_flush(0, win));
        for (int b = 0; b < BURST; b++) {
            long one = 1, old;
            MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 8 + (r + me) % 8, MPI_SUM, win));
            MPI_CHK(MPI_Win_flush(0, win));
        }
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    unsigned long long l2 = count(session, locked), f2 = count(session, fences);
    unsigned long long mine[2] = {l2 - l1, f2 - f1}, sum[2];
    MPI_CHK(MPI_Allreduce(mine, sum, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (paths && exchange)
        CHECK(sum[0] == (unsigned long long)n * ROUNDS * BURST && sum[1] == 0,
              "exchange mode, folds among fetch-and-ops: %llu locked sections (want %d), %llu fences (want 0)", sum[0],
              n * ROUNDS * BURST, sum[1]);
    else if (paths)
        CHECK(sum[0] > 0 && sum[1] > 0, "folds among fetch-and-ops: %llu locked sections, %llu fences (want both > 0)",
              sum[0], sum[1]);
    if (me == 0) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_CHK(MPI_Win_sync(win));
        for (int k = 0; k < 8; k++) {
            /* rank q adds BURST to long 8 + (r + q) % 8 in round r */
            long want = (long)n * ROUNDS * (k + 1);
            for (int q = 0; q < n; q++)
                for (int r = 0; r < ROUNDS; r++)
                    want += (r + q) % 8 == k ? BURST : 0;
            CHECK(mem[8 + k] == want, "long %d: %ld after folds and fetch-and-ops, want %ld", 8 + k, mem[8 + k], want);
        }
        MPI_CHK(MPI_Win_unlock(0, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* 3. fetch-and-ops alone again: back to plain announcements within 64 */
    MPI_CHK(MPI_Win_lock_all(0, win));
    fetch_adds(win, fetched, 1);
    MPI_CHK(MPI_Win_unlock_all(win));
    unsigned long long l3 = count(session, locked), f3 = count(session, fences);
    check_each_value_once(fetched, n, "fetch-and-ops after the folds");
    if (paths && exchange)
        CHECK(l3 - l2 == N, "exchange mode: %llu locked sections for %d fetch-and-ops", l3 - l2, N);
    else if (paths)
        CHECK(l3 - l2 <= 64, "%llu locked sections after the folds stopped (want at most 64)", l3 - l2);
    CHECK(!paths || f3 == f2, "%llu fold fences with no fold", f3 - f2);

    MPI_CHK(MPI_Win_free(&win));
    free(fetched);
    MPI_CHK(MPI_T_pvar_session_free(&session));
    MPI_CHK(MPI_T_finalize());
    return t_finish();
}
