/* MPI_Win_create windows whose pages hold other data too, as malloc'd memory usually does:
 * Billboard moves each window's pages onto a memory file every member of one host maps
 * (crates/mpi/src/win/remap.rs), including the first and last page, which here also hold
 * guard bytes of the program's; and keeps a window that shares a page with another live one
 * (B below, right after A in the same block) or lies on the main stack (C) on its private
 * path. Every rank, under MPI_Win_lock_all on all three windows:
 *   - MPI_Fetch_and_op(MPI_SUM) of 1 on the first, middle and last long of each window of
 *     every rank, ROUNDS times; MPI_Compare_and_swap chains on a word of A;
 *   - MPI_Put of its rank into its own slot of every rank's windows;
 * then checks the counters (exact sums), the slots, the compare-and-swap chain, and that the
 * guard bytes around the windows kept their pattern. After MPI_Win_free the process must map
 * no window file any more (/proc/self/maps: the pages are private again), the windows' bytes
 * and the guards stay as they were, and the block is freed and reused by malloc.
 * With argument `thread`, another thread of the program runs (and stores next to the windows)
 * while they are created: no window may be moved then (a store of that thread to an edge page
 * between the copy and the move would be lost), and everything above must hold the same.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

static atomic_int stop;
static volatile long neighbour_stores;

/* A thread of the program, storing to memory of its own beside the windows' pages. */
static void *neighbour(void *arg)
{
    volatile long *beside = arg;
    while (!atomic_load(&stop)) {
        *beside += 1;
        neighbour_stores += 1;
    }
    return NULL;
}

#define ROUNDS 200
#define WLONGS 700 /* longs per window: 5600 bytes, over two pages */
#define GUARD 40

static int maps_window_file(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        found |= strstr(line, "memfd:bb-win") != NULL; /* remap.rs names its files so */
    fclose(f);
    return found;
}

static void check_guard(const unsigned char *g, int len, const char *where)
{
    for (int i = 0; i < len; i++)
        if (g[i] != (unsigned char)(0xA5 ^ i))
            FAIL("guard byte %d %s: %#x, expected %#x", i, where, g[i], 0xA5 ^ i);
}

static void fill_guard(unsigned char *g, int len)
{
    for (int i = 0; i < len; i++)
        g[i] = (unsigned char)(0xA5 ^ i);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_create_pages", 1);
    int n = t_size, me = t_rank;
    int threaded = argc > 1 && strcmp(argv[1], "thread") == 0;
    size_t wbytes = WLONGS * sizeof(long);
    /* guard | A | guard | B | guard, A and B sharing a page */
    unsigned char *block = malloc(3 * GUARD + 2 * wbytes + 64);
    unsigned char *g0 = block, *g1, *g2;
    long *a = (long *)(((uintptr_t)(block + GUARD) + 7) & ~(uintptr_t)7);
    g1 = (unsigned char *)(a + WLONGS);
    long *b = (long *)(g1 + GUARD);
    g2 = (unsigned char *)(b + WLONGS);
    long c[WLONGS]; /* on the main stack */
    fill_guard(g0, GUARD);
    fill_guard(g1, GUARD);
    fill_guard(g2, GUARD);
    memset(a, 0, wbytes);
    memset(b, 0, wbytes);
    memset(c, 0, sizeof c);
    long *mem[3] = {a, b, c};
    MPI_Win win[3];
    pthread_t other;
    long *beside = malloc(sizeof(long));
    *beside = 0;
    if (threaded)
        CHECK(pthread_create(&other, NULL, neighbour, beside) == 0, "pthread_create");
    for (int w = 0; w < 3; w++) {
        MPI_CHK(MPI_Win_create(mem[w], (MPI_Aint)wbytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win[w]));
        MPI_CHK(MPI_Win_set_errhandler(win[w], MPI_ERRORS_RETURN));
    }
    if (threaded) {
        atomic_store(&stop, 1);
        pthread_join(other, NULL);
        CHECK_EQ(*beside, (long)neighbour_stores, "the other thread's stores beside the windows");
        if (maps_window_file())
            FAIL("a window's pages were moved while another thread of the program ran");
    }
    free(beside);
    /* Slots: longs 1..n (rank r puts r + 1 into slot r + 1); counters: 0, WLONGS / 2, WLONGS - 1;
     * the compare-and-swap chain: long 100 of A. */
    const int at[3] = {0, WLONGS / 2, WLONGS - 1};
    for (int w = 0; w < 3; w++)
        MPI_CHK(MPI_Win_lock_all(0, win[w]));
    long one = 1, got;
    for (int k = 0; k < ROUNDS; k++) {
        for (int t = 0; t < n; t++) {
            for (int w = 0; w < 3; w++)
                MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, t, at[k % 3], MPI_SUM, win[w]));
            /* Add 1 to A's long 100 on t by compare-and-swap until it takes. */
            long old = 0, seen;
            for (;;) {
                long next = old + 1;
                MPI_CHK(MPI_Compare_and_swap(&next, &old, &seen, MPI_LONG, t, 100, win[0]));
                MPI_CHK(MPI_Win_flush(t, win[0]));
                if (seen == old)
                    break;
                old = seen;
            }
        }
    }
    long mine = me + 1;
    for (int t = 0; t < n; t++)
        for (int w = 0; w < 3; w++)
            MPI_CHK(MPI_Put(&mine, 1, MPI_LONG, t, 1 + me, 1, MPI_LONG, win[w]));
    for (int w = 0; w < 3; w++)
        MPI_CHK(MPI_Win_unlock_all(win[w]));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int w = 0; w < 3; w++) {
        for (int i = 0; i < 3; i++) {
            long want = (long)n * (ROUNDS / 3 + (i < ROUNDS % 3));
            if (mem[w][at[i]] != want)
                FAIL("window %c, counter at %d: %ld, expected %ld", 'A' + w, at[i], mem[w][at[i]], want);
        }
        for (int r = 0; r < n; r++)
            if (mem[w][1 + r] != r + 1)
                FAIL("window %c, slot of rank %d: %ld", 'A' + w, r, mem[w][1 + r]);
    }
    CHECK_EQ(a[100], (long)n * ROUNDS, "compare-and-swap chain on A");
    check_guard(g0, GUARD, "before A");
    check_guard(g1, GUARD, "between A and B");
    check_guard(g2, GUARD, "after B");
    long before[3] = {a[at[1]], b[at[1]], c[at[1]]};
    for (int w = 0; w < 3; w++)
        MPI_CHK(MPI_Win_free(&win[w]));
    if (maps_window_file())
        FAIL("a window's pages are still mapped from a file after MPI_Win_free");
    if (a[at[1]] != before[0] || b[at[1]] != before[1] || c[at[1]] != before[2] || a[100] != (long)n * ROUNDS)
        FAIL("window bytes changed by MPI_Win_free");
    check_guard(g0, GUARD, "before A, after MPI_Win_free");
    check_guard(g2, GUARD, "after B, after MPI_Win_free");
    /* The block is plain memory again: written, freed, and its space handed out anew. */
    memset(block, 0x5A, 3 * GUARD + 2 * wbytes + 64);
    free(block);
    void *again = calloc(1, 2 * wbytes);
    for (size_t i = 0; i < 2 * wbytes; i++)
        if (((unsigned char *)again)[i] != 0)
            FAIL("calloc after MPI_Win_free returned a non-zero byte at %zu", i);
    free(again);
    return t_finish();
}
