/* One-sided communication with MPI_Win_fence, contents checked after every epoch: MPI_Put and
 * MPI_Get around a ring (windows from MPI_Win_create with displacement unit 4 and from
 * MPI_Win_allocate with unit 1), MPI_Accumulate from every rank with MPI_SUM, MPI_MAX,
 * MPI_BXOR, MPI_REPLACE, and MPI_MINLOC / MPI_MAXLOC on MPI_DOUBLE_INT and MPI_SHORT_INT (a
 * pair with a gap), derived datatypes (strided vectors) on the origin side, the target side
 * and both, MPI_Get_accumulate, MPI_Fetch_and_op (a shared counter, and MPI_NO_OP),
 * MPI_Compare_and_swap, operations on the own window and on MPI_PROC_NULL, several epochs,
 * MPI_MODE_NOPRECEDE / NOSUCCEED; operations that move no data (count 0, or a datatype of size 0:
 * accepted and harmless, the target's fence included, as in MPICH) and MPI_SUM on MPI_BYTE (MPICH
 * adds bytes as unsigned chars). Any N >= 1. */
#include "common.h"

enum { N = 64 };

static int expect_int(const int *got, int want, const char *what, int i)
{
    if (*got != want)
        FAIL("%s[%d]: expected %d, got %d", what, i, want, *got);
    return 0;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_fence", 1);
    const int me = t_rank, n = t_size;
    const int right = (me + 1) % n, left = (me + n - 1) % n;

    /* ---- Put and Get around the ring, on a window of ints made by MPI_Win_create (unit 4). */
    int *mem = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++)
        mem[i] = -1;
    MPI_Win win;
    MPI_CHK(MPI_Win_create(mem, sizeof(int) * N, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    int src[N];
    for (int i = 0; i < N; i++)
        src[i] = me * 1000 + i;
    /* Elements 8..23 of the right neighbour's window get my 16 values. */
    MPI_CHK(MPI_Put(src, 16, MPI_INT, right, 8, 16, MPI_INT, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++)
        expect_int(&mem[i], (i >= 8 && i < 24) ? left * 1000 + (i - 8) : -1, "after Put", i);
    /* Read back what the left neighbour received from me (mem is stable in this epoch). */
    int back[16];
    memset(back, 0, sizeof back);
    MPI_CHK(MPI_Get(back, 16, MPI_INT, right, 8, 16, MPI_INT, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < 16; i++)
        expect_int(&back[i], me * 1000 + i, "Get of my own Put", i);

    /* ---- Derived datatypes: origin every other int (vector), target contiguous; then target
     * strided (vector of 2-int blocks, stride 5), origin contiguous. */
    MPI_Datatype every2, blocks;
    MPI_CHK(MPI_Type_vector(8, 1, 2, MPI_INT, &every2));
    MPI_CHK(MPI_Type_commit(&every2));
    MPI_CHK(MPI_Type_vector(4, 2, 5, MPI_INT, &blocks));
    MPI_CHK(MPI_Type_commit(&blocks));
    for (int i = 0; i < N; i++)
        mem[i] = -1;
    MPI_CHK(MPI_Win_fence(0, win));
    MPI_CHK(MPI_Put(src, 1, every2, right, 0, 8, MPI_INT, win));
    int eight[8];
    for (int i = 0; i < 8; i++)
        eight[i] = me * 100 + i;
    MPI_CHK(MPI_Put(eight, 8, MPI_INT, right, 32, 1, blocks, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < 8; i++)
        expect_int(&mem[i], left * 1000 + 2 * i, "Put from a vector", i);
    for (int b = 0, k = 0; b < 4; b++)
        for (int j = 0; j < 2; j++, k++)
            expect_int(&mem[32 + 5 * b + j], left * 100 + k, "Put into a strided target", 32 + 5 * b + j);
    expect_int(&mem[34], -1, "gap of the strided target", 34);
    /* Get with a derived type on both sides: the strided blocks back into every other int. */
    int spread[16];
    for (int i = 0; i < 16; i++)
        spread[i] = -7;
    MPI_CHK(MPI_Get(spread, 1, every2, right, 32, 1, blocks, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < 16; i++)
        expect_int(&spread[i], i % 2 ? -7 : me * 100 + i / 2, "Get between derived types", i);

    /* ---- Accumulate: every rank adds into every window; MAX, BXOR, REPLACE. */
    for (int i = 0; i < N; i++)
        mem[i] = i;
    MPI_CHK(MPI_Win_fence(0, win));
    int ones[N];
    for (int i = 0; i < N; i++)
        ones[i] = me + 1;
    for (int t = 0; t < n; t++) {
        MPI_CHK(MPI_Accumulate(ones, 10, MPI_INT, t, 0, 10, MPI_INT, MPI_SUM, win));
        MPI_CHK(MPI_Accumulate(ones, 1, MPI_INT, t, 10, 1, MPI_INT, MPI_MAX, win));
        MPI_CHK(MPI_Accumulate(ones, 1, MPI_INT, t, 11, 1, MPI_INT, MPI_BXOR, win));
    }
    /* A strided accumulate of the right neighbour's ints 20, 22, ... 34. */
    MPI_CHK(MPI_Accumulate(ones, 8, MPI_INT, right, 20, 1, every2, MPI_SUM, win));
    MPI_CHK(MPI_Win_fence(0, win));
    int total = n * (n + 1) / 2, xor = 0;
    for (int r = 0; r < n; r++)
        xor ^= r + 1;
    for (int i = 0; i < 10; i++)
        expect_int(&mem[i], i + total, "Accumulate MPI_SUM", i);
    expect_int(&mem[10], n > 10 ? n : 10, "Accumulate MPI_MAX", 10);
    expect_int(&mem[11], 11 ^ xor, "Accumulate MPI_BXOR", 11);
    for (int i = 20; i < 36; i++)
        expect_int(&mem[i], i % 2 ? i : i + left + 1, "strided Accumulate", i);
    /* MPI_REPLACE from the left neighbour only. */
    MPI_CHK(MPI_Accumulate(src, 4, MPI_INT, right, 40, 4, MPI_INT, MPI_REPLACE, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < 4; i++)
        expect_int(&mem[40 + i], left * 1000 + i, "Accumulate MPI_REPLACE", 40 + i);

    /* ---- Get_accumulate, Fetch_and_op (a counter on rank 0), Compare_and_swap. */
    for (int i = 0; i < N; i++)
        mem[i] = 0;
    MPI_CHK(MPI_Win_fence(0, win));
    int one = 1, ticket = -1;
    MPI_CHK(MPI_Fetch_and_op(&one, &ticket, MPI_INT, 0, 0, MPI_SUM, win));
    int before[2] = {-1, -1}, add[2] = {me, me};
    MPI_CHK(MPI_Get_accumulate(add, 2, MPI_INT, before, 2, MPI_INT, right, 4, 2, MPI_INT, MPI_SUM, win));
    MPI_CHK(MPI_Win_fence(0, win));
    CHECK(ticket >= 0 && ticket < n, "Fetch_and_op ticket %d, expected 0..%d", ticket, n - 1);
    expect_int(&before[0], 0, "Get_accumulate old value", 0);
    expect_int(&mem[4], left, "Get_accumulate result", 4);
    if (me == 0)
        expect_int(&mem[0], n, "the counter", 0);
    /* Every rank got a different ticket: their sum is 0 + 1 + ... + n-1. */
    int sum = 0;
    MPI_CHK(MPI_Allreduce(&ticket, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(sum, n * (n - 1) / 2, "sum of Fetch_and_op tickets");
    /* MPI_NO_OP fetches without changing. */
    int seen = -1;
    MPI_CHK(MPI_Fetch_and_op(NULL, &seen, MPI_INT, right, 4, MPI_NO_OP, win));
    MPI_CHK(MPI_Win_fence(0, win));
    expect_int(&seen, me, "Fetch_and_op MPI_NO_OP", 4);
    expect_int(&mem[4], left, "unchanged by MPI_NO_OP", 4);
    /* Compare_and_swap: the left neighbour's value (left) is replaced only by the right guess.
     * The barriers keep the RMA of the next epoch off data still being checked locally (that
     * would be a conflicting access; MPICH applies operations as they arrive). */
    int mine = 500 + me, guess = me, old = -1, wrong = -99, old2 = -1;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Compare_and_swap(&mine, &guess, &old, MPI_INT, right, 4, win));
    MPI_CHK(MPI_Win_fence(0, win));
    expect_int(&old, me, "Compare_and_swap old value", 4);
    expect_int(&mem[4], 500 + left, "Compare_and_swap swapped", 4);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Compare_and_swap(&mine, &wrong, &old2, MPI_INT, right, 4, win));
    MPI_CHK(MPI_Win_fence(0, win));
    expect_int(&old2, 500 + me, "Compare_and_swap old value, no match", 4);
    expect_int(&mem[4], 500 + left, "Compare_and_swap without a match", 4);

    /* ---- The own window, MPI_PROC_NULL, an epoch closed by MPI_MODE_NOSUCCEED. */
    int v = 4242;
    MPI_CHK(MPI_Put(&v, 1, MPI_INT, me, 63, 1, MPI_INT, win));
    MPI_CHK(MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    expect_int(&mem[63], 4242, "Put to self", 63);
    MPI_CHK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free did not set MPI_WIN_NULL");
    free(mem);

    /* ---- MPI_Win_allocate with unit 1: doubles and MINLOC pairs. */
    double *dmem = NULL;
    MPI_Win dwin;
    struct short_int {
        short v;
        int i;
    } sloc;
    MPI_Aint bytes = sizeof(double) * 8 + 2 * sizeof(struct { double v; int i; }) + sizeof sloc;
    MPI_CHK(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &dmem, &dwin));
    CHECK(dmem != NULL, "MPI_Win_allocate gave no memory");
    struct {
        double v;
        int i;
    } *pairs = (void *)(dmem + 8), minloc[2];
    for (int i = 0; i < 8; i++)
        dmem[i] = 0.5;
    pairs[0].v = 1e9;
    pairs[0].i = -1;
    pairs[1].v = -1e9;
    pairs[1].i = -1;
    /* A { short; int } pair after them: MAXLOC on a type with a gap inside. */
    struct short_int *spair = (void *)(pairs + 2);
    spair->v = -1;
    spair->i = -1;
    MPI_CHK(MPI_Win_fence(0, dwin));
    double d[8];
    for (int i = 0; i < 8; i++)
        d[i] = me + i * 0.25;
    MPI_CHK(MPI_Accumulate(d, 8, MPI_DOUBLE, 0, 0, 8, MPI_DOUBLE, MPI_SUM, dwin));
    minloc[0].v = 10.0 - me % 3;
    minloc[0].i = me;
    minloc[1].v = 10.0 - me % 3;
    minloc[1].i = me;
    MPI_CHK(MPI_Accumulate(&minloc[0], 1, MPI_DOUBLE_INT, 0, sizeof(double) * 8, 1, MPI_DOUBLE_INT, MPI_MINLOC, dwin));
    MPI_CHK(MPI_Accumulate(&minloc[1], 1, MPI_DOUBLE_INT, 0, sizeof(double) * 8 + sizeof minloc[0], 1, MPI_DOUBLE_INT,
                           MPI_MAXLOC, dwin));
    sloc.v = (short)(me % 2 ? 7 : 3);
    sloc.i = 100 + me;
    MPI_CHK(MPI_Accumulate(&sloc, 1, MPI_SHORT_INT, 0, (char *)spair - (char *)dmem, 1, MPI_SHORT_INT, MPI_MAXLOC,
                           dwin));
    MPI_CHK(MPI_Win_fence(0, dwin));
    if (me == 0) {
        for (int i = 0; i < 8; i++) {
            double want = 0.5 + n * (n - 1) / 2.0 + n * i * 0.25;
            CHECK(dmem[i] == want, "double Accumulate [%d]: expected %g, got %g", i, want, dmem[i]);
        }
        /* MINLOC: the smallest value is 10 - 2 (ranks 2, 5, ...), lowest index first. */
        double lo = n > 2 ? 8.0 : 10.0 - (n - 1);
        int lo_at = n > 2 ? 2 : n - 1;
        CHECK(pairs[0].v == lo && pairs[0].i == lo_at, "MINLOC: (%g, %d), expected (%g, %d)", pairs[0].v, pairs[0].i,
              lo, lo_at);
        CHECK(pairs[1].v == 10.0 && pairs[1].i == 0, "MAXLOC: (%g, %d), expected (10, 0)", pairs[1].v, pairs[1].i);
        short smax = n > 1 ? 7 : 3;
        int sat = n > 1 ? 101 : 100;
        CHECK(spair->v == smax && spair->i == sat, "MAXLOC on MPI_SHORT_INT: (%d, %d), expected (%d, %d)", spair->v,
              spair->i, smax, sat);
    }
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, dwin));
    MPI_CHK(MPI_Win_free(&dwin));

    /* Operations that move no data, from every rank to its right neighbour. */
    {
        int zmem[4] = {5, 5, 5, 5}, res[4] = {-1, -1, -1, -1}, one[4] = {1, 1, 1, 1};
        unsigned char add = 3;
        MPI_Win zwin;
        MPI_CHK(MPI_Win_create(zmem, sizeof zmem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &zwin));
        MPI_CHK(MPI_Win_set_errhandler(zwin, MPI_ERRORS_RETURN));
        MPI_Datatype none;
        MPI_CHK(MPI_Type_contiguous(0, MPI_INT, &none));
        MPI_CHK(MPI_Type_commit(&none));
        int right = (me + 1) % n;
        MPI_CHK(MPI_Win_fence(0, zwin));
        MPI_CHK(MPI_Put(one, 0, MPI_INT, right, 0, 0, MPI_INT, zwin));
        MPI_CHK(MPI_Get(res, 0, MPI_INT, right, 1, 0, MPI_INT, zwin));
        MPI_CHK(MPI_Accumulate(one, 0, MPI_INT, right, 2, 0, MPI_INT, MPI_SUM, zwin));
        MPI_CHK(MPI_Accumulate(one, 0, MPI_BYTE, right, 0, 0, MPI_BYTE, MPI_SUM, zwin));
        MPI_CHK(MPI_Get_accumulate(one, 0, MPI_BYTE, res, 0, MPI_BYTE, right, 0, 0, MPI_BYTE, MPI_SUM, zwin));
        MPI_CHK(MPI_Get_accumulate(one, 0, MPI_INT, res, 0, MPI_INT, right, 3, 0, MPI_INT, MPI_NO_OP, zwin));
        MPI_CHK(MPI_Put(one, 1, none, right, 0, 1, none, zwin));
        MPI_CHK(MPI_Accumulate(one, 1, none, right, 0, 1, none, MPI_SUM, zwin));
        MPI_CHK(MPI_Get_accumulate(one, 1, none, res, 1, none, right, 0, 1, none, MPI_MAX, zwin));
        MPI_CHK(MPI_Win_fence(0, zwin));
        for (int i = 0; i < 4; i++) {
            CHECK(zmem[i] == 5, "window after operations of no data: [%d] = %d, expected 5", i, zmem[i]);
            CHECK(res[i] == -1, "result buffer of operations of no data: [%d] = %d, expected -1", i, res[i]);
        }
        /* The next epoch's operations may reach this window as soon as the neighbour leaves the
         * fence (MPI lets them): every rank checks before any starts them. */
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        /* Bytes: every rank adds 3 to the first byte of its neighbour's window. */
        MPI_CHK(MPI_Accumulate(&add, 1, MPI_BYTE, right, 0, 1, MPI_BYTE, MPI_SUM, zwin));
        MPI_CHK(MPI_Win_fence(0, zwin));
        CHECK(((unsigned char *)zmem)[0] == 8, "MPI_SUM on MPI_BYTE: %d, expected 8", ((unsigned char *)zmem)[0]);
        MPI_CHK(MPI_Type_free(&none));
        MPI_CHK(MPI_Win_free(&zwin));
    }

    MPI_CHK(MPI_Type_free(&every2));
    MPI_CHK(MPI_Type_free(&blocks));
    return t_finish();
}
