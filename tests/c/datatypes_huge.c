/* Datatypes with huge counts cost what they describe, not what they repeat.
 *
 * construct: MPI_Type_contiguous(INT_MAX, MPI_CHAR), MPI_Type_vector(INT_MAX/2, 1, 3, MPI_INT)
 *            resized, a subarray of INT_MAX x INT_MAX chars, a struct of INT_MAX-element blocks
 *            and an INT_MAX-wide cyclic darray are built and committed in well under a second
 *            each, and the process stays small (ru_maxrss).
 * queries:   size, size_x, extent(_x), true_extent(_x), get_elements(_x), get_count and
 *            envelope/contents give what MPICH 4.0.2 gives (MPI_Type_size is MPI_UNDEFINED
 *            above INT_MAX, the _x forms the full 64-bit values).
 * overflow:  a type whose size or extent passes 64 bits is an error (MPI_ERR_ARG or
 *            MPI_ERR_TYPE) in Billboard; MPICH 4.0.2 wraps silently, so only Billboard is held
 *            to it.
 * message:   a short message received into one instance of the resized INT_MAX/2 vector fills
 *            its first elements only, and counts as they should; memory stays small.
 * One section may be named as the argument (default: all). Pairs ranks 0-1 for the message. */
#include <limits.h>
#include <sys/resource.h>

#include "common.h"

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Builds a type with `call`, which must succeed, commit, and take less than a second. */
#define BUILD(call, t, what)                                                                                           \
    do {                                                                                                               \
        double t0_ = MPI_Wtime();                                                                                      \
        MPI_CHK(call);                                                                                                 \
        MPI_CHK(MPI_Type_commit(&(t)));                                                                                \
        double dt_ = MPI_Wtime() - t0_;                                                                                \
        CHECK(dt_ < 1.0, "%s took %.2f s to build and commit", (what), dt_);                                           \
    } while (0)

static MPI_Datatype chars, ints, vec, resized, sub, strct, darray;

static void construct(void)
{
    long before = maxrss_kb();
    BUILD(MPI_Type_contiguous(INT_MAX, MPI_CHAR, &chars), chars, "MPI_Type_contiguous(INT_MAX, MPI_CHAR)");
    BUILD(MPI_Type_contiguous(INT_MAX, MPI_INT, &ints), ints, "MPI_Type_contiguous(INT_MAX, MPI_INT)");
    BUILD(MPI_Type_vector(INT_MAX / 2, 1, 3, MPI_INT, &vec), vec, "MPI_Type_vector(INT_MAX/2, 1, 3, MPI_INT)");
    BUILD(MPI_Type_create_resized(vec, 0, 3 * sizeof(int), &resized), resized, "the vector resized to 12 bytes");
    int sizes[2] = {INT_MAX, INT_MAX}, subsizes[2] = {INT_MAX / 2, INT_MAX}, starts[2] = {1, 0};
    BUILD(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_CHAR, &sub), sub,
          "an INT_MAX x INT_MAX subarray");
    int bl[2] = {INT_MAX, INT_MAX};
    MPI_Aint displs[2] = {0, (MPI_Aint)1 << 33};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    BUILD(MPI_Type_create_struct(2, bl, displs, types, &strct), strct, "a struct of two INT_MAX blocks");
    int gsize = INT_MAX, distrib = MPI_DISTRIBUTE_CYCLIC, darg = MPI_DISTRIBUTE_DFLT_DARG, psize = 2;
    BUILD(MPI_Type_create_darray(2, 1, 1, &gsize, &distrib, &darg, &psize, MPI_ORDER_C, MPI_INT, &darray), darray,
          "a cyclic darray of INT_MAX ints");
    long grown = maxrss_kb() - before;
    CHECK(grown < 64 * 1024, "building the huge types grew the process by %ld MB (ru_maxrss)", grown / 1024);
}

/* Size and bounds of `t` against MPICH 4.0.2's answers. */
static void bounds(MPI_Datatype t, const char *what, long long size, long long lb, long long extent, long long tlb,
                   long long textent)
{
    int s = -1;
    MPI_Count sx = -1, lbx = -1, ex = -1, tlbx = -1, tex = -1;
    MPI_Aint alb = -1, aex = -1, atlb = -1, atex = -1;
    char msg[128];
    MPI_CHK(MPI_Type_size(t, &s));
    snprintf(msg, sizeof msg, "MPI_Type_size of %s", what);
    CHECK_EQ(s, size > INT_MAX ? MPI_UNDEFINED : size, msg);
    MPI_CHK(MPI_Type_size_x(t, &sx));
    snprintf(msg, sizeof msg, "MPI_Type_size_x of %s", what);
    CHECK_EQ(sx, size, msg);
    MPI_CHK(MPI_Type_get_extent(t, &alb, &aex));
    MPI_CHK(MPI_Type_get_extent_x(t, &lbx, &ex));
    snprintf(msg, sizeof msg, "lb and extent (MPI_Type_get_extent and _x) of %s", what);
    CHECK(alb == lb && aex == extent && lbx == lb && ex == extent, "%s: expected %lld %lld, got %lld %lld and %lld %lld",
          msg, lb, extent, (long long)alb, (long long)aex, (long long)lbx, (long long)ex);
    MPI_CHK(MPI_Type_get_true_extent(t, &atlb, &atex));
    MPI_CHK(MPI_Type_get_true_extent_x(t, &tlbx, &tex));
    snprintf(msg, sizeof msg, "true lb and extent (MPI_Type_get_true_extent and _x) of %s", what);
    CHECK(atlb == tlb && atex == textent && tlbx == tlb && tex == textent,
          "%s: expected %lld %lld, got %lld %lld and %lld %lld", msg, tlb, textent, (long long)atlb, (long long)atex,
          (long long)tlbx, (long long)tex);
}

/* MPI_Get_elements(_x) and MPI_Get_count of `t` for a status holding `bytes` bytes. */
static void elements(MPI_Datatype t, const char *what, long long bytes, long long want_x, int want_count)
{
    MPI_Status st;
    memset(&st, 0, sizeof st);
    MPI_CHK(MPI_Status_set_elements_x(&st, MPI_BYTE, bytes));
    int n = -1, c = -1;
    MPI_Count nx = -1;
    char msg[128];
    MPI_CHK(MPI_Get_elements(&st, t, &n));
    MPI_CHK(MPI_Get_elements_x(&st, t, &nx));
    MPI_CHK(MPI_Get_count(&st, t, &c));
    snprintf(msg, sizeof msg, "MPI_Get_elements_x of %s in %lld bytes", what, bytes);
    CHECK_EQ(nx, want_x, msg);
    snprintf(msg, sizeof msg, "MPI_Get_elements of %s in %lld bytes", what, bytes);
    CHECK_EQ(n, want_x > INT_MAX ? MPI_UNDEFINED : want_x, msg);
    snprintf(msg, sizeof msg, "MPI_Get_count of %s in %lld bytes", what, bytes);
    CHECK_EQ(c, want_count, msg);
}

static void envelope(MPI_Datatype t, const char *what, int combiner, int ni, int na, const int *ints,
                     const MPI_Aint *aints)
{
    int gi = -1, ga = -1, gd = -1, gc = -1;
    MPI_CHK(MPI_Type_get_envelope(t, &gi, &ga, &gd, &gc));
    CHECK(gc == combiner && gi == ni && ga == na && gd == 1, "envelope of %s: %d %d %d combiner %d", what, gi, ga, gd,
          gc);
    int ci[8];
    MPI_Aint ca[2];
    MPI_Datatype cd[1];
    MPI_CHK(MPI_Type_get_contents(t, 8, 2, 1, ci, ca, cd));
    for (int i = 0; i < ni; i++)
        CHECK(ci[i] == ints[i], "contents of %s: integer %d is %d, expected %d", what, i, ci[i], ints[i]);
    for (int i = 0; i < na; i++)
        CHECK(ca[i] == aints[i], "contents of %s: address %d is %ld, expected %ld", what, i, (long)ca[i], (long)aints[i]);
    int named = 0, x, y, z;
    MPI_CHK(MPI_Type_get_envelope(cd[0], &x, &y, &z, &named));
    if (named != MPI_COMBINER_NAMED)
        MPI_CHK(MPI_Type_free(&cd[0]));
}

static void queries(void)
{
    const long long M = INT_MAX;
    /* The values MPICH 4.0.2 gives (mpicc.mpich, same calls). */
    bounds(chars, "contiguous(INT_MAX, MPI_CHAR)", M, 0, M, 0, M);
    bounds(ints, "contiguous(INT_MAX, MPI_INT)", 4 * M, 0, 4 * M, 0, 4 * M);
    bounds(vec, "vector(INT_MAX/2, 1, 3, MPI_INT)", M / 2 * 4, 0, 12884901868LL, 0, 12884901868LL);
    bounds(resized, "the vector resized to 12", M / 2 * 4, 0, 12, 0, 12884901868LL);
    bounds(sub, "the INT_MAX x INT_MAX subarray", 2305843005992468481LL, 0, 4611686014132420609LL, M,
           2305843005992468481LL);
    bounds(strct, "the struct", 25769803764LL, 0, 25769803768LL, 0, 25769803768LL);
    bounds(darray, "the cyclic darray", M / 2 * 4, 0, 4 * M, 4, 4 * M - 8);
    MPI_Datatype four;
    MPI_CHK(MPI_Type_contiguous(4, ints, &four));
    MPI_CHK(MPI_Type_commit(&four));
    bounds(four, "contiguous(4, contiguous(INT_MAX, MPI_INT))", 16 * M, 0, 16 * M, 0, 16 * M);

    elements(chars, "contiguous(INT_MAX, MPI_CHAR)", M, M, 1);
    elements(chars, "contiguous(INT_MAX, MPI_CHAR)", 12, 12, MPI_UNDEFINED);
    elements(ints, "contiguous(INT_MAX, MPI_INT)", 4 * M, M, 1);
    elements(resized, "the resized vector", M / 2 * 4, M / 2, 1);
    elements(resized, "the resized vector", 12, 3, MPI_UNDEFINED);
    elements(four, "contiguous(4, contiguous(INT_MAX, MPI_INT))", 16 * M, 4 * M, 1);
    elements(sub, "the subarray", 2305843005992468481LL, 2305843005992468481LL, 1);
    elements(strct, "the struct", 25769803764LL, 2 * M, 1);
    MPI_CHK(MPI_Type_free(&four));

    int ci[3] = {INT_MAX, 0, 0};
    envelope(chars, "contiguous(INT_MAX, MPI_CHAR)", MPI_COMBINER_CONTIGUOUS, 1, 0, ci, NULL);
    int vi[3] = {INT_MAX / 2, 1, 3};
    envelope(vec, "the vector", MPI_COMBINER_VECTOR, 3, 0, vi, NULL);
    MPI_Aint ra[2] = {0, 12};
    envelope(resized, "the resized vector", MPI_COMBINER_RESIZED, 0, 2, NULL, ra);
}

/* `call` must fail with MPI_ERR_ARG or MPI_ERR_TYPE. */
#define EXPECT_OVERFLOW(call, what)                                                                                    \
    do {                                                                                                               \
        int rc_ = (call), class_ = -1;                                                                                 \
        CHECK(rc_ != MPI_SUCCESS, "%s succeeded: its size or extent passes 64 bits", (what));                          \
        MPI_Error_class(rc_, &class_);                                                                                 \
        CHECK(class_ == MPI_ERR_ARG || class_ == MPI_ERR_TYPE, "%s: error class %d (%s), expected MPI_ERR_ARG",      \
              (what), class_, t_errstr(rc_));                                                                          \
    } while (0)

static void overflow(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_CHK(MPI_Get_library_version(lib, &len));
    if (!strstr(lib, "Billboard"))
        return; /* MPICH 4.0.2 wraps these silently (an extent of -2199023255536 for the hvector). */
    MPI_Datatype t = MPI_DATATYPE_NULL, big;
    EXPECT_OVERFLOW(MPI_Type_create_hvector(INT_MAX, 2, (MPI_Aint)1 << 40, MPI_DOUBLE, &t),
                    "MPI_Type_create_hvector(INT_MAX, 2, 2^40, MPI_DOUBLE)");
    EXPECT_OVERFLOW(MPI_Type_vector(3, 1, -INT_MAX, ints, &t), "MPI_Type_vector(3, 1, -INT_MAX, 8 GB contiguous)");
    MPI_CHK(MPI_Type_contiguous(INT_MAX, chars, &big)); /* INT_MAX^2 bytes: fits */
    EXPECT_OVERFLOW(MPI_Type_contiguous(3, big, &t), "MPI_Type_contiguous(3, INT_MAX^2 bytes)");
    EXPECT_OVERFLOW(MPI_Type_create_resized(MPI_INT, (MPI_Aint)1 << 62, (MPI_Aint)1 << 62, &t),
                    "MPI_Type_create_resized(MPI_INT, 2^62, 2^62)");
    MPI_Count sx = -1;
    MPI_CHK(MPI_Type_size_x(big, &sx));
    CHECK_EQ(sx, (long long)INT_MAX * INT_MAX, "MPI_Type_size_x of INT_MAX^2 bytes");
    MPI_CHK(MPI_Type_free(&big));
}

static void message(void)
{
    if (t_size < 2 || t_rank > 1)
        return;
    enum { SENT = 5, SPAN = 3 * SENT + 16 };
    long before = maxrss_kb();
    if (t_rank == 0) {
        int data[SENT];
        for (int i = 0; i < SENT; i++)
            data[i] = 1000 + i;
        MPI_CHK(MPI_Send(data, SENT, MPI_INT, 1, 3, MPI_COMM_WORLD));
        MPI_CHK(MPI_Send(data, 2, MPI_INT, 1, 4, MPI_COMM_WORLD));
        return;
    }
    /* One instance of the resized vector describes 4 GB; the message fills 5 of its ints, and
     * only those are touched (the rest of the buffer is a guard). */
    int buf[SPAN];
    for (int i = 0; i < SPAN; i++)
        buf[i] = -1;
    MPI_Status st;
    MPI_CHK(MPI_Recv(buf, 1, resized, 0, 3, MPI_COMM_WORLD, &st));
    for (int i = 0; i < SPAN; i++) {
        int want = i % 3 == 0 && i / 3 < SENT ? 1000 + i / 3 : -1;
        CHECK(buf[i] == want, "int %d of the receive buffer is %d, expected %d", i, buf[i], want);
    }
    int n = -1;
    MPI_CHK(MPI_Get_elements(&st, resized, &n));
    CHECK_EQ(n, SENT, "MPI_Get_elements of the short message");
    MPI_CHK(MPI_Get_count(&st, resized, &n));
    CHECK_EQ(n, MPI_UNDEFINED, "MPI_Get_count of the short message");
    /* Non-blocking, into the plain (unresized) vector. */
    MPI_Request r;
    MPI_CHK(MPI_Irecv(buf, 1, vec, 0, 4, MPI_COMM_WORLD, &r));
    MPI_CHK(MPI_Wait(&r, &st));
    CHECK(buf[0] == 1000 && buf[3] == 1001 && buf[6] == 1002, "Irecv into the vector: %d %d %d", buf[0], buf[3],
          buf[6]);
    long grown = maxrss_kb() - before;
    CHECK(grown < 64 * 1024, "receiving into the huge type grew the process by %ld MB (ru_maxrss)", grown / 1024);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "datatypes_huge", 1);
    const char *only = argc > 1 ? argv[1] : "";
    construct();
    if (!*only || !strcmp(only, "queries"))
        queries();
    if (!*only || !strcmp(only, "overflow"))
        overflow();
    if (!*only || !strcmp(only, "message"))
        message();
    MPI_Type_free(&chars);
    MPI_Type_free(&ints);
    MPI_Type_free(&vec);
    MPI_Type_free(&resized);
    MPI_Type_free(&sub);
    MPI_Type_free(&strct);
    MPI_Type_free(&darray);
    return t_finish();
}
