/* Atomicity of one-sided updates under contention, on a window from MPI_Win_allocate (on one
 * host Billboard does these in shared memory, by the origin: CPU atomics where an element
 * fits one, a lock word elsewhere). Every rank hammers the same places of rank 0's window.
 *
 * 1. Fetch-and-add: every rank draws ROUNDS tickets from one long counter; the counter ends
 *    at n x ROUNDS and every ticket 0..n*ROUNDS-1 is drawn exactly once.
 * 2. Mixed paths on one location (MPI: accumulates to one place with one predefined type are
 *    atomic with respect to each other, whatever the operation): MPI_Accumulate(SUM),
 *    MPI_Fetch_and_op(SUM), MPI_Get_accumulate(SUM), a compare-and-swap loop, and an
 *    MPI_Accumulate of a two-element vector type, all adding to one counter; and a double
 *    summed by MPI_Accumulate (a compare-exchange loop on the CPU) alongside MPI_PROD by 1.0.
 * 3. Places no CPU atomic fits: a long at an odd address (disp_unit 1), a double complex
 *    (16 bytes) summed, and MPI_DOUBLE_INT MAXLOC; sums exact, the maximum found.
 * 4. Compare-and-swap as a mutex: each rank takes a CAS lock word at rank 0 (0 -> rank+1),
 *    increments a counter by get / flush / put (not atomic), releases it with
 *    MPI_Accumulate(MPI_REPLACE); no increment may be lost.
 * 5. Exclusive MPI_Win_lock among all ranks: non-atomic read-modify-writes (get, flush, put)
 *    of one counter inside the lock never lose an update; shared-lock readers meanwhile never
 *    see a half-done update of a two-word record (both words change together).
 * 6. Store then load (Dekker): in each round ranks 0 and 1 put the round number into their own
 *    word at rank 0, flush, and get the other's word; after MPI_Win_flush the put is complete
 *    at the target, so at least one of the two must see the other's round. A CPU that lets
 *    the get's load pass the put's store (x86 does, without a full barrier) fails this.
 */
#include "common.h"
#include <complex.h>

#define ROUNDS 300
#define LOCK_ROUNDS 300

enum {
    TICKET = 0,   /* long */
    MIXED = 8,    /* long */
    DSUM = 16,    /* double */
    CASLOCK = 24, /* long */
    CASCOUNT = 32,
    XLOCK = 40,   /* two longs: count, count again */
    ODD = 57,     /* long at an odd address */
    CPLX = 80,    /* double complex, 16-aligned */
    MAXL = 96,    /* struct { double v; int i; } */
    DEKKER = 256, /* the round rank 0 reached; rank 1's 128 bytes on (lines of their own) */
    WINBYTES = 512
};

static void lock_all_flush(MPI_Win win) { MPI_CHK(MPI_Win_flush(0, win)); }

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_atomics", 1);
    int n = t_size, me = t_rank;
    char *mem;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate(WINBYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    memset(mem, 0, WINBYTES);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* 1. tickets */
    int *drawn = calloc((size_t)n * ROUNDS, sizeof(int)), *all = calloc((size_t)n * ROUNDS, sizeof(int));
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; r++) {
        long one = 1, got = -1;
        MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, TICKET, MPI_SUM, win));
        lock_all_flush(win);
        CHECK(got >= 0 && got < (long)n * ROUNDS, "ticket %ld out of range", got);
        drawn[got]++;
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Allreduce(drawn, all, n * ROUNDS, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int k = 0; k < n * ROUNDS; k++)
        CHECK(all[k] == 1, "ticket %d drawn %d times", k, all[k]);
    free(drawn);
    free(all);

    /* 2. mixed operations on one long and one double */
    MPI_Datatype dlong;
    MPI_CHK(MPI_Type_contiguous(1, MPI_LONG, &dlong));
    MPI_CHK(MPI_Type_commit(&dlong));
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; r++) {
        long one = 1, got;
        double d = 1.0, unit = 1.0;
        switch ((r + me) % 5) {
        case 0: MPI_CHK(MPI_Accumulate(&one, 1, MPI_LONG, 0, MIXED, 1, MPI_LONG, MPI_SUM, win)); break;
        case 1: MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, MIXED, MPI_SUM, win)); break;
        case 2:
            MPI_CHK(MPI_Get_accumulate(&one, 1, MPI_LONG, &got, 1, MPI_LONG, 0, MIXED, 1, MPI_LONG, MPI_SUM, win));
            break;
        case 3: {
            long old, seen = -1;
            MPI_CHK(MPI_Fetch_and_op(NULL, &old, MPI_LONG, 0, MIXED, MPI_NO_OP, win));
            lock_all_flush(win);
            for (;;) {
                long next = old + 1;
                MPI_CHK(MPI_Compare_and_swap(&next, &old, &seen, MPI_LONG, 0, MIXED, win));
                lock_all_flush(win);
                if (seen == old)
                    break;
                old = seen;
            }
            break;
        }
        default:
            /* a derived type of one long, at origin and target */
            MPI_CHK(MPI_Accumulate(&one, 1, dlong, 0, MIXED, 1, dlong, MPI_SUM, win));
            break;
        }
        MPI_CHK(MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, DSUM, 1, MPI_DOUBLE, MPI_SUM, win));
        MPI_CHK(MPI_Accumulate(&unit, 1, MPI_DOUBLE, 0, DSUM, 1, MPI_DOUBLE, MPI_PROD, win));
        lock_all_flush(win);
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Type_free(&dlong));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        long mixed;
        double dsum;
        memcpy(&mixed, mem + MIXED, 8);
        memcpy(&dsum, mem + DSUM, 8);
        CHECK_EQ(mixed, (long)n * ROUNDS, "long counter after mixed accumulate operations");
        CHECK(dsum == (double)n * ROUNDS, "double sum %.1f, expected %d", dsum, n * ROUNDS);
    }

    /* 3. places no CPU atomic fits */
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; r++) {
        long one = 1, got;
        double complex c = 1.0 + 2.0 * I;
        struct { double v; int i; } mine = {(double)((r * 7 + me * 13) % 1000), me * ROUNDS + r};
        if (r % 2)
            MPI_CHK(MPI_Accumulate(&one, 1, MPI_LONG, 0, ODD, 1, MPI_LONG, MPI_SUM, win));
        else
            MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, ODD, MPI_SUM, win));
        MPI_CHK(MPI_Accumulate(&c, 1, MPI_C_DOUBLE_COMPLEX, 0, CPLX, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, win));
        MPI_CHK(MPI_Accumulate(&mine, 1, MPI_DOUBLE_INT, 0, MAXL, 1, MPI_DOUBLE_INT, MPI_MAXLOC, win));
        lock_all_flush(win);
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        long odd;
        double complex c;
        struct { double v; int i; } best;
        memcpy(&odd, mem + ODD, 8);
        memcpy(&c, mem + CPLX, 16);
        memcpy(&best, mem + MAXL, sizeof best);
        CHECK_EQ(odd, (long)n * ROUNDS, "unaligned long counter");
        CHECK(creal(c) == (double)n * ROUNDS && cimag(c) == 2.0 * n * ROUNDS, "complex sum %.1f%+.1fi", creal(c),
              cimag(c));
        double want = 0;
        for (int q = 0; q < n; q++)
            for (int r = 0; r < ROUNDS; r++)
                if ((double)((r * 7 + q * 13) % 1000) > want)
                    want = (double)((r * 7 + q * 13) % 1000);
        CHECK(best.v == want, "MAXLOC value %.1f, expected %.1f", best.v, want);
    }

    /* 4. compare-and-swap mutex */
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < LOCK_ROUNDS; r++) {
        long mine = me + 1, zero = 0, seen = -1, count = -1, next;
        do {
            MPI_CHK(MPI_Compare_and_swap(&mine, &zero, &seen, MPI_LONG, 0, CASLOCK, win));
            lock_all_flush(win);
        } while (seen != 0);
        MPI_CHK(MPI_Get(&count, 1, MPI_LONG, 0, CASCOUNT, 1, MPI_LONG, win));
        lock_all_flush(win);
        next = count + 1;
        MPI_CHK(MPI_Put(&next, 1, MPI_LONG, 0, CASCOUNT, 1, MPI_LONG, win));
        lock_all_flush(win);
        MPI_CHK(MPI_Accumulate(&zero, 1, MPI_LONG, 0, CASLOCK, 1, MPI_LONG, MPI_REPLACE, win));
        lock_all_flush(win);
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        long count;
        memcpy(&count, mem + CASCOUNT, 8);
        CHECK_EQ(count, (long)n * LOCK_ROUNDS, "counter incremented under a compare-and-swap lock");
    }

    /* 5. exclusive locks: writers; every third round a shared-lock reader */
    for (int r = 0; r < LOCK_ROUNDS; r++) {
        long rec[2] = {-1, -1};
        if (r % 3 == 2) {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            MPI_CHK(MPI_Get(rec, 2, MPI_LONG, 0, XLOCK, 2, MPI_LONG, win));
            MPI_CHK(MPI_Win_unlock(0, win));
            CHECK(rec[0] == rec[1], "a shared lock saw a half-done update: %ld, %ld", rec[0], rec[1]);
            continue;
        }
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        MPI_CHK(MPI_Get(rec, 1, MPI_LONG, 0, XLOCK, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(0, win));
        rec[0]++;
        MPI_CHK(MPI_Put(&rec[0], 1, MPI_LONG, 0, XLOCK, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(0, win));
        MPI_CHK(MPI_Put(&rec[0], 1, MPI_LONG, 0, XLOCK + 8, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_unlock(0, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        long rec[2];
        memcpy(rec, mem + XLOCK, 16);
        int writes = LOCK_ROUNDS - LOCK_ROUNDS / 3;
        CHECK_EQ(rec[0], (long)n * writes, "counter after exclusive read-modify-writes");
        CHECK_EQ(rec[1], rec[0], "second word of the record");
    }

    /* 6. Dekker, free-running: seen[r] is the other's word that a rank's get of round r
     * returned (words only grow). If rank 0's get of round r missed rank 1's round s
     * (seen0[r] < s), it came before that put, so rank 0's put of r came before rank 1's get of
     * s, which must then see at least r: seen1[seen0[r] + 1] >= r. */
    enum { DROUNDS = 100000 };
    long *seen = calloc(DROUNDS + 2, sizeof(long)), *theirs = calloc(DROUNDS + 2, sizeof(long));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (long r = 1; r <= DROUNDS && me < 2 && n >= 2; r++) {
        MPI_CHK(MPI_Put(&r, 1, MPI_LONG, 0, DEKKER + 128 * me, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(0, win));
        MPI_CHK(MPI_Get(&seen[r], 1, MPI_LONG, 0, DEKKER + 128 * (1 - me), 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(0, win));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    if (n >= 2) {
        if (me == 1)
            MPI_CHK(MPI_Send(seen, DROUNDS + 2, MPI_LONG, 0, 6, MPI_COMM_WORLD));
        if (me == 0) {
            MPI_CHK(MPI_Recv(theirs, DROUNDS + 2, MPI_LONG, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (long r = 1; r <= DROUNDS; r++) {
                long s = seen[r] + 1;
                CHECK(s > DROUNDS || theirs[s] >= r,
                      "rank 0's get of round %ld missed rank 1's put of round %ld, and rank 1's get of round %ld "
                      "missed rank 0's put of round %ld (both after put + flush)", r, s, s, r);
            }
        }
    }
    free(seen);
    free(theirs);

    MPI_CHK(MPI_Win_free(&win));
    return t_finish();
}
