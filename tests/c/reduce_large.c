/* Large reductions (vectors cut into one block per rank above a few KiB): Reduce, Allreduce and
 * their I-forms at sizes around the switch points (8 KiB, the 64 KiB segment) and up to 1 MiB,
 * counts that do not divide by the rank count, every root, MPI_IN_PLACE; MPI_SUM on int and
 * MPI_MAX on double; a non-commutative user op (affine maps composed in rank order) on a
 * contiguous derived type of 3 ints (12-byte elements: blocks are cut between elements) and on
 * a resized int with a hole (the hole keeps what the program left there). Any N >= 1. */
#include "common.h"
#include <stdlib.h>
#include <string.h>

static int rank, n;

/* Element k of rank r's contribution. */
static int ival(int r, long k) { return (int)((r * 7 + k * 3) % 11) - 5; }
static double dval(int r, long k) { return (double)((r * 13 + k * 5) % 17); }

/* Affine map x -> a*x + b on 32-bit unsigned ints; (f then g) = g(f(x)). The third int of an
 * element is a checksum that rides along. inout = in ⊕ inout = inout(in(x)). */
typedef struct { unsigned a, b, c; } affine;
static affine aval(int r, long k) { return (affine){(unsigned)(r % 5 + 2), (unsigned)(r * 3 + k % 7 + 1), 0}; }
static void compose(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    affine *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        affine z = {y[i].a * x[i].a, y[i].a * x[i].b + y[i].b, x[i].c + y[i].c + 1};
        y[i] = z;
    }
}
static affine afold(long k)
{
    affine acc = aval(0, k);
    for (int r = 1; r < n; r++) {
        affine f = aval(r, k);
        acc = (affine){f.a * acc.a, f.a * acc.b + f.b, acc.c + f.c + 1};
    }
    return acc;
}

/* Resized int (extent 8: a 4-byte hole after each value), summed by a user op. */
static void add_holed(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++) ((int *)inout)[2 * i] += ((int *)in)[2 * i];
}

static void check_ints(const int *got, long count, const char *what, int root)
{
    for (long k = 0; k < count; k++) {
        int want = 0;
        for (int r = 0; r < n; r++) want += ival(r, k);
        if (got[k] != want) FAIL("%s count %ld root %d: element %ld is %d, expected %d", what, count, root, k, got[k], want);
    }
}

static void check_doubles(const double *got, long count, const char *what)
{
    for (long k = 0; k < count; k++) {
        double want = dval(0, k);
        for (int r = 1; r < n; r++) want = dval(r, k) > want ? dval(r, k) : want;
        if (got[k] != want) FAIL("%s count %ld: element %ld is %g, expected %g", what, count, k, got[k], want);
    }
}

static void check_affine(const affine *got, long count, const char *what, int root)
{
    for (long k = 0; k < count; k++) {
        affine w = afold(k);
        if (got[k].a != w.a || got[k].b != w.b || got[k].c != w.c)
            FAIL("%s count %ld root %d: element %ld is (%u,%u,%u), expected (%u,%u,%u) (rank order lost?)", what, count,
                 root, k, got[k].a, got[k].b, got[k].c, w.a, w.b, w.c);
    }
}

static void ints(long count, int root, int mode)
{
    int *send = malloc(count * sizeof(int) + 1), *recv = malloc(count * sizeof(int) + 1);
    for (long k = 0; k < count; k++) send[k] = recv[k] = ival(rank, k);
    int in_place = mode & 1, nonblocking = mode & 2;
    MPI_Request req;
    const char *what = nonblocking ? "Ireduce(MPI_INT, MPI_SUM)" : "Reduce(MPI_INT, MPI_SUM)";
    /* MPICH 4.0.2 crashes in a blocking MPI_Reduce with MPI_IN_PLACE at a root other than 0
     * above about 8 KiB (it reads the MPI_IN_PLACE sentinel as a buffer): in place only at 0. */
    const void *s = (in_place && rank == root && (nonblocking || root == 0)) ? MPI_IN_PLACE : send;
    if (nonblocking) {
        MPI_CHK(MPI_Ireduce(s, recv, (int)count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &req));
        MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        MPI_CHK(MPI_Reduce(s, recv, (int)count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
    }
    if (rank == root) check_ints(recv, count, what, root);
    for (long k = 0; k < count; k++) recv[k] = ival(rank, k);
    what = nonblocking ? "Iallreduce(MPI_INT, MPI_SUM)" : "Allreduce(MPI_INT, MPI_SUM)";
    s = in_place ? MPI_IN_PLACE : send;
    if (nonblocking) {
        MPI_CHK(MPI_Iallreduce(s, recv, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
        MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        MPI_CHK(MPI_Allreduce(s, recv, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    }
    check_ints(recv, count, what, -1);
    free(send);
    free(recv);
}

static void doubles(long count)
{
    double *send = malloc(count * sizeof(double) + 1), *recv = malloc(count * sizeof(double) + 1);
    for (long k = 0; k < count; k++) send[k] = dval(rank, k);
    MPI_CHK(MPI_Allreduce(send, recv, (int)count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    check_doubles(recv, count, "Allreduce(MPI_DOUBLE, MPI_MAX)");
    free(send);
    free(recv);
}

static void user_ordered(long count, int root, MPI_Datatype t, MPI_Op op)
{
    affine *send = malloc(count * sizeof(affine) + 1), *recv = malloc(count * sizeof(affine) + 1);
    for (long k = 0; k < count; k++) send[k] = recv[k] = aval(rank, k);
    MPI_CHK(MPI_Reduce(rank == root ? MPI_IN_PLACE : send, recv, (int)count, t, op, root, MPI_COMM_WORLD));
    if (rank == root) check_affine(recv, count, "Reduce(3 ints, non-commutative op, in place)", root);
    MPI_CHK(MPI_Allreduce(send, recv, (int)count, t, op, MPI_COMM_WORLD));
    check_affine(recv, count, "Allreduce(3 ints, non-commutative op)", -1);
    free(send);
    free(recv);
}

static void holed(long count, MPI_Datatype t, MPI_Op op)
{
    int *send = malloc(count * 8 + 1), *recv = malloc(count * 8 + 1);
    for (long k = 0; k < count; k++) {
        send[2 * k] = ival(rank, k);
        send[2 * k + 1] = 1000;
        recv[2 * k] = -1;
        recv[2 * k + 1] = 77; /* the hole: must stay */
    }
    MPI_CHK(MPI_Allreduce(send, recv, (int)count, t, op, MPI_COMM_WORLD));
    for (long k = 0; k < count; k++) {
        int want = 0;
        for (int r = 0; r < n; r++) want += ival(r, k);
        CHECK(recv[2 * k] == want, "Allreduce(resized int) count %ld: element %ld is %d, expected %d", count, k,
              recv[2 * k], want);
        CHECK(recv[2 * k + 1] == 77, "Allreduce(resized int) count %ld: hole %ld overwritten with %d", count, k,
              recv[2 * k + 1]);
    }
    free(send);
    free(recv);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "reduce_large", 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* Bytes around the switch points, and counts that no rank count divides. */
    const long bytes[] = {4, 8188, 8192, 8196, 65532, 65536, 65540, 200004, 1048576 + 12};
    for (unsigned i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        long count = bytes[i] / 4;
        for (int root = 0; root < n; root += (n > 2 ? n / 2 : 1))
            for (int mode = 0; mode < 4; mode++) ints(count, root, mode);
        doubles(count / 2 + 1);
    }
    MPI_Datatype three, resized;
    MPI_Op ordered, holed_sum;
    MPI_CHK(MPI_Type_contiguous(3, MPI_INT, &three));
    MPI_CHK(MPI_Type_commit(&three));
    MPI_CHK(MPI_Type_create_resized(MPI_INT, 0, 8, &resized));
    MPI_CHK(MPI_Type_commit(&resized));
    MPI_CHK(MPI_Op_create(compose, 0, &ordered));
    MPI_CHK(MPI_Op_create(add_holed, 1, &holed_sum));
    const long elems[] = {1, 700, 701, 5462, 5463, 40000 + 1};
    for (unsigned i = 0; i < sizeof elems / sizeof elems[0]; i++) {
        user_ordered(elems[i], n - 1, three, ordered);
        user_ordered(elems[i], 0, three, ordered);
        holed(elems[i] * 2, resized, holed_sum);
    }
    MPI_Op_free(&ordered);
    MPI_Op_free(&holed_sum);
    MPI_Type_free(&three);
    MPI_Type_free(&resized);
    return t_finish();
}
