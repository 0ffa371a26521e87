/* Derived datatypes: contiguous, vector, hvector, indexed, hindexed, indexed_block, hindexed_block,
 * create_struct, create_subarray, create_darray, create_resized, dup; size/extent/true_extent (and
 * _x); get_envelope/get_contents; Type_match_size; Get_address; Get_elements(_x); Pack/Unpack/
 * Pack_size; Pack_external/Unpack_external("external32"); sends and receives of non-contiguous
 * data (to the right neighbour, any N >= 1). */
#include "common.h"
#include <stddef.h>

enum { SRC = 4096 };
static int src[SRC], dst[SRC];
static int right, left;

/* The type (count copies, over int arrays) selects exactly the ints at offs[0..n) of the base
 * array, in that order. Checks size, Pack, a send/recv as the type vs contiguous ints both ways. */
static void check_layout(MPI_Datatype t, int count, const int *offs, int n, const char *what)
{
    int sz = -1;
    MPI_CHK(MPI_Type_size(t, &sz));
    CHECK(sz * count == n * (int)sizeof(int), "%s: Type_size %d * %d, expected %d ints", what, sz, count, n);
    /* Pack */
    int psize = -1;
    MPI_CHK(MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize));
    CHECK(psize >= n * (int)sizeof(int), "%s: Pack_size %d", what, psize);
    char *packed = malloc(psize);
    int pos = 0;
    MPI_CHK(MPI_Pack(src, count, t, packed, psize, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, n * (int)sizeof(int), "Pack position");
    for (int k = 0; k < n; k++) {
        int x;
        memcpy(&x, packed + k * sizeof(int), sizeof x);
        CHECK(x == src[offs[k]], "%s: packed int %d = %d, expected src[%d] = %d", what, k, x, offs[k], src[offs[k]]);
    }
    /* Unpack into a clean buffer: only the selected places change. */
    for (int i = 0; i < SRC; i++)
        dst[i] = -1;
    pos = 0;
    MPI_CHK(MPI_Unpack(packed, psize, &pos, dst, count, t, MPI_COMM_WORLD));
    char *hit = calloc(SRC, 1);
    for (int k = 0; k < n; k++) {
        CHECK(dst[offs[k]] == src[offs[k]], "%s: unpacked [%d] = %d", what, offs[k], dst[offs[k]]);
        hit[offs[k]] = 1;
    }
    for (int i = 0; i < SRC; i++)
        CHECK(hit[i] || dst[i] == -1, "%s: Unpack wrote outside the type map at %d", what, i);
    free(packed);
    /* Send as the type, receive as contiguous ints (from the left neighbour, same layout). */
    int *flat = malloc(sizeof(int) * (n + 1));
    MPI_Request r;
    MPI_Status st;
    for (int i = 0; i < SRC; i++)
        src[i] += t_rank * 100000;
    MPI_CHK(MPI_Isend(src, count, t, right, 1, MPI_COMM_WORLD, &r));
    MPI_CHK(MPI_Recv(flat, n + 1, MPI_INT, left, 1, MPI_COMM_WORLD, &st));
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    int c = -1;
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK_EQ(c, n, "ints received from a typed send");
    for (int k = 0; k < n; k++)
        CHECK(flat[k] == offs[k] + left * 100000, "%s: typed send: int %d = %d, expected %d", what, k, flat[k],
              offs[k] + left * 100000);
    /* Send contiguous, receive as the type. */
    for (int i = 0; i < SRC; i++)
        dst[i] = -1;
    MPI_CHK(MPI_Isend(flat, n, MPI_INT, right, 2, MPI_COMM_WORLD, &r));
    MPI_CHK(MPI_Recv(dst, count, t, left, 2, MPI_COMM_WORLD, &st));
    MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Get_count(&st, t, &c));
    CHECK_EQ(c, count, "Get_count in units of the type");
    int el = -1;
    MPI_CHK(MPI_Get_elements(&st, t, &el));
    CHECK_EQ(el, n, "Get_elements");
    MPI_Count elx = -1;
    MPI_CHK(MPI_Get_elements_x(&st, t, &elx));
    CHECK_EQ(elx, n, "Get_elements_x");
    for (int k = 0; k < n; k++) {
        /* flat holds offs[k] + (left of me)*100000, sent right: I receive my left's flat, which is
         * offs[k] + (left of left)*100000. */
        int ll = (left + t_size - 1) % t_size;
        CHECK(dst[offs[k]] == offs[k] + ll * 100000, "%s: typed recv at %d = %d", what, offs[k], dst[offs[k]]);
    }
    for (int i = 0; i < SRC; i++)
        src[i] -= t_rank * 100000;
    free(flat);
    free(hit);
}

static void check_extent(MPI_Datatype t, MPI_Aint lb, MPI_Aint ext, MPI_Aint tlb, MPI_Aint text, const char *what)
{
    MPI_Aint a, b;
    MPI_CHK(MPI_Type_get_extent(t, &a, &b));
    CHECK(a == lb && b == ext, "%s: lb/extent %ld/%ld, expected %ld/%ld", what, (long)a, (long)b, (long)lb, (long)ext);
    MPI_CHK(MPI_Type_get_true_extent(t, &a, &b));
    CHECK(a == tlb && b == text, "%s: true lb/extent %ld/%ld, expected %ld/%ld", what, (long)a, (long)b, (long)tlb,
          (long)text);
    MPI_Count x, y, s;
    MPI_CHK(MPI_Type_get_extent_x(t, &x, &y));
    CHECK(x == lb && y == ext, "%s: get_extent_x", what);
    MPI_CHK(MPI_Type_get_true_extent_x(t, &x, &y));
    CHECK(x == tlb && y == text, "%s: get_true_extent_x", what);
    int s32;
    MPI_CHK(MPI_Type_size(t, &s32));
    MPI_CHK(MPI_Type_size_x(t, &s));
    CHECK_EQ(s, s32, "Type_size_x vs Type_size");
}

#define I sizeof(int)

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "datatypes", 1);
    right = (t_rank + 1) % t_size;
    left = (t_rank + t_size - 1) % t_size;
    for (int i = 0; i < SRC; i++)
        src[i] = i;
    int offs[SRC];
    int n;
    MPI_Datatype t;

    /* Predefined sizes. */
    {
        struct {
            MPI_Datatype t;
            int size;
            const char *name;
        } pre[] = {{MPI_CHAR, 1, "CHAR"},         {MPI_SHORT, sizeof(short), "SHORT"},
                   {MPI_INT, sizeof(int), "INT"}, {MPI_LONG, sizeof(long), "LONG"},
                   {MPI_FLOAT, 4, "FLOAT"},       {MPI_DOUBLE, 8, "DOUBLE"},
                   {MPI_LONG_DOUBLE, sizeof(long double), "LONG_DOUBLE"},
                   {MPI_BYTE, 1, "BYTE"},         {MPI_INT64_T, 8, "INT64_T"},
                   {MPI_AINT, sizeof(MPI_Aint), "AINT"}, {MPI_C_DOUBLE_COMPLEX, 16, "C_DOUBLE_COMPLEX"},
                   {MPI_2INT, 2 * sizeof(int), "2INT"}, {MPI_DOUBLE_INT, 12, "DOUBLE_INT"},
                   {MPI_INTEGER, 4, "INTEGER"},   {MPI_DOUBLE_PRECISION, 8, "DOUBLE_PRECISION"}};
        for (unsigned i = 0; i < sizeof pre / sizeof *pre; i++) {
            int s = -1;
            MPI_CHK(MPI_Type_size(pre[i].t, &s));
            CHECK(s == pre[i].size, "Type_size(MPI_%s) = %d, expected %d", pre[i].name, s, pre[i].size);
        }
        MPI_Aint lb, ext;
        MPI_CHK(MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext));
        CHECK(lb == 0 && ext == 16, "MPI_DOUBLE_INT extent %ld", (long)ext);
    }

    /* contiguous(5) x 2 */
    MPI_CHK(MPI_Type_contiguous(5, MPI_INT, &t));
    MPI_CHK(MPI_Type_commit(&t));
    for (n = 0; n < 10; n++)
        offs[n] = n;
    check_layout(t, 2, offs, n, "contiguous");
    check_extent(t, 0, 5 * I, 0, 5 * I, "contiguous");
    MPI_CHK(MPI_Type_free(&t));
    CHECK(t == MPI_DATATYPE_NULL, "Type_free did not set MPI_DATATYPE_NULL");

    /* vector(3 blocks of 2, stride 5) x 2: extent = (2*5+2) ints */
    MPI_CHK(MPI_Type_vector(3, 2, 5, MPI_INT, &t));
    MPI_CHK(MPI_Type_commit(&t));
    n = 0;
    for (int c = 0; c < 2; c++)
        for (int b = 0; b < 3; b++)
            for (int j = 0; j < 2; j++)
                offs[n++] = c * 12 + b * 5 + j;
    check_layout(t, 2, offs, n, "vector");
    check_extent(t, 0, 12 * I, 0, 12 * I, "vector");
    {
        int ni, na, nd, comb;
        MPI_CHK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
        CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nd == 1, "vector envelope %d %d %d %d", ni, na, nd,
              comb);
        int ints[3];
        MPI_Datatype ts[1];
        MPI_CHK(MPI_Type_get_contents(t, 3, 0, 1, ints, NULL, ts));
        CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && ts[0] == MPI_INT, "vector contents");
        MPI_CHK(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb));
        CHECK_EQ(comb, MPI_COMBINER_NAMED, "envelope of MPI_INT");
    }
    /* Negative stride vector: blocks at 10, 5, 0. */
    {
        MPI_Datatype nv;
        MPI_CHK(MPI_Type_vector(3, 1, -5, MPI_INT, &nv));
        MPI_CHK(MPI_Type_commit(&nv));
        check_extent(nv, -10 * (MPI_Aint)I, 11 * I, -10 * (MPI_Aint)I, 11 * I, "negative-stride vector");
        MPI_CHK(MPI_Type_free(&nv));
    }
    /* hvector of the vector: 2 copies, 40 ints apart */
    {
        MPI_Datatype hv;
        MPI_CHK(MPI_Type_create_hvector(2, 1, 40 * I, t, &hv));
        MPI_CHK(MPI_Type_commit(&hv));
        n = 0;
        for (int c = 0; c < 2; c++)
            for (int b = 0; b < 3; b++)
                for (int j = 0; j < 2; j++)
                    offs[n++] = c * 40 + b * 5 + j;
        check_layout(hv, 1, offs, n, "hvector of vector");
        check_extent(hv, 0, 52 * I, 0, 52 * I, "hvector");
        MPI_CHK(MPI_Type_free(&hv));
    }
    MPI_CHK(MPI_Type_free(&t));

    /* indexed: blocks (len 3 at 10), (len 1 at 2), (len 2 at 20) -- out of order */
    {
        int bl[3] = {3, 1, 2}, dp[3] = {10, 2, 20};
        MPI_CHK(MPI_Type_indexed(3, bl, dp, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        int o[] = {10, 11, 12, 2, 20, 21};
        check_layout(t, 1, o, 6, "indexed");
        check_extent(t, 2 * I, 20 * I, 2 * I, 20 * I, "indexed");
        MPI_CHK(MPI_Type_free(&t));
        MPI_Aint hdp[3] = {10 * I, 2 * I, 20 * I};
        MPI_CHK(MPI_Type_create_hindexed(3, bl, hdp, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        check_layout(t, 1, o, 6, "hindexed");
        MPI_CHK(MPI_Type_free(&t));
        int dp2[3] = {4, 0, 9};
        MPI_CHK(MPI_Type_create_indexed_block(3, 2, dp2, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        int o2[] = {4, 5, 0, 1, 9, 10};
        check_layout(t, 1, o2, 6, "indexed_block");
        MPI_CHK(MPI_Type_free(&t));
        MPI_Aint hdp2[3] = {4 * I, 0, 9 * I};
        MPI_CHK(MPI_Type_create_hindexed_block(3, 2, hdp2, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        check_layout(t, 1, o2, 6, "hindexed_block");
        int ni, na, nd, comb;
        MPI_CHK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
        CHECK(comb == MPI_COMBINER_HINDEXED_BLOCK && ni == 2 && na == 3 && nd == 1, "hindexed_block envelope");
        MPI_CHK(MPI_Type_free(&t));
    }

    /* struct of ints at int offsets (so it can be checked with the int machinery) */
    {
        int bl[2] = {2, 1};
        MPI_Aint dp[2] = {3 * I, 8 * I};
        MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
        MPI_CHK(MPI_Type_create_struct(2, bl, dp, ty, &t));
        MPI_CHK(MPI_Type_commit(&t));
        int o[] = {3, 4, 8};
        check_layout(t, 1, o, 3, "struct");
        check_extent(t, 3 * I, 6 * I, 3 * I, 6 * I, "struct");
        MPI_CHK(MPI_Type_free(&t));
    }
    /* A real struct {char; double; int} with Get_address, extent incl. padding, and a send. */
    {
        struct rec {
            char c;
            double d;
            int i;
        } recs[4], got[4];
        MPI_Aint base, a1, a2, a3;
        MPI_CHK(MPI_Get_address(&recs[0], &base));
        MPI_CHK(MPI_Get_address(&recs[0].c, &a1));
        MPI_CHK(MPI_Get_address(&recs[0].d, &a2));
        MPI_CHK(MPI_Get_address(&recs[0].i, &a3));
        CHECK(a2 - base == (MPI_Aint)offsetof(struct rec, d), "Get_address offset of d: %ld", (long)(a2 - base));
        CHECK_EQ(MPI_Aint_diff(a3, base), offsetof(struct rec, i), "MPI_Aint_diff");
        int bl[3] = {1, 1, 1};
        MPI_Aint dp[3] = {a1 - base, a2 - base, a3 - base};
        MPI_Datatype ty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, st, rt;
        MPI_CHK(MPI_Type_create_struct(3, bl, dp, ty, &st));
        MPI_CHK(MPI_Type_create_resized(st, 0, sizeof(struct rec), &rt));
        MPI_CHK(MPI_Type_commit(&rt));
        int sz;
        MPI_CHK(MPI_Type_size(rt, &sz));
        CHECK_EQ(sz, 1 + 8 + 4, "struct rec size");
        check_extent(rt, 0, sizeof(struct rec), 0, offsetof(struct rec, i) + 4, "resized struct rec");
        for (int k = 0; k < 4; k++) {
            recs[k].c = (char)('a' + k + t_rank);
            recs[k].d = k * 1.5 + t_rank;
            recs[k].i = k * 100 + t_rank;
        }
        memset(got, 0, sizeof got);
        MPI_Status s;
        MPI_CHK(MPI_Sendrecv(recs, 4, rt, right, 9, got, 4, rt, left, 9, MPI_COMM_WORLD, &s));
        for (int k = 0; k < 4; k++)
            CHECK(got[k].c == (char)('a' + k + left) && got[k].d == k * 1.5 + left && got[k].i == k * 100 + left,
                  "struct rec %d received wrong", k);
        int el;
        MPI_CHK(MPI_Get_elements(&s, rt, &el));
        CHECK_EQ(el, 12, "Get_elements of 4 struct recs (3 basic elements each)");
        /* get_contents of the struct */
        int ni, na, nd, comb;
        MPI_CHK(MPI_Type_get_envelope(st, &ni, &na, &nd, &comb));
        CHECK(comb == MPI_COMBINER_STRUCT && ni == 4 && na == 3 && nd == 3, "struct envelope");
        int ints[4];
        MPI_Aint adds[3];
        MPI_Datatype tys[3];
        MPI_CHK(MPI_Type_get_contents(st, 4, 3, 3, ints, adds, tys));
        CHECK(ints[0] == 3 && adds[1] == dp[1] && tys[1] == MPI_DOUBLE && tys[2] == MPI_INT, "struct contents");
        MPI_CHK(MPI_Type_get_envelope(rt, &ni, &na, &nd, &comb));
        CHECK_EQ(comb, MPI_COMBINER_RESIZED, "resized envelope");
        MPI_CHK(MPI_Type_free(&st));
        MPI_CHK(MPI_Type_free(&rt));
    }
    /* Get_elements with a partial last unit: send 5 ints, receive as contiguous(2). */
    {
        MPI_Datatype two;
        MPI_CHK(MPI_Type_contiguous(2, MPI_INT, &two));
        MPI_CHK(MPI_Type_commit(&two));
        int five[5] = {1, 2, 3, 4, 5}, r6[6];
        MPI_Status s;
        MPI_CHK(MPI_Sendrecv(five, 5, MPI_INT, right, 10, r6, 3, two, left, 10, MPI_COMM_WORLD, &s));
        int c, e;
        MPI_CHK(MPI_Get_count(&s, two, &c));
        CHECK_EQ(c, MPI_UNDEFINED, "Get_count of 5 ints in pairs");
        MPI_CHK(MPI_Get_elements(&s, two, &e));
        CHECK_EQ(e, 5, "Get_elements of 5 ints in pairs");
        MPI_CHK(MPI_Type_free(&two));
    }

    /* subarray: 4x6 array (C order), 2x3 block at (1,2) */
    {
        int sizes[2] = {4, 6}, sub[2] = {2, 3}, start[2] = {1, 2};
        MPI_CHK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        int o[] = {8, 9, 10, 14, 15, 16};
        check_layout(t, 1, o, 6, "subarray C");
        check_extent(t, 0, 24 * I, 8 * I, 9 * I, "subarray C");
        MPI_CHK(MPI_Type_free(&t));
        MPI_CHK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_FORTRAN, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        /* Fortran order: dim 0 fastest (4 rows), elements (1..2, 2..4) -> offs i + 4*j */
        int of[] = {1 + 4 * 2, 2 + 4 * 2, 1 + 4 * 3, 2 + 4 * 3, 1 + 4 * 4, 2 + 4 * 4};
        check_layout(t, 1, of, 6, "subarray Fortran");
        MPI_CHK(MPI_Type_free(&t));
    }
    /* darray: 8 ints block-distributed over 2 processes (as process 1): ints 4..7;
     * cyclic(1) over 2 as process 0: 0,2,4,6. */
    {
        int gs = 8, distrib = MPI_DISTRIBUTE_BLOCK, darg = MPI_DISTRIBUTE_DFLT_DARG, ps = 2;
        MPI_CHK(MPI_Type_create_darray(2, 1, 1, &gs, &distrib, &darg, &ps, MPI_ORDER_C, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        int o[] = {4, 5, 6, 7};
        check_layout(t, 1, o, 4, "darray block");
        check_extent(t, 0, 8 * I, 4 * I, 4 * I, "darray block");
        MPI_CHK(MPI_Type_free(&t));
        distrib = MPI_DISTRIBUTE_CYCLIC;
        darg = 1;
        MPI_CHK(MPI_Type_create_darray(2, 0, 1, &gs, &distrib, &darg, &ps, MPI_ORDER_C, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        int oc[] = {0, 2, 4, 6};
        check_layout(t, 1, oc, 4, "darray cyclic");
        MPI_CHK(MPI_Type_free(&t));
    }
    /* resized vector: each unit is 1 int, extent 3 ints -> count 4 picks 0,3,6,9 */
    {
        MPI_Datatype one, r;
        MPI_CHK(MPI_Type_contiguous(1, MPI_INT, &one));
        MPI_CHK(MPI_Type_create_resized(one, 0, 3 * I, &r));
        MPI_CHK(MPI_Type_commit(&r));
        int o[] = {0, 3, 6, 9};
        check_layout(r, 4, o, 4, "resized");
        check_extent(r, 0, 3 * I, 0, I, "resized");
        /* dup keeps the layout */
        MPI_Datatype d;
        MPI_CHK(MPI_Type_dup(r, &d));
        check_layout(d, 4, o, 4, "dup of resized");
        int ni, na, nd, comb;
        MPI_CHK(MPI_Type_get_envelope(d, &ni, &na, &nd, &comb));
        CHECK_EQ(comb, MPI_COMBINER_DUP, "dup envelope");
        MPI_CHK(MPI_Type_free(&d));
        MPI_CHK(MPI_Type_free(&r));
        MPI_CHK(MPI_Type_free(&one));
    }

    /* Big non-contiguous transfer: vector of 100000 ints stride 3. */
    {
        const int cnt = 100000;
        int *big = malloc(sizeof(int) * 3 * cnt), *flat = malloc(sizeof(int) * cnt);
        for (int i = 0; i < 3 * cnt; i++)
            big[i] = i + t_rank;
        MPI_CHK(MPI_Type_vector(cnt, 1, 3, MPI_INT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        MPI_CHK(MPI_Sendrecv(big, 1, t, right, 11, flat, cnt, MPI_INT, left, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < cnt; i++)
            if (flat[i] != 3 * i + left)
                FAIL("big vector send: [%d] = %d, expected %d", i, flat[i], 3 * i + left);
        MPI_CHK(MPI_Type_free(&t));
        free(big);
        free(flat);
    }

    /* Type_match_size */
    {
        MPI_Datatype m;
        int s;
        MPI_CHK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m));
        MPI_CHK(MPI_Type_size(m, &s));
        CHECK_EQ(s, 8, "Type_match_size(REAL, 8) size");
        MPI_CHK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m));
        MPI_CHK(MPI_Type_size(m, &s));
        CHECK_EQ(s, 4, "Type_match_size(INTEGER, 4) size");
        MPI_CHK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &m));
        MPI_CHK(MPI_Type_size(m, &s));
        CHECK_EQ(s, 16, "Type_match_size(COMPLEX, 16) size");
    }

    /* Pack/Unpack of mixed types in sequence. */
    {
        char buf[256];
        int pos = 0, iv[3] = {7, 8, 9}, io[3];
        double dv[2] = {1.25, -2.5}, dout[2];
        MPI_CHK(MPI_Pack(iv, 3, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        MPI_CHK(MPI_Pack(dv, 2, MPI_DOUBLE, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        int end = pos;
        /* Send the packed bytes as MPI_PACKED, unpack on the other side. */
        char rbuf[256];
        MPI_Status s;
        MPI_CHK(MPI_Sendrecv(buf, end, MPI_PACKED, right, 12, rbuf, sizeof rbuf, MPI_PACKED, left, 12, MPI_COMM_WORLD,
                             &s));
        int got;
        MPI_CHK(MPI_Get_count(&s, MPI_PACKED, &got));
        CHECK_EQ(got, end, "MPI_PACKED byte count");
        pos = 0;
        MPI_CHK(MPI_Unpack(rbuf, got, &pos, io, 3, MPI_INT, MPI_COMM_WORLD));
        MPI_CHK(MPI_Unpack(rbuf, got, &pos, dout, 2, MPI_DOUBLE, MPI_COMM_WORLD));
        CHECK(io[0] == 7 && io[2] == 9 && dout[0] == 1.25 && dout[1] == -2.5, "Pack/Unpack of mixed data");
        CHECK_EQ(pos, end, "Unpack position");
    }

    /* external32: big-endian, fixed sizes. */
    {
        int iv[2] = {0x01020304, -2};
        double d = 1.0;
        unsigned char buf[64];
        MPI_Aint pos = 0, sz = 0;
        MPI_CHK(MPI_Pack_external_size("external32", 2, MPI_INT, &sz));
        CHECK_EQ(sz, 8, "Pack_external_size(2 MPI_INT)");
        MPI_CHK(MPI_Pack_external("external32", iv, 2, MPI_INT, buf, sizeof buf, &pos));
        MPI_CHK(MPI_Pack_external("external32", &d, 1, MPI_DOUBLE, buf, sizeof buf, &pos));
        CHECK_EQ(pos, 16, "external32 position");
        unsigned char want[16] = {1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
        for (int i = 0; i < 16; i++)
            CHECK(buf[i] == want[i], "external32 byte %d = %#x, expected %#x", i, buf[i], want[i]);
        int io[2];
        double dd;
        MPI_Aint p2 = 0;
        MPI_CHK(MPI_Unpack_external("external32", buf, pos, &p2, io, 2, MPI_INT));
        MPI_CHK(MPI_Unpack_external("external32", buf, pos, &p2, &dd, 1, MPI_DOUBLE));
        CHECK(io[0] == 0x01020304 && io[1] == -2 && dd == 1.0, "Unpack_external round trip");
        /* A vector type in external32. */
        MPI_CHK(MPI_Type_vector(2, 1, 2, MPI_SHORT, &t));
        MPI_CHK(MPI_Type_commit(&t));
        short sv[3] = {0x0102, 0, 0x0304};
        pos = 0;
        MPI_CHK(MPI_Pack_external("external32", sv, 1, t, buf, sizeof buf, &pos));
        CHECK(pos == 4 && buf[0] == 1 && buf[1] == 2 && buf[2] == 3 && buf[3] == 4, "external32 of a short vector");
        MPI_CHK(MPI_Type_free(&t));
    }
    return t_finish();
}
