/* Windows on the program's own memory (MPI_Win_create) within one host: put and get of 8 B to
 * 4 MiB under fence and under lock/unlock, derived datatypes at either end (a vector of more
 * blocks than one process_vm_writev takes, an indexed type), accumulates beside them (fence,
 * post/start/complete/wait, lock_all with fetch-and-op), every answer checked byte by byte.
 *
 * Arguments (other libraries ignore the variables):
 *   busy      rank 0 computes without calling MPI while the others lock its window, put, get
 *             and flush, and fails unless they all get through within DEADLINE seconds
 *             (Billboard copies straight into a created window on one host; a library whose
 *             target must enter MPI stalls them). Without it rank 0 computes for a moment,
 *             then serves from a barrier.
 *   nomap     for Billboard: BB_RMA_CREATE_MAP=0, the window's pages stay private to their
 *             process (by default every member maps them, win/remap.rs): put and get by
 *             process_vm_writev/readv, accumulates through the target's handler.
 *   fallback  for Billboard: as nomap, and BB_RMA_SINGLE_COPY=0, put and get through the
 *             target's handler as where the kernel refuses process_vm_writev (same answers).
 *   handler   for Billboard: BB_RMA_SHM=0, everything through the target's handler.
 */
#include "common.h"

#include <stdint.h>

#define MAXB (4 << 20)
#define DEADLINE 20.0

static unsigned char pat(int origin, int size, size_t i)
{
    return (unsigned char)(origin * 31 + size * 7 + i * 13 + (i >> 8));
}

static double now(void)
{
    return MPI_Wtime();
}

/* Rank 0 computes without MPI until every other rank set its done word (or `patience`
 * seconds pass: then `strict` fails). */
static void compute_until_done(volatile long *done, int n, double patience, int strict)
{
    double t0 = now();
    volatile double x = 1.0;
    for (;;) {
        for (int k = 0; k < 10000; k++)
            x = x * 1.0000001 + 1e-9;
        int got = 0;
        for (int r = 1; r < n; r++)
            got += __atomic_load_n(&done[r], __ATOMIC_ACQUIRE) != 0;
        if (got == n - 1)
            return;
        if (now() - t0 > patience) {
            if (strict)
                FAIL("after %.0f s of computing, %d of %d origins got through (the target's window stalled them)",
                     patience, got, n - 1);
            return;
        }
    }
}

int main(int argc, char **argv)
{
    int busy = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "busy"))
            busy = 1;
        else if (!strcmp(argv[i], "fallback")) {
            /* Pages not shared (win/remap.rs), and no single copy either. */
            setenv("BB_RMA_CREATE_MAP", "0", 1);
            setenv("BB_RMA_SINGLE_COPY", "0", 1);
        } else if (!strcmp(argv[i], "nomap"))
            setenv("BB_RMA_CREATE_MAP", "0", 1);
        else if (!strcmp(argv[i], "handler"))
            setenv("BB_RMA_SHM", "0", 1);
    }
    t_init(&argc, &argv, "win_create_copy", 1);
    int n = t_size, me = t_rank, right = (me + 1) % n, left = (me + n - 1) % n;
    /* The window: MAXB bytes of data, then one done word per rank. */
    size_t winbytes = MAXB + 64 * sizeof(long);
    unsigned char *mem = malloc(winbytes);
    unsigned char *buf = malloc(MAXB), *got = malloc(MAXB);
    CHECK(mem && buf && got, "out of memory");
    memset(mem, 0, winbytes);
    volatile long *done = (volatile long *)(mem + MAXB);
    MPI_Win win;
    MPI_CHK(MPI_Win_create(mem, (MPI_Aint)winbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    static const int sizes[] = {8, 64, 4096, 65536, 1 << 20, MAXB};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);

    /* Fence: put to the right neighbour, then get it back from there. */
    MPI_CHK(MPI_Win_fence(0, win));
    for (int k = 0; k < nsizes; k++) {
        int s = sizes[k];
        for (int i = 0; i < s; i++)
            buf[i] = pat(me, s, i);
        MPI_CHK(MPI_Put(buf, s, MPI_BYTE, right, 0, s, MPI_BYTE, win));
        MPI_CHK(MPI_Win_fence(0, win));
        for (int i = 0; i < s; i++)
            if (mem[i] != pat(left, s, i))
                FAIL("fence put of %d bytes from rank %d: byte %d is %d, expected %d", s, left, i, mem[i],
                     pat(left, s, i));
        memset(got, 0, s);
        MPI_CHK(MPI_Get(got, s, MPI_BYTE, right, 0, s, MPI_BYTE, win));
        MPI_CHK(MPI_Win_fence(0, win));
        for (int i = 0; i < s; i++)
            if (got[i] != pat(me, s, i))
                FAIL("fence get of %d bytes from rank %d: byte %d is %d, expected %d", s, right, i, got[i],
                     pat(me, s, i));
    }

    /* Derived datatypes: a vector of 200000 single ints (200 calls' worth of pieces) at the
     * target, from contiguous ints; then an indexed type at the origin, gathered from
     * contiguous target ints. */
    int *w = (int *)mem, *ib = (int *)buf, *ig = (int *)got;
    const int nv = 200000;
    for (int i = 0; i < 2 * nv; i++)
        w[i] = -1;
    for (int i = 0; i < nv; i++)
        ib[i] = me * 1000000 + i;
    MPI_Datatype vec, idx;
    MPI_CHK(MPI_Type_vector(nv, 1, 2, MPI_INT, &vec));
    MPI_CHK(MPI_Type_commit(&vec));
    int lens[4] = {1, 3, 5, 7}, disps[4] = {0, 2, 10, 30};
    MPI_CHK(MPI_Type_indexed(4, lens, disps, MPI_INT, &idx));
    MPI_CHK(MPI_Type_commit(&idx));
    MPI_CHK(MPI_Win_fence(0, win));
    MPI_CHK(MPI_Put(ib, nv, MPI_INT, right, 0, 1, vec, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < 2 * nv; i++) {
        int want = i % 2 ? -1 : left * 1000000 + i / 2;
        if (w[i] != want)
            FAIL("vector put from rank %d: int %d is %d, expected %d", left, i, w[i], want);
    }
    for (int i = 0; i < 80; i++)
        ig[i] = -7;
    /* 16 ints from the right neighbour's window land at the indexed places, twice over. */
    MPI_CHK(MPI_Get(ig, 2, idx, right, 0, 32, MPI_INT, win));
    MPI_CHK(MPI_Win_fence(0, win));
    {
        /* the extent of idx is disps[3] + lens[3] = 37 ints */
        int k = 0;
        for (int c = 0; c < 2; c++)
            for (int b = 0; b < 4; b++)
                for (int j = 0; j < lens[b]; j++, k++) {
                    int want = k % 2 ? -1 : me * 1000000 + k / 2;
                    int at = c * 37 + disps[b] + j;
                    if (ig[at] != want)
                        FAIL("indexed get from rank %d: int %d (element %d) is %d, expected %d", right, at, k, ig[at],
                             want);
                }
    }

    /* Accumulates beside puts and gets in fence epochs, and post/start/complete/wait. */
    long *lw = (long *)mem;
    lw[0] = 0;
    lw[1] = 0;
    MPI_CHK(MPI_Win_fence(0, win));
    long one = 1, mine = me + 1;
    for (int r = 0; r < n; r++)
        MPI_CHK(MPI_Accumulate(&one, 1, MPI_LONG, r, 0, 1, MPI_LONG, MPI_SUM, win));
    MPI_CHK(MPI_Put(&mine, 1, MPI_LONG, right, sizeof(long), 1, MPI_LONG, win));
    MPI_CHK(MPI_Win_fence(0, win));
    CHECK_EQ(lw[0], n, "fence accumulates");
    CHECK_EQ(lw[1], left + 1, "put beside accumulates");
    MPI_Group world, nbrs;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int pair[2] = {left, right};
    MPI_CHK(MPI_Group_incl(world, n > 2 ? 2 : 1, pair, &nbrs));
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    MPI_CHK(MPI_Win_post(nbrs, 0, win));
    MPI_CHK(MPI_Win_start(nbrs, 0, win));
    MPI_CHK(MPI_Accumulate(&mine, 1, MPI_LONG, right, 0, 1, MPI_LONG, MPI_SUM, win));
    long two = 2 * mine;
    MPI_CHK(MPI_Put(&two, 1, MPI_LONG, right, 2 * sizeof(long), 1, MPI_LONG, win));
    MPI_CHK(MPI_Win_complete(win));
    MPI_CHK(MPI_Win_wait(win));
    CHECK_EQ(lw[0], n + left + 1, "accumulate in post/start/complete/wait");
    CHECK_EQ(lw[2], 2 * (left + 1), "put in post/start/complete/wait");
    MPI_CHK(MPI_Group_free(&nbrs));
    MPI_CHK(MPI_Group_free(&world));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* Passive target while rank 0 computes: every other rank, in turn of sizes, locks rank
     * 0's window exclusively, puts its data, gets it back and checks, then sets its done
     * word. Each origin has its own slice of MAXB / (n - 1) bytes. */
    if (n > 1) {
        size_t slice = (MAXB / (n - 1)) & ~(size_t)63;
        if (me == 0) {
            compute_until_done(done, n, busy ? DEADLINE : 1.0, busy);
        } else {
            size_t at = (me - 1) * slice;
            for (int k = 0; k < nsizes; k++) {
                int s = sizes[k] < (int)slice ? sizes[k] : (int)slice;
                for (int i = 0; i < s; i++)
                    buf[i] = pat(me, s, i);
                MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
                MPI_CHK(MPI_Put(buf, s, MPI_BYTE, 0, at, s, MPI_BYTE, win));
                MPI_CHK(MPI_Win_flush(0, win));
                memset(got, 0, s);
                MPI_CHK(MPI_Get(got, s, MPI_BYTE, 0, at, s, MPI_BYTE, win));
                MPI_CHK(MPI_Win_unlock(0, win));
                for (int i = 0; i < s; i++)
                    if (got[i] != pat(me, s, i))
                        FAIL("lock put/get of %d bytes at rank 0: byte %d is %d, expected %d", s, i, got[i],
                             pat(me, s, i));
            }
            /* A vector put under a shared lock, read back contiguously. */
            int m = (int)(slice / sizeof(int) / 2);
            for (int i = 0; i < m; i++)
                ib[i] = -(me * 100000 + i);
            MPI_Datatype v2;
            MPI_CHK(MPI_Type_vector(m, 1, 2, MPI_INT, &v2));
            MPI_CHK(MPI_Type_commit(&v2));
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            MPI_CHK(MPI_Put(ib, m, MPI_INT, 0, at, 1, v2, win));
            MPI_CHK(MPI_Win_flush(0, win));
            MPI_CHK(MPI_Get(ig, 2 * m - 1, MPI_INT, 0, at, 2 * m - 1, MPI_INT, win));
            MPI_CHK(MPI_Win_unlock(0, win));
            MPI_CHK(MPI_Type_free(&v2));
            for (int i = 0; i < m; i++)
                if (ig[2 * i] != -(me * 100000 + i))
                    FAIL("vector put under a shared lock: int %d is %d, expected %d", 2 * i, ig[2 * i],
                         -(me * 100000 + i));
            long d = 1;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            MPI_CHK(MPI_Put(&d, 1, MPI_LONG, 0, MAXB + me * sizeof(long), 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_unlock(0, win));
        }
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* lock_all: a fetch-and-add ticket from rank 0's counter, and a get of the neighbour's
     * done words (set at rank 0 only); the tickets drawn are all different. */
    lw[3] = 0;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock_all(0, win));
    long ticket = -1;
    MPI_CHK(MPI_Fetch_and_op(&one, &ticket, MPI_LONG, 0, 3 * sizeof(long), MPI_SUM, win));
    MPI_CHK(MPI_Win_flush(0, win));
    long dw[2] = {-1, -1};
    MPI_CHK(MPI_Get(dw, 2, MPI_LONG, right, MAXB, 2, MPI_LONG, win));
    MPI_CHK(MPI_Win_unlock_all(win));
    CHECK(ticket >= 0 && ticket < n, "ticket %ld of %d", ticket, n);
    CHECK_EQ(dw[0], 0, "done word 0 of the right neighbour");
    CHECK_EQ(dw[1], right == 0 && n > 1 ? 1 : 0, "done word 1 of the right neighbour (set at rank 0 only)");
    long *tickets = malloc(n * sizeof(long));
    MPI_CHK(MPI_Allgather(&ticket, 1, MPI_LONG, tickets, 1, MPI_LONG, MPI_COMM_WORLD));
    for (int r = 0; r < n; r++)
        for (int q = r + 1; q < n; q++)
            CHECK(tickets[r] != tickets[q], "ranks %d and %d drew the same ticket %ld", r, q, tickets[r]);
    free(tickets);

    MPI_CHK(MPI_Type_free(&vec));
    MPI_CHK(MPI_Type_free(&idx));
    MPI_CHK(MPI_Win_free(&win));
    free(mem);
    free(buf);
    free(got);
    return t_finish();
}
