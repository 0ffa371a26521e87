/* Reduce_scatter, Reduce_scatter_block, Scan and Exscan under every algorithm of their switches,
 * forced through MPI_T (BB_COLL_REDUCE_SCATTER, BB_COLL_SCAN; a library without them, such as
 * MPICH, runs its own choice only, but one that has BB_COLL_ALLREDUCE must have them too): blocks
 * and vectors of 0 elements, a few, past the board's 2 KiB data area and past the 64 KiB eager
 * limit; MPI_IN_PLACE; a vector type with holes (a user sum), which must keep what the program left there; a
 * non-commutative user op on a 12-byte type (a cell of the board is cut between elements). Every
 * result is checked against a fold in rank order computed here. Any N >= 1. */
#include "common.h"

static int rank, n;
/* Elements per block (reduce-scatter) or per vector (scans). */
static const int sizes[] = {0, 1, 5, 100, 1000, 20000};
enum { NSIZES = sizeof sizes / sizeof *sizes, HOLE = -7, UNSET = -99 };

/* A sum over the vector type (MPI_SUM is for predefined types only). */
static void vsum_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = invec, *b = inoutvec;
    for (int i = 0; i < *len; i++)
        b[3 * i] += a[3 * i], b[3 * i + 2] += a[3 * i + 2];
}
static MPI_Datatype segt, holed;
static MPI_Op seg, vsum;

/* Rank r's element g: a small integer (sums stay exact), or the segment (g*64+r .. g*64+r). */
static int val(int r, long g)
{
    return (int)((r * 7 + g * 3) % 11) - 5;
}
static seg_t seg_of(int r, long g)
{
    seg_t s = {(int)(g * 64 + r), (int)(g * 64 + r), 1};
    return s;
}
static int sum_of(int lo, int hi, long g)
{
    int s = 0;
    for (int r = lo; r <= hi; r++)
        s += val(r, g);
    return s;
}
static void check_seg(seg_t s, long g, int lo, int hi, const char *what, int cnt)
{
    CHECK(s.ok && s.first == g * 64 + lo && s.last == g * 64 + hi, "%s, %d elements: [%ld] = (%d..%d ok %d), want (%ld..%ld)",
          what, cnt, g, s.first, s.last, s.ok, g * 64 + lo, g * 64 + hi);
}

/* Block lengths: all `cnt` (block form), or `cnt` and `cnt + 1` alternating (the v form). */
static int counts_of(int *counts, int cnt, int block)
{
    int total = 0;
    for (int r = 0; r < n; r++)
        total += counts[r] = block ? cnt : cnt + r % 2;
    return total;
}

static int reduce_scatter(const void *in, void *out, int *counts, MPI_Datatype t, MPI_Op op, int block)
{
    if (block)
        return MPI_Reduce_scatter_block(in, out, counts[0], t, op, MPI_COMM_WORLD);
    return MPI_Reduce_scatter(in, out, counts, t, op, MPI_COMM_WORLD);
}

/* MPI_SUM on ints, in place or not; the block form and the v form. */
static void rs_int(int cnt, int block, int in_place)
{
    int counts[64], at = 0, total = counts_of(counts, cnt, block), mine = counts[rank];
    for (int r = 0; r < rank; r++)
        at += counts[r];
    int *in = malloc(sizeof(int) * (total + 1)), *out = malloc(sizeof(int) * (mine + 1));
    for (int g = 0; g < total; g++)
        in[g] = val(rank, g);
    for (int k = 0; k <= mine; k++)
        out[k] = UNSET;
    MPI_CHK(reduce_scatter(in_place ? MPI_IN_PLACE : in, in_place ? (void *)in : out, counts, MPI_INT, MPI_SUM, block));
    int *got = in_place ? in : out;
    for (int k = 0; k < mine; k++)
        if (got[k] != sum_of(0, n - 1, at + k))
            FAIL("Reduce_scatter%s%s of %d ints a block: [%d] = %d, want %d", block ? "_block" : "",
                 in_place ? " IN_PLACE" : "", cnt, k, got[k], sum_of(0, n - 1, at + k));
    CHECK(in_place || out[mine] == UNSET, "Reduce_scatter wrote past rank %d's block of %d", rank, mine);
    free(in);
    free(out);
}

/* The non-commutative op on segments, in place or not. */
static void rs_seg(int cnt, int block, int in_place)
{
    int counts[64], at = 0, total = counts_of(counts, cnt, block), mine = counts[rank];
    for (int r = 0; r < rank; r++)
        at += counts[r];
    seg_t *in = malloc(sizeof(seg_t) * (total + 1)), *out = malloc(sizeof(seg_t) * (mine + 1));
    for (int g = 0; g < total; g++)
        in[g] = seg_of(rank, g);
    MPI_CHK(reduce_scatter(in_place ? MPI_IN_PLACE : in, in_place ? (void *)in : out, counts, segt, seg, block));
    seg_t *got = in_place ? in : out;
    for (int k = 0; k < mine; k++)
        check_seg(got[k], at + k, 0, n - 1, in_place ? "Reduce_scatter IN_PLACE, user op" : "Reduce_scatter, user op", cnt);
    free(in);
    free(out);
}

/* A vector type (ints 0 and 2 of every 3): the holes of the receive buffer keep their HOLE. */
static void rs_holed(int cnt, int block)
{
    int counts[64], at = 0, total = counts_of(counts, cnt, block), mine = counts[rank];
    for (int r = 0; r < rank; r++)
        at += counts[r];
    int *in = malloc(sizeof(int) * (3 * total + 1)), *out = malloc(sizeof(int) * (3 * mine + 1));
    for (int g = 0; g < total; g++)
        in[3 * g] = val(rank, 2 * g), in[3 * g + 1] = HOLE, in[3 * g + 2] = val(rank, 2 * g + 1);
    for (int k = 0; k < 3 * mine; k++)
        out[k] = HOLE;
    MPI_CHK(reduce_scatter(in, out, counts, holed, vsum, block));
    for (int k = 0; k < mine; k++) {
        long g = at + k;
        CHECK(out[3 * k] == sum_of(0, n - 1, 2 * g) && out[3 * k + 2] == sum_of(0, n - 1, 2 * g + 1),
              "Reduce_scatter of a vector type, %d a block: [%d] = (%d, %d)", cnt, k, out[3 * k], out[3 * k + 2]);
        CHECK(out[3 * k + 1] == HOLE, "Reduce_scatter wrote a hole of the vector type: [%d] = %d", k, out[3 * k + 1]);
    }
    free(in);
    free(out);
}

static int scan(const void *in, void *out, int cnt, MPI_Datatype t, MPI_Op op, int exclusive)
{
    if (exclusive)
        return MPI_Exscan(in, out, cnt, t, op, MPI_COMM_WORLD);
    return MPI_Scan(in, out, cnt, t, op, MPI_COMM_WORLD);
}

/* Scan or Exscan of ints, segments and the vector type; in place for the first two. Rank 0's
 * buffer after Exscan is undefined: not checked. */
static void scans(int cnt, int exclusive, int in_place)
{
    const char *what = exclusive ? "Exscan" : "Scan";
    int hi = exclusive ? rank - 1 : rank;
    int *in = malloc(sizeof(int) * (cnt + 1)), *out = malloc(sizeof(int) * (cnt + 1));
    for (int g = 0; g < cnt; g++)
        in[g] = val(rank, g), out[g] = UNSET;
    MPI_CHK(scan(in_place ? MPI_IN_PLACE : in, in_place ? (void *)in : out, cnt, MPI_INT, MPI_SUM, exclusive));
    int *got = in_place ? in : out;
    for (int g = 0; g < cnt && hi >= 0; g++)
        if (got[g] != sum_of(0, hi, g))
            FAIL("%s%s of %d ints: [%d] = %d, want %d", what, in_place ? " IN_PLACE" : "", cnt, g, got[g], sum_of(0, hi, g));

    seg_t *sin = malloc(sizeof(seg_t) * (cnt + 1)), *sout = malloc(sizeof(seg_t) * (cnt + 1));
    for (int g = 0; g < cnt; g++)
        sin[g] = seg_of(rank, g);
    MPI_CHK(scan(in_place ? MPI_IN_PLACE : sin, in_place ? (void *)sin : sout, cnt, segt, seg, exclusive));
    for (int g = 0; g < cnt && hi >= 0; g++)
        check_seg((in_place ? sin : sout)[g], g, 0, hi, exclusive ? "Exscan, user op" : "Scan, user op", cnt);

    int *vin = malloc(sizeof(int) * (3 * cnt + 1)), *vout = malloc(sizeof(int) * (3 * cnt + 1));
    for (int g = 0; g < cnt; g++) {
        vin[3 * g] = val(rank, 2 * g), vin[3 * g + 1] = HOLE, vin[3 * g + 2] = val(rank, 2 * g + 1);
        vout[3 * g] = vout[3 * g + 1] = vout[3 * g + 2] = HOLE;
    }
    MPI_CHK(scan(vin, vout, cnt, holed, vsum, exclusive));
    for (int g = 0; g < cnt && hi >= 0; g++) {
        CHECK(vout[3 * g] == sum_of(0, hi, 2 * g) && vout[3 * g + 2] == sum_of(0, hi, 2 * g + 1),
              "%s of a vector type, %d elements: [%d] = (%d, %d)", what, cnt, g, vout[3 * g], vout[3 * g + 2]);
        CHECK(vout[3 * g + 1] == HOLE, "%s wrote a hole of the vector type: [%d] = %d", what, g, vout[3 * g + 1]);
    }
    free(in), free(out), free(sin), free(sout), free(vin), free(vout);
}

/* The MPI_T control variable `name` (-1 where the library has none) and its item count. */
static int cvar(const char *name, int *items)
{
    int i = -1, verbosity, bind, scope, nl = 0, dl = 0;
    MPI_Datatype dt;
    MPI_T_enum e;
    *items = 1;
    if (MPI_T_cvar_get_index(name, &i) != MPI_SUCCESS)
        return -1;
    MPI_CHK(MPI_T_cvar_get_info(i, NULL, &nl, &verbosity, &dt, &e, NULL, &dl, &bind, &scope));
    char ename[128];
    nl = sizeof ename;
    MPI_CHK(MPI_T_enum_get_info(e, items, ename, &nl));
    return i;
}

static void force(int index, int item)
{
    MPI_T_cvar_handle h;
    int count;
    if (index < 0)
        return;
    MPI_CHK(MPI_T_cvar_handle_alloc(index, NULL, &h, &count));
    MPI_CHK(MPI_T_cvar_write(h, &item));
    MPI_CHK(MPI_T_cvar_handle_free(&h));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "coll_rscan", 1);
    rank = t_rank;
    n = t_size;
    CHECK(n <= 64, "at most 64 ranks, got %d", n);
    int provided, items;
    MPI_CHK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    int ours = cvar("BB_COLL_ALLREDUCE", &items) >= 0;
    int rs_items, scan_items;
    int rs = cvar("BB_COLL_REDUCE_SCATTER", &rs_items), sc = cvar("BB_COLL_SCAN", &scan_items);
    CHECK(!ours || (rs >= 0 && sc >= 0), "a library with BB_COLL_ALLREDUCE lacks BB_COLL_REDUCE_SCATTER (%d) or BB_COLL_SCAN (%d)",
          rs, sc);
    MPI_CHK(MPI_Type_contiguous(3, MPI_INT, &segt));
    MPI_CHK(MPI_Type_commit(&segt));
    MPI_CHK(MPI_Type_vector(2, 1, 2, MPI_INT, &holed));
    MPI_CHK(MPI_Type_commit(&holed));
    MPI_CHK(MPI_Op_create(seg_op, 0, &seg));
    MPI_CHK(MPI_Op_create(vsum_op, 1, &vsum));

    /* Item 0 is the table's own choice; then each algorithm forced. */
    for (int item = 0; item < rs_items; item++) {
        force(rs, item);
        for (int s = 0; s < NSIZES; s++)
            for (int block = 0; block < 2; block++) {
                rs_int(sizes[s], block, 0);
                rs_int(sizes[s], block, 1);
                rs_seg(sizes[s], block, s % 2);
                rs_holed(sizes[s], block);
            }
    }
    force(rs, 0);
    for (int item = 0; item < scan_items; item++) {
        force(sc, item);
        for (int s = 0; s < NSIZES; s++)
            for (int exclusive = 0; exclusive < 2; exclusive++) {
                scans(sizes[s], exclusive, 0);
                scans(sizes[s], exclusive, 1);
            }
    }
    force(sc, 0);

    MPI_CHK(MPI_Op_free(&seg));
    MPI_CHK(MPI_Op_free(&vsum));
    MPI_CHK(MPI_Type_free(&segt));
    MPI_CHK(MPI_Type_free(&holed));
    MPI_CHK(MPI_T_finalize());
    return t_finish();
}
