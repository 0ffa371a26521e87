/* Reductions: Reduce, Allreduce, Reduce_scatter, Reduce_scatter_block, Scan, Exscan, Reduce_local;
 * every predefined op on its valid C types (integers incl. fixed-width and MPI_AINT/OFFSET/COUNT,
 * floating, complex, C_BOOL, BYTE) and a few Fortran-named ones; MINLOC/MAXLOC on the pair types;
 * Op_create (commutative and not), Op_free, Op_commutative; MPI_IN_PLACE everywhere it is allowed.
 * Values are small integers so that floating results are exact. Any N >= 1. */
#include "common.h"
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

enum { CNT = 13 };
static int rank, n;

static const char *opname(MPI_Op op)
{
    if (op == MPI_SUM) return "MPI_SUM";
    if (op == MPI_PROD) return "MPI_PROD";
    if (op == MPI_MAX) return "MPI_MAX";
    if (op == MPI_MIN) return "MPI_MIN";
    if (op == MPI_LAND) return "MPI_LAND";
    if (op == MPI_LOR) return "MPI_LOR";
    if (op == MPI_LXOR) return "MPI_LXOR";
    if (op == MPI_BAND) return "MPI_BAND";
    if (op == MPI_BOR) return "MPI_BOR";
    if (op == MPI_BXOR) return "MPI_BXOR";
    return "user op";
}

/* Contribution of rank r at index i for an op: keeps products tiny and allows negatives. */
static long long contrib(int r, int i, MPI_Op op, int is_signed)
{
    if (op == MPI_PROD)
        return (r < 3 && (i + r) % 2) ? 2 : 1;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return (i % 4 == 0) ? 1 : (i % 4 == 1) ? 0 : ((r + i) % 3 == 0);
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        return ((r * 37 + i * 11) ^ (i << 3)) & 0x7f;
    long long v = (r * 7 + i * 3) % 11;
    return is_signed ? v - 5 : v;
}

#define FOLD(acc, x, op)                                                                                               \
    do {                                                                                                               \
        if (op == MPI_SUM) acc = acc + x;                                                                              \
        else if (op == MPI_PROD) acc = acc * x;                                                                        \
        else if (op == MPI_MAX) acc = (x > acc ? x : acc);                                                             \
        else if (op == MPI_MIN) acc = (x < acc ? x : acc);                                                             \
        else if (op == MPI_LAND) acc = (acc && x);                                                                     \
        else if (op == MPI_LOR) acc = (acc || x);                                                                      \
        else if (op == MPI_LXOR) acc = (!acc != !x);                                                                   \
        else if (op == MPI_BAND) acc = (acc & x);                                                                      \
        else if (op == MPI_BOR) acc = (acc | x);                                                                       \
        else if (op == MPI_BXOR) acc = (acc ^ x);                                                                      \
    } while (0)

#define FOLD_FLT(acc, x, op)                                                                                           \
    do {                                                                                                               \
        if (op == MPI_SUM) acc = acc + x;                                                                              \
        else if (op == MPI_PROD) acc = acc * x;                                                                        \
        else if (op == MPI_MAX) acc = (x > acc ? x : acc);                                                             \
        else if (op == MPI_MIN) acc = (x < acc ? x : acc);                                                             \
    } while (0)

/* Tests Allreduce and Reduce_local for one (type, op), and Reduce (root rotating) for SUM and MAX;
 * when `full`, also Reduce for every op and
 * Allreduce and Reduce with IN_PLACE, and for SUM and MAX Scan/Exscan (+ IN_PLACE). Checks against a local fold in rank
 * order. T must support the operators of the ops passed. */
#define DEF_TEST(NAME, T, SIGNED, FOLDM)                                                                       \
    static void test_##NAME(MPI_Datatype dt, const char *tname, MPI_Op op, int root, int full)                                  \
    {                                                                                                                  \
        T in[CNT], out[CNT], want[CNT], scanw[CNT], exw[CNT];                                                          \
        for (int i = 0; i < CNT; i++) {                                                                                \
            in[i] = (T)contrib(rank, i, op, SIGNED);                                                                   \
            T acc = (T)contrib(0, i, op, SIGNED);                                                                      \
            if (rank == 0) scanw[i] = acc;                                                                             \
            for (int r = 1; r < n; r++) {                                                                              \
                if (r == rank) exw[i] = acc;                                                                           \
                T x = (T)contrib(r, i, op, SIGNED);                                                                    \
                FOLDM(acc, x, op);                                                                                      \
                if (r == rank) scanw[i] = acc;                                                                         \
            }                                                                                                          \
            want[i] = acc;                                                                                             \
        }                                                                                                              \
        for (int i = 0; i < CNT; i++) out[i] = (T)99;                                                                  \
        MPI_CHK(MPI_Allreduce(in, out, CNT, dt, op, MPI_COMM_WORLD));                                                  \
        for (int i = 0; i < CNT; i++)                                                                                  \
            if (out[i] != want[i])                                                                                     \
                FAIL("Allreduce %s %s [%d]: expected %lld, got %lld", tname, opname(op), i, (long long)want[i],       \
                     (long long)out[i]);                                                                               \
        if (full || op == MPI_SUM || op == MPI_MAX) {                                                                  \
            for (int i = 0; i < CNT; i++) out[i] = (T)99;                                                                  \
            MPI_CHK(MPI_Reduce(in, out, CNT, dt, op, root, MPI_COMM_WORLD));                                               \
            if (rank == root)                                                                                              \
                for (int i = 0; i < CNT; i++)                                                                              \
                    if (out[i] != want[i])                                                                                 \
                        FAIL("Reduce root %d %s %s [%d]: expected %lld, got %lld", root, tname, opname(op), i,             \
                             (long long)want[i], (long long)out[i]);                                                       \
        }                                                                                                              \
        /* Reduce_local: out = in op out, with out = contribution of rank+1. */                                        \
        {                                                                                                              \
            T loc[CNT], lw[CNT];                                                                                       \
            for (int i = 0; i < CNT; i++) {                                                                            \
                loc[i] = (T)contrib(rank + 1, i, op, SIGNED);                                                          \
                lw[i] = in[i];                                                                                         \
                FOLDM(lw[i], loc[i], op);                                                                               \
            }                                                                                                          \
            MPI_CHK(MPI_Reduce_local(in, loc, CNT, dt, op));                                                           \
            for (int i = 0; i < CNT; i++)                                                                              \
                if (loc[i] != lw[i])                                                                                   \
                    FAIL("Reduce_local %s %s [%d]: expected %lld, got %lld", tname, opname(op), i,                    \
                         (long long)lw[i], (long long)loc[i]);                                                         \
        }                                                                                                              \
        if (!full)                                                                                                     \
            return;                                                                                                    \
        memcpy(out, in, sizeof in);                                                                                    \
        MPI_CHK(MPI_Allreduce(MPI_IN_PLACE, out, CNT, dt, op, MPI_COMM_WORLD));                                        \
        for (int i = 0; i < CNT; i++)                                                                                  \
            if (out[i] != want[i])                                                                                     \
                FAIL("Allreduce IN_PLACE %s %s [%d]: expected %lld, got %lld", tname, opname(op), i,                  \
                     (long long)want[i], (long long)out[i]);                                                           \
        if (rank == root) {                                                                                            \
            memcpy(out, in, sizeof in);                                                                                \
            MPI_CHK(MPI_Reduce(MPI_IN_PLACE, out, CNT, dt, op, root, MPI_COMM_WORLD));                                 \
            for (int i = 0; i < CNT; i++)                                                                              \
                if (out[i] != want[i])                                                                                 \
                    FAIL("Reduce IN_PLACE %s %s [%d]: expected %lld, got %lld", tname, opname(op), i,                 \
                         (long long)want[i], (long long)out[i]);                                                       \
        } else {                                                                                                       \
            MPI_CHK(MPI_Reduce(in, NULL, CNT, dt, op, root, MPI_COMM_WORLD));                                          \
        }                                                                                                              \
        if (op == MPI_SUM || op == MPI_MAX) {                                                                          \
            MPI_CHK(MPI_Scan(in, out, CNT, dt, op, MPI_COMM_WORLD));                                                   \
            for (int i = 0; i < CNT; i++)                                                                              \
                if (out[i] != scanw[i])                                                                                \
                    FAIL("Scan %s %s [%d]: expected %lld, got %lld", tname, opname(op), i, (long long)scanw[i],       \
                         (long long)out[i]);                                                                           \
            memcpy(out, in, sizeof in);                                                                                \
            MPI_CHK(MPI_Scan(MPI_IN_PLACE, out, CNT, dt, op, MPI_COMM_WORLD));                                         \
            for (int i = 0; i < CNT; i++)                                                                              \
                if (out[i] != scanw[i])                                                                                \
                    FAIL("Scan IN_PLACE %s %s [%d]: expected %lld, got %lld", tname, opname(op), i,                   \
                         (long long)scanw[i], (long long)out[i]);                                                      \
            for (int i = 0; i < CNT; i++) out[i] = (T)99;                                                              \
            MPI_CHK(MPI_Exscan(in, out, CNT, dt, op, MPI_COMM_WORLD));                                                 \
            if (rank > 0)                                                                                              \
                for (int i = 0; i < CNT; i++)                                                                          \
                    if (out[i] != exw[i])                                                                              \
                        FAIL("Exscan %s %s [%d]: expected %lld, got %lld", tname, opname(op), i, (long long)exw[i],   \
                             (long long)out[i]);                                                                       \
            memcpy(out, in, sizeof in);                                                                                \
            MPI_CHK(MPI_Exscan(MPI_IN_PLACE, out, CNT, dt, op, MPI_COMM_WORLD));                                       \
            if (rank > 0)                                                                                              \
                for (int i = 0; i < CNT; i++)                                                                          \
                    if (out[i] != exw[i])                                                                              \
                        FAIL("Exscan IN_PLACE %s %s [%d]: expected %lld, got %lld", tname, opname(op), i,             \
                             (long long)exw[i], (long long)out[i]);                                                    \
        }                                                                                                              \
    }

DEF_TEST(schar, signed char, 1, FOLD)
DEF_TEST(uchar, unsigned char, 0, FOLD)
DEF_TEST(short, short, 1, FOLD)
DEF_TEST(ushort, unsigned short, 0, FOLD)
DEF_TEST(int, int, 1, FOLD)
DEF_TEST(uint, unsigned, 0, FOLD)
DEF_TEST(long, long, 1, FOLD)
DEF_TEST(ulong, unsigned long, 0, FOLD)
DEF_TEST(llong, long long, 1, FOLD)
DEF_TEST(ullong, unsigned long long, 0, FOLD)
DEF_TEST(i8, int8_t, 1, FOLD)
DEF_TEST(u8, uint8_t, 0, FOLD)
DEF_TEST(i16, int16_t, 1, FOLD)
DEF_TEST(u16, uint16_t, 0, FOLD)
DEF_TEST(i32, int32_t, 1, FOLD)
DEF_TEST(u32, uint32_t, 0, FOLD)
DEF_TEST(i64, int64_t, 1, FOLD)
DEF_TEST(u64, uint64_t, 0, FOLD)
DEF_TEST(aint, MPI_Aint, 1, FOLD)
DEF_TEST(offset, MPI_Offset, 1, FOLD)
DEF_TEST(count, MPI_Count, 1, FOLD)
DEF_TEST(flt, float, 1, FOLD_FLT)
DEF_TEST(dbl, double, 1, FOLD_FLT)
DEF_TEST(ldbl, long double, 1, FOLD_FLT)

static MPI_Op int_ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
static MPI_Op flt_ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};

/* Complex: SUM and PROD. */
#define DEF_CPLX(NAME, T)                                                                                              \
    static void test_##NAME(MPI_Datatype dt, const char *tname)                                                       \
    {                                                                                                                  \
        MPI_Op ops[2] = {MPI_SUM, MPI_PROD};                                                                           \
        for (int o = 0; o < 2; o++) {                                                                                  \
            T in[CNT], out[CNT], want[CNT];                                                                            \
            for (int i = 0; i < CNT; i++) {                                                                            \
                T acc = 0;                                                                                             \
                for (int r = 0; r < n; r++) {                                                                          \
                    T x = o ? ((r < 3 && (r + i) % 2) ? (T)(1 + 1 * I) : (T)1) : (T)((r + i) % 5 + ((r * i) % 3) * I); \
                    if (r == rank) in[i] = x;                                                                          \
                    acc = r == 0 ? x : (o ? acc * x : acc + x);                                                        \
                }                                                                                                      \
                want[i] = acc;                                                                                         \
            }                                                                                                          \
            MPI_CHK(MPI_Allreduce(in, out, CNT, dt, ops[o], MPI_COMM_WORLD));                                          \
            for (int i = 0; i < CNT; i++)                                                                              \
                if (out[i] != want[i])                                                                                 \
                    FAIL("Allreduce %s %s [%d]: expected %g%+gi, got %g%+gi", tname, opname(ops[o]), i,               \
                         (double)creall(want[i]), (double)cimagl(want[i]), (double)creall(out[i]),                    \
                         (double)cimagl(out[i]));                                                                      \
            memcpy(out, in, sizeof in);                                                                                \
            MPI_CHK(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : in, out, CNT, dt, ops[o], 0, MPI_COMM_WORLD));               \
            if (rank == 0)                                                                                             \
                for (int i = 0; i < CNT; i++)                                                                          \
                    CHECK(out[i] == want[i], "Reduce IN_PLACE %s %s [%d]", tname, opname(ops[o]), i);                 \
        }                                                                                                              \
    }
DEF_CPLX(cf, float _Complex)
DEF_CPLX(cd, double _Complex)
DEF_CPLX(cld, long double _Complex)

/* MINLOC/MAXLOC on the pair types. */
#define DEF_LOC(NAME, VT, IT)                                                                                          \
    static void test_loc_##NAME(MPI_Datatype dt, const char *tname)                                                   \
    {                                                                                                                  \
        struct {                                                                                                       \
            VT v;                                                                                                      \
            IT k;                                                                                                      \
        } in[CNT], out[CNT];                                                                                           \
        for (int o = 0; o < 2; o++) {                                                                                  \
            MPI_Op op = o ? MPI_MAXLOC : MPI_MINLOC;                                                                   \
            for (int i = 0; i < CNT; i++) {                                                                            \
                in[i].v = (VT)((rank * 3 + i) % 4);                                                                    \
                in[i].k = (IT)(rank * 10 + 1);                                                                         \
            }                                                                                                          \
            MPI_CHK(MPI_Allreduce(in, out, CNT, dt, op, MPI_COMM_WORLD));                                              \
            for (int i = 0; i < CNT; i++) {                                                                            \
                VT best = (VT)((0 * 3 + i) % 4);                                                                       \
                IT bk = (IT)1;                                                                                         \
                for (int r = 1; r < n; r++) {                                                                          \
                    VT x = (VT)((r * 3 + i) % 4);                                                                      \
                    if (o ? x > best : x < best) {                                                                     \
                        best = x;                                                                                      \
                        bk = (IT)(r * 10 + 1);                                                                         \
                    }                                                                                                  \
                }                                                                                                      \
                if (out[i].v != best || out[i].k != bk)                                                                \
                    FAIL("Allreduce %s %s [%d]: expected (%g, %lld), got (%g, %lld)", tname,                          \
                         o ? "MPI_MAXLOC" : "MPI_MINLOC", i, (double)best, (long long)bk, (double)out[i].v,           \
                         (long long)out[i].k);                                                                         \
            }                                                                                                          \
            memcpy(out, in, sizeof in);                                                                                \
            MPI_CHK(MPI_Reduce(rank == n - 1 ? MPI_IN_PLACE : (void *)in, out, CNT, dt, op, n - 1, MPI_COMM_WORLD));   \
            MPI_CHK(MPI_Scan(in, out, CNT, dt, op, MPI_COMM_WORLD));                                                   \
            for (int i = 0; i < CNT; i++) {                                                                            \
                VT best = (VT)(i % 4);                                                                                 \
                IT bk = (IT)1;                                                                                         \
                for (int r = 1; r <= rank; r++) {                                                                      \
                    VT x = (VT)((r * 3 + i) % 4);                                                                      \
                    if (o ? x > best : x < best) {                                                                     \
                        best = x;                                                                                      \
                        bk = (IT)(r * 10 + 1);                                                                         \
                    }                                                                                                  \
                }                                                                                                      \
                CHECK(out[i].v == best && out[i].k == bk, "Scan %s %s [%d]", tname, o ? "MAXLOC" : "MINLOC", i);      \
            }                                                                                                          \
        }                                                                                                              \
    }
DEF_LOC(fi, float, int)
DEF_LOC(di, double, int)
DEF_LOC(li, long, int)
DEF_LOC(ii, int, int)
DEF_LOC(si, short, int)
DEF_LOC(ldi, long double, int)

static int sum_calls;
static void isum_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    (void)dt;
    sum_calls++;
    for (int i = 0; i < *len; i++)
        ((int *)inoutvec)[i] += ((int *)invec)[i];
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "coll_reduce", 1);
    rank = t_rank;
    n = t_size;
    int root = 0;
    /* Every (type, op) gets Allreduce and Reduce_local, SUM and MAX Reduce; the IN_PLACE forms and Scan/Exscan
     * run for every op on MPI_INT, MPI_DOUBLE and MPI_UINT8_T only (4 ranks on 2 cores are slow). */
#define RUN(NAME, DT, OPS)                                                                                             \
    for (unsigned o = 0; o < sizeof OPS / sizeof *OPS; o++, root = (root + 1) % n)                                    \
    test_##NAME(DT, #DT, OPS[o], root, DT == MPI_INT || DT == MPI_DOUBLE || DT == MPI_UINT8_T)
    RUN(schar, MPI_SIGNED_CHAR, int_ops);
    RUN(uchar, MPI_UNSIGNED_CHAR, int_ops);
    RUN(short, MPI_SHORT, int_ops);
    RUN(ushort, MPI_UNSIGNED_SHORT, int_ops);
    RUN(int, MPI_INT, int_ops);
    RUN(uint, MPI_UNSIGNED, int_ops);
    RUN(long, MPI_LONG, int_ops);
    RUN(ulong, MPI_UNSIGNED_LONG, int_ops);
    RUN(llong, MPI_LONG_LONG, int_ops);
    RUN(llong, MPI_LONG_LONG_INT, int_ops);
    RUN(ullong, MPI_UNSIGNED_LONG_LONG, int_ops);
    RUN(i8, MPI_INT8_T, int_ops);
    RUN(u8, MPI_UINT8_T, int_ops);
    RUN(i16, MPI_INT16_T, int_ops);
    RUN(u16, MPI_UINT16_T, int_ops);
    RUN(i32, MPI_INT32_T, int_ops);
    RUN(u32, MPI_UINT32_T, int_ops);
    RUN(i64, MPI_INT64_T, int_ops);
    RUN(u64, MPI_UINT64_T, int_ops);
    RUN(aint, MPI_AINT, int_ops);
    RUN(offset, MPI_OFFSET, int_ops);
    RUN(count, MPI_COUNT, int_ops);
    RUN(flt, MPI_FLOAT, flt_ops);
    RUN(dbl, MPI_DOUBLE, flt_ops);
    RUN(ldbl, MPI_LONG_DOUBLE, flt_ops);
    /* Fortran-named types from C (MPICH supports them when built with Fortran, as Debian's is). */
    RUN(int, MPI_INTEGER, flt_ops);
    RUN(flt, MPI_REAL, flt_ops);
    RUN(dbl, MPI_DOUBLE_PRECISION, flt_ops);
    /* Bitwise ops on MPI_BYTE; logical ops on MPI_C_BOOL. */
    {
        MPI_Op bops[] = {MPI_BAND, MPI_BOR, MPI_BXOR};
        RUN(uchar, MPI_BYTE, bops);
        bool in[CNT], out[CNT];
        MPI_Op lops[] = {MPI_LAND, MPI_LOR, MPI_LXOR};
        for (int o = 0; o < 3; o++) {
            for (int i = 0; i < CNT; i++)
                in[i] = contrib(rank, i, lops[o], 0) != 0;
            MPI_CHK(MPI_Allreduce(in, out, CNT, MPI_C_BOOL, lops[o], MPI_COMM_WORLD));
            for (int i = 0; i < CNT; i++) {
                bool acc = contrib(0, i, lops[o], 0) != 0;
                for (int r = 1; r < n; r++) {
                    bool x = contrib(r, i, lops[o], 0) != 0;
                    acc = o == 0 ? (acc && x) : o == 1 ? (acc || x) : (acc != x);
                }
                CHECK(out[i] == acc, "Allreduce MPI_C_BOOL %s [%d]: expected %d, got %d", opname(lops[o]), i, acc,
                      out[i]);
            }
        }
    }
    test_cf(MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX");
    test_cf(MPI_C_COMPLEX, "MPI_C_COMPLEX");
    test_cd(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX");
    test_cld(MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX");
    test_loc_fi(MPI_FLOAT_INT, "MPI_FLOAT_INT");
    test_loc_di(MPI_DOUBLE_INT, "MPI_DOUBLE_INT");
    test_loc_li(MPI_LONG_INT, "MPI_LONG_INT");
    test_loc_ii(MPI_2INT, "MPI_2INT");
    test_loc_si(MPI_SHORT_INT, "MPI_SHORT_INT");
    test_loc_ldi(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT");

    /* ---- Large Allreduce (pipelined paths): 1 M doubles. */
    {
        const int big = 1 << 20;
        double *a = malloc(sizeof(double) * big), *b = malloc(sizeof(double) * big);
        for (int i = 0; i < big; i++)
            a[i] = rank + (i % 7);
        MPI_CHK(MPI_Allreduce(a, b, big, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < big; i++)
            if (b[i] != n * (n - 1) / 2.0 + n * (double)(i % 7))
                FAIL("large Allreduce [%d]: expected %g, got %g", i, n * (n - 1) / 2.0 + n * (double)(i % 7), b[i]);
        free(a);
        free(b);
    }

    /* ---- Reduce_scatter_block and Reduce_scatter (+ IN_PLACE). */
    {
        const int blk = 3;
        int *in = malloc(sizeof(int) * blk * n), out[3];
        for (int i = 0; i < blk * n; i++)
            in[i] = rank * 1000 + i;
        MPI_CHK(MPI_Reduce_scatter_block(in, out, blk, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < blk; i++)
            CHECK_EQ(out[i], 1000 * n * (n - 1) / 2 + n * (rank * blk + i), "Reduce_scatter_block");
        MPI_CHK(MPI_Reduce_scatter_block(MPI_IN_PLACE, in, blk, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < blk; i++)
            CHECK_EQ(in[i], 1000 * n * (n - 1) / 2 + n * (rank * blk + i), "Reduce_scatter_block IN_PLACE");
        free(in);

        int *counts = malloc(sizeof(int) * n), tot = 0;
        for (int r = 0; r < n; r++) {
            counts[r] = r + 1;
            tot += r + 1;
        }
        int off = rank * (rank + 1) / 2;
        int *v = malloc(sizeof(int) * tot), *o = malloc(sizeof(int) * (rank + 1));
        for (int i = 0; i < tot; i++)
            v[i] = rank + i;
        MPI_CHK(MPI_Reduce_scatter(v, o, counts, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        for (int i = 0; i <= rank; i++)
            CHECK_EQ(o[i], n - 1 + off + i, "Reduce_scatter MPI_MAX");
        MPI_CHK(MPI_Reduce_scatter(MPI_IN_PLACE, v, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i <= rank; i++)
            CHECK_EQ(v[i], n * (n - 1) / 2 + n * (off + i), "Reduce_scatter IN_PLACE MPI_SUM");
        free(v);
        free(o);
        free(counts);
    }

    /* ---- User ops: non-commutative on a derived type; commutative on ints. */
    {
        MPI_Datatype segt;
        MPI_CHK(MPI_Type_contiguous(3, MPI_INT, &segt));
        MPI_CHK(MPI_Type_commit(&segt));
        MPI_Op seg, isum;
        MPI_CHK(MPI_Op_create(seg_op, 0, &seg));
        MPI_CHK(MPI_Op_create(isum_op, 1, &isum));
        int c = -1;
        MPI_CHK(MPI_Op_commutative(seg, &c));
        CHECK_EQ(c, 0, "Op_commutative(non-commutative user op)");
        MPI_CHK(MPI_Op_commutative(isum, &c));
        CHECK_EQ(c, 1, "Op_commutative(commutative user op)");
        MPI_CHK(MPI_Op_commutative(MPI_SUM, &c));
        CHECK_EQ(c, 1, "Op_commutative(MPI_SUM)");
        seg_t me[2] = {{rank, rank, 1}, {rank, rank, 1}}, res[2];
        for (int r = 0; r < n; r++) {
            memset(res, 0, sizeof res);
            MPI_CHK(MPI_Reduce(me, res, 2, segt, seg, r, MPI_COMM_WORLD));
            if (rank == r)
                CHECK(res[1].first == 0 && res[1].last == n - 1 && res[1].ok, "non-commutative Reduce root %d: (%d..%d ok %d)",
                      r, res[1].first, res[1].last, res[1].ok);
        }
        MPI_CHK(MPI_Allreduce(me, res, 2, segt, seg, MPI_COMM_WORLD));
        CHECK(res[0].first == 0 && res[0].last == n - 1 && res[0].ok, "non-commutative Allreduce: (%d..%d ok %d)",
              res[0].first, res[0].last, res[0].ok);
        MPI_CHK(MPI_Scan(me, res, 2, segt, seg, MPI_COMM_WORLD));
        CHECK(res[0].first == 0 && res[0].last == rank && res[0].ok, "non-commutative Scan: (%d..%d ok %d)",
              res[0].first, res[0].last, res[0].ok);
        MPI_CHK(MPI_Exscan(me, res, 2, segt, seg, MPI_COMM_WORLD));
        if (rank > 0)
            CHECK(res[0].first == 0 && res[0].last == rank - 1 && res[0].ok, "non-commutative Exscan: (%d..%d ok %d)",
                  res[0].first, res[0].last, res[0].ok);
        memcpy(res, me, sizeof me);
        MPI_CHK(MPI_Allreduce(MPI_IN_PLACE, res, 2, segt, seg, MPI_COMM_WORLD));
        CHECK(res[1].first == 0 && res[1].last == n - 1 && res[1].ok, "non-commutative Allreduce IN_PLACE");
        /* Reduce_local with a user op: inout = in op inout. */
        seg_t a = {0, 4, 1}, b = {5, 9, 1};
        MPI_CHK(MPI_Reduce_local(&a, &b, 1, segt, seg));
        CHECK(b.first == 0 && b.last == 9 && b.ok, "Reduce_local non-commutative order");

        int x[100], y[100];
        for (int i = 0; i < 100; i++)
            x[i] = rank + i;
        MPI_CHK(MPI_Allreduce(x, y, 100, MPI_INT, isum, MPI_COMM_WORLD));
        for (int i = 0; i < 100; i++)
            CHECK_EQ(y[i], n * (n - 1) / 2 + n * i, "commutative user op Allreduce");
        MPI_CHK(MPI_Op_free(&seg));
        CHECK(seg == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
        MPI_CHK(MPI_Op_free(&isum));
        MPI_CHK(MPI_Type_free(&segt));
    }
    return t_finish();
}
