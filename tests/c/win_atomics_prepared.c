/* MPI_Fetch_and_op and MPI_Compare_and_swap by the path a window prepares for them (Billboard:
 * win/fast_atomic.rs, each target's address, size and displacement unit resolved once, the
 * last operator and datatype kept), checked against a serial model, on windows of
 * MPI_Win_allocate (argument "allocate", the default) or MPI_Win_allocate_shared ("shared"),
 * where every rank's part has a size and displacement unit of its own (rank r: unit 8 * (r + 1)
 * bytes, size 64 units), and every epoch kind.
 *
 * 1. lock_all: every rank, on every target t in turn, at displacement me of t's part (one
 *    unit): MPI_SUM of me + 1 on a long, MPI_SUM on an int in its low half (a kept long
 *    resolution must not serve the int), compare-and-swap on the long (a failing compare, then
 *    a succeeding one) and on the int; at displacement n + me (parts of 16-byte units or more):
 *    MPI_REPLACE of a short, MPI_NO_OP on it (NULL origin), MPI_BAND on an unsigned char,
 *    MPI_MAX on a signed char with a negative origin, MPI_MIN on an unsigned int over them;
 *    each fetched value checked, then every part against the model after the epoch.
 * 2. Exclusive MPI_Win_lock of each target in turn: n fetch-and-adds on slot 0's long of t
 *    (shared by every origin): ends at n * (n + 1) / 2 x ROUNDS exactly.
 * 3. Fence and post/start/complete/wait epochs: the same fetch-and-add to slot 1 of the right
 *    neighbour; the sum checked after the epochs.
 * Fetched values are checked after a flush (MPI: the result buffer is ready then).
 * 4. Errors stay errors (on Billboard; MPICH checks none of them): a displacement one unit past a part's end is MPI_ERR_RMA_RANGE (the
 *    element would cross the end), a negative one MPI_ERR_DISP, a call with no epoch
 *    MPI_ERR_RMA_SYNC, a NULL result buffer an error (MPI_ERRORS_RETURN on the window).
 * On Billboard the MPI_T counter bb_rma_prepared_atomics counts every call of 1-3 with
 * another rank or itself as target (all of them: the path serves every epoch); elsewhere
 * only results are checked.
 */
#include "common.h"

#define ROUNDS 50
#define UNITS 64

static MPI_Aint unit_of(int r) { return 8 * (MPI_Aint)(r + 1); }

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_atomics_prepared", 1);
    int n = t_size, me = t_rank, provided;
    const char *kind = argc > 1 ? argv[1] : "allocate";
    MPI_CHK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_T_pvar_session session;
    MPI_CHK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle prepared = t_pvar_counter(session, "bb_rma_prepared_atomics");
    if (t_on_billboard() && !prepared)
        FAIL("Billboard has no MPI_T counter bb_rma_prepared_atomics");

    MPI_Aint unit = unit_of(me), bytes = UNITS * unit;
    char *mem;
    MPI_Win win;
    if (!strcmp(kind, "shared"))
        MPI_CHK(MPI_Win_allocate_shared(bytes, (int)unit, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    else
        MPI_CHK(MPI_Win_allocate(bytes, (int)unit, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    memset(mem, 0, (size_t)bytes);
    /* Origin o's places in every part: slot o (displacement o, one unit) for the long and the
     * int in its low half; slot n + o, in parts whose unit is 16 bytes or more (all but rank
     * 0's), for the short, the chars and the unsigned, all from the slot's first byte. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    unsigned long long calls = 0;

    /* 1 */
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int t = 0; t < n; t++) {
        MPI_Aint slot = me; /* displacement in t's units */
        long lx = me + 1, lold = -1;
        MPI_CHK(MPI_Fetch_and_op(&lx, &lold, MPI_LONG, t, slot, MPI_SUM, win));
        MPI_CHK(MPI_Win_flush(t, win));
        CHECK_EQ(lold, 0, "first fetch-and-add on a fresh long");
        int ix = 1000, iold = -1;
        MPI_CHK(MPI_Fetch_and_op(&ix, &iold, MPI_INT, t, slot, MPI_SUM, win));
        MPI_CHK(MPI_Win_flush(t, win));
        CHECK_EQ(iold, me + 1, "int fetch-and-add after the long's (the low half)");
        long cmp = 12345, lnew = 7, lgot = -1;
        MPI_CHK(MPI_Compare_and_swap(&lnew, &cmp, &lgot, MPI_LONG, t, slot, win));
        MPI_CHK(MPI_Win_flush(t, win));
        CHECK_EQ(lgot, me + 1 + 1000, "compare-and-swap that fails: the value before");
        cmp = me + 1 + 1000;
        MPI_CHK(MPI_Compare_and_swap(&lnew, &cmp, &lgot, MPI_LONG, t, slot, win));
        MPI_CHK(MPI_Win_flush(t, win));
        CHECK_EQ(lgot, me + 1 + 1000, "compare-and-swap that succeeds: the value before");
        int icmp = 7, inew = 9, igot = -1;
        MPI_CHK(MPI_Compare_and_swap(&inew, &icmp, &igot, MPI_INT, t, slot, win));
        MPI_CHK(MPI_Win_flush(t, win));
        CHECK_EQ(igot, 7, "int compare-and-swap after the long's");
        calls += 5;
        if (unit_of(t) >= 16) {
            MPI_Aint s2 = n + me;
            short sx = -3, sold = 1;
            MPI_CHK(MPI_Fetch_and_op(&sx, &sold, MPI_SHORT, t, s2, MPI_REPLACE, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK_EQ(sold, 0, "short replace: the value before");
            MPI_CHK(MPI_Fetch_and_op(NULL, &sold, MPI_SHORT, t, s2, MPI_NO_OP, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK_EQ(sold, -3, "short no-op fetch after the replace");
            unsigned char ux = 0x0f, uold = 1;
            MPI_CHK(MPI_Fetch_and_op(&ux, &uold, MPI_UNSIGNED_CHAR, t, s2, MPI_BAND, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK_EQ(uold, 0xfd, "unsigned char AND: the value before (low byte of -3)");
            signed char cx = -100, cold = 1;
            MPI_CHK(MPI_Fetch_and_op(&cx, &cold, MPI_SIGNED_CHAR, t, s2, MPI_MAX, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK_EQ(cold, 0x0d, "signed char MAX: the value before");
            unsigned ux4 = 5, uold4 = 1;
            MPI_CHK(MPI_Fetch_and_op(&ux4, &uold4, MPI_UNSIGNED, t, s2, MPI_MIN, win));
            MPI_CHK(MPI_Win_flush(t, win));
            /* bytes 0..3 of the slot: 0x0d, 0xff (short -3's high byte), 0, 0 */
            CHECK_EQ(uold4, 0xff0d, "unsigned MIN: the value before");
            calls += 5;
        }
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int o = 0; o < n; o++) {
        long v;
        memcpy(&v, mem + o * unit, sizeof v);
        CHECK_EQ(v, 9L | (0L << 32), "the model's long after part 1 (the int CAS wrote 9 in the low half)");
        if (unit >= 16) {
            unsigned u;
            memcpy(&u, mem + (n + o) * unit, sizeof u);
            CHECK_EQ(u, 5, "the model's unsigned after part 1 (MIN of 0xff0d and 5)");
        }
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    memset(mem, 0, (size_t)bytes);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* 2 */
    for (int k = 0; k < ROUNDS; k++)
        for (int t = 0; t < n; t++) {
            long x = me + 1, old;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            MPI_CHK(MPI_Fetch_and_op(&x, &old, MPI_LONG, t, 0, MPI_SUM, win));
            MPI_CHK(MPI_Win_unlock(t, win));
            calls++;
        }

    /* 3 */
    int right = (me + 1) % n, left = (me + n - 1) % n;
    MPI_CHK(MPI_Win_fence(0, win));
    for (int k = 0; k < ROUNDS; k++) {
        long x = 1, old;
        MPI_CHK(MPI_Fetch_and_op(&x, &old, MPI_LONG, right, 1, MPI_SUM, win));
        MPI_CHK(MPI_Win_fence(0, win));
        CHECK_EQ(old, k, "fetch-and-add in a fence epoch: the count of the epochs before");
        calls++;
    }
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    MPI_Group world, to, from;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHK(MPI_Group_incl(world, 1, &right, &to));
    MPI_CHK(MPI_Group_incl(world, 1, &left, &from));
    for (int k = 0; k < ROUNDS; k++) {
        long x = 1, old;
        MPI_CHK(MPI_Win_post(from, 0, win));
        MPI_CHK(MPI_Win_start(to, 0, win));
        MPI_CHK(MPI_Fetch_and_op(&x, &old, MPI_LONG, right, 1, MPI_SUM, win));
        MPI_CHK(MPI_Win_complete(win));
        MPI_CHK(MPI_Win_wait(win));
        CHECK_EQ(old, ROUNDS + k, "fetch-and-add in a post/start epoch");
        calls++;
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    long total;
    memcpy(&total, mem, sizeof total);
    CHECK_EQ(total, (long)ROUNDS * n * (n + 1) / 2, "exclusive-lock fetch-and-adds on slot 0");
    memcpy(&total, mem + unit, sizeof total);
    CHECK_EQ(total, 2L * ROUNDS, "fence and post/start fetch-and-adds on slot 1");

    /* 4 (MPICH does not check these) */
    if (prepared)
        CHECK_EQ(t_pvar_read(session, prepared), calls, "bb_rma_prepared_atomics: every call of parts 1-3");
    if (!t_on_billboard())
        goto done;
    MPI_CHK(MPI_Win_lock_all(0, win));
    long x = 1, old;
    int rc = MPI_Fetch_and_op(&x, &old, MPI_LONG, right, UNITS, MPI_SUM, win);
    CHECK(rc != MPI_SUCCESS, "a displacement past the part's end succeeded");
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_RMA_RANGE, "error class of a fetch-and-op past the end");
    rc = MPI_Compare_and_swap(&x, &x, &old, MPI_LONG, right, -1, win);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_DISP, "error class of a compare-and-swap at a negative displacement");
    rc = MPI_Fetch_and_op(&x, NULL, MPI_LONG, right, 0, MPI_SUM, win);
    CHECK(rc != MPI_SUCCESS, "a fetch-and-op with a NULL result buffer succeeded");
    MPI_CHK(MPI_Win_unlock_all(win));
    rc = MPI_Fetch_and_op(&x, &old, MPI_LONG, right, 0, MPI_SUM, win);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_RMA_SYNC, "error class of a fetch-and-op outside any epoch");
    if (prepared)
        CHECK_EQ(t_pvar_read(session, prepared), calls, "bb_rma_prepared_atomics: no failed call counted");
done:

    MPI_CHK(MPI_Group_free(&to));
    MPI_CHK(MPI_Group_free(&from));
    MPI_CHK(MPI_Group_free(&world));
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_T_pvar_session_free(&session));
    MPI_CHK(MPI_T_finalize());
    return t_finish();
}
