/* One window over every rank, wherever they run (tests/tests/win_hosts.rs runs it across
 * network-namespace hosts; the suite on one host): fence puts, exclusive-lock read-modify-
 * writes (mutual exclusion: no update lost), shared-lock accumulates, fetch-and-op tickets,
 * compare-and-swap with one winner, lock_all gets, every answer checked against what the
 * ranks did.
 *
 * Arguments: "create" takes the window from MPI_Win_create on malloc'd memory instead of
 * MPI_Win_allocate.
 */
#include "common.h"

#define ROUNDS 20

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_hosts", 1);
    int create = argc > 1 && !strcmp(argv[1], "create");
    int n = t_size, me = t_rank;
    /* slots[0..n): fence puts by rank; [n]: counter (exclusive RMW); [n+1]: accumulated sum;
     * [n+2]: tickets; [n+3]: compare-and-swap winner */
    MPI_Aint words = n + 4;
    long *mem;
    MPI_Win win;
    if (create) {
        mem = malloc(words * sizeof(long));
        CHECK(mem != NULL, "out of memory");
        MPI_CHK(MPI_Win_create(mem, words * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        MPI_CHK(MPI_Win_allocate(words * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int i = 0; i < words; i++)
        mem[i] = 0;
    mem[n + 3] = -1;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* Fence: every rank puts its rank + 100 into its slot of every window. */
    MPI_CHK(MPI_Win_fence(0, win));
    long mine = me + 100;
    for (int r = 0; r < n; r++)
        MPI_CHK(MPI_Put(&mine, 1, MPI_LONG, r, me, 1, MPI_LONG, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int r = 0; r < n; r++)
        CHECK_EQ(mem[r], r + 100, "fence put's slot");
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));

    /* Exclusive locks: get, add one, put, ROUNDS times on every target. */
    for (int k = 0; k < ROUNDS; k++)
        for (int i = 0; i < n; i++) {
            int r = (me + i) % n;
            long v = -1;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, r, 0, win));
            MPI_CHK(MPI_Get(&v, 1, MPI_LONG, r, n, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_flush(r, win));
            v += 1;
            MPI_CHK(MPI_Put(&v, 1, MPI_LONG, r, n, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_unlock(r, win));
        }
    /* Shared locks: accumulate my rank + 1 on every target. */
    for (int r = 0; r < n; r++) {
        long x = me + 1;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, r, 0, win));
        MPI_CHK(MPI_Accumulate(&x, 1, MPI_LONG, r, n + 1, 1, MPI_LONG, MPI_SUM, win));
        MPI_CHK(MPI_Win_unlock(r, win));
    }
    /* Fetch-and-op tickets from the last rank, and one compare-and-swap race there. */
    long one = 1, ticket = -1, nobody = -1, was = -2, me_l = me;
    int last = n - 1;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, last, 0, win));
    MPI_CHK(MPI_Fetch_and_op(&one, &ticket, MPI_LONG, last, n + 2, MPI_SUM, win));
    MPI_CHK(MPI_Compare_and_swap(&me_l, &nobody, &was, MPI_LONG, last, n + 3, win));
    MPI_CHK(MPI_Win_unlock(last, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    CHECK_EQ(mem[n], (long)ROUNDS * n, "counter after exclusive read-modify-writes");
    CHECK_EQ(mem[n + 1], (long)n * (n + 1) / 2, "accumulated sum");
    long *all = malloc(2 * n * sizeof(long));
    long pair[2] = {ticket, was};
    MPI_CHK(MPI_Allgather(pair, 2, MPI_LONG, all, 2, MPI_LONG, MPI_COMM_WORLD));
    int winners = 0;
    for (int r = 0; r < n; r++) {
        CHECK(all[2 * r] >= 0 && all[2 * r] < n, "rank %d's ticket %ld of %d", r, all[2 * r], n);
        for (int q = r + 1; q < n; q++)
            CHECK(all[2 * r] != all[2 * q], "ranks %d and %d drew ticket %ld", r, q, all[2 * r]);
        winners += all[2 * r + 1] == -1;
    }
    CHECK_EQ(winners, 1, "compare-and-swap winners");

    /* lock_all: every rank reads every window's counters and the winner. */
    long got[4];
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < n; r++) {
        MPI_CHK(MPI_Get(got, 4, MPI_LONG, r, n, 4, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(r, win));
        CHECK_EQ(got[0], (long)ROUNDS * n, "counter read by lock_all");
        CHECK_EQ(got[1], (long)n * (n + 1) / 2, "sum read by lock_all");
        CHECK_EQ(got[2], r == last ? n : 0, "tickets drawn");
        if (r == last) {
            CHECK(got[3] >= 0 && got[3] < n && all[2 * got[3] + 1] == -1, "the winner %ld saw -1", got[3]);
        } else {
            CHECK_EQ(got[3], -1, "an untouched compare-and-swap word");
        }
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    free(all);
    MPI_CHK(MPI_Win_free(&win));
    if (create)
        free(mem);
    return t_finish();
}
