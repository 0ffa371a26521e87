/* Parameterized Fortran 90 types (MPI_Type_create_f90_integer/real/complex, MPI 3.1 17.1.9), as
 * MPICH 4.0.2 makes them: the smallest sized type for the range r (and precision p), integers of
 * 1, 2, 4, 8 bytes up to r = 2, 4, 9, 18, reals of 4 and 8 bytes up to (6, 37) and (15, 307),
 * complexes twice that; MPI_UNDEFINED asks for nothing. The result is predefined: usable without a
 * commit, the same arguments give the same handle, the envelope names the F90 combiner and its
 * arguments. Too large a range or precision is an error (MPI_ERR_OTHER on MPICH). A broadcast and
 * a sum move data through one. Any N >= 1. */
#include "common.h"

static void check_type(MPI_Datatype t, int combiner, int nints, int p, int r, int size, const char *what)
{
    int got, ni, na, nd, comb;
    MPI_Aint lb, ext;
    MPI_CHK(MPI_Type_size(t, &got));
    CHECK_EQ(got, size, what);
    MPI_CHK(MPI_Type_get_extent(t, &lb, &ext));
    CHECK(lb == 0 && ext == size, "%s: lb %ld extent %ld, expected 0 and %d", what, (long)lb, (long)ext, size);
    MPI_CHK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    CHECK(ni == nints && na == 0 && nd == 0 && comb == combiner, "%s: envelope %d %d %d combiner %d, expected %d 0 0 %d",
          what, ni, na, nd, comb, nints, combiner);
    int ints[2] = {-7, -7};
    MPI_CHK(MPI_Type_get_contents(t, 2, 0, 0, ints, NULL, NULL));
    if (nints == 1)
        CHECK(ints[0] == r, "%s: contents %d, expected r = %d", what, ints[0], r);
    else
        CHECK(ints[0] == p && ints[1] == r, "%s: contents %d %d, expected p = %d r = %d", what, ints[0], ints[1], p, r);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "datatypes_f90", 1);
    char what[96];
    static const int int_cases[][2] = {{1, 1}, {2, 1}, {3, 2}, {4, 2}, {5, 4}, {9, 4}, {10, 8}, {18, 8}, {0, 1},
                                       {MPI_UNDEFINED, 1}};
    for (unsigned i = 0; i < sizeof int_cases / sizeof *int_cases; i++) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        snprintf(what, sizeof what, "MPI_Type_create_f90_integer(%d)", int_cases[i][0]);
        MPI_CHK(MPI_Type_create_f90_integer(int_cases[i][0], &t));
        check_type(t, MPI_COMBINER_F90_INTEGER, 1, 0, int_cases[i][0], int_cases[i][1], what);
    }
    static const int real_cases[][3] = {{1, 1, 4},  {6, 37, 4},   {7, 37, 8}, {6, 38, 8}, {15, 307, 8},
                                        {0, 0, 4}, {MPI_UNDEFINED, 30, 4}, {6, MPI_UNDEFINED, 4}, {15, MPI_UNDEFINED, 8}};
    for (unsigned i = 0; i < sizeof real_cases / sizeof *real_cases; i++) {
        int p = real_cases[i][0], r = real_cases[i][1], size = real_cases[i][2];
        MPI_Datatype t = MPI_DATATYPE_NULL;
        snprintf(what, sizeof what, "MPI_Type_create_f90_real(%d, %d)", p, r);
        MPI_CHK(MPI_Type_create_f90_real(p, r, &t));
        check_type(t, MPI_COMBINER_F90_REAL, 2, p, r, size, what);
        snprintf(what, sizeof what, "MPI_Type_create_f90_complex(%d, %d)", p, r);
        MPI_CHK(MPI_Type_create_f90_complex(p, r, &t));
        check_type(t, MPI_COMBINER_F90_COMPLEX, 2, p, r, 2 * size, what);
    }

    /* Beyond the largest type. */
    MPI_Datatype bad = MPI_DATATYPE_NULL;
    int rc = MPI_Type_create_f90_integer(19, &bad);
    CHECK(rc != MPI_SUCCESS, "MPI_Type_create_f90_integer(19) succeeded (no 19-digit integer type)");
    rc = MPI_Type_create_f90_real(16, 300, &bad);
    CHECK(rc != MPI_SUCCESS, "MPI_Type_create_f90_real(16, 300) succeeded");
    rc = MPI_Type_create_f90_complex(15, 308, &bad);
    CHECK(rc != MPI_SUCCESS, "MPI_Type_create_f90_complex(15, 308) succeeded");

    /* Predefined: one handle per arguments, no commit needed to move data. */
    MPI_Datatype a, b, d;
    MPI_CHK(MPI_Type_create_f90_integer(7, &a));
    MPI_CHK(MPI_Type_create_f90_integer(7, &b));
    CHECK(a == b, "MPI_Type_create_f90_integer(7) twice gave handles %#x and %#x", (unsigned)a, (unsigned)b);
    MPI_CHK(MPI_Type_create_f90_real(10, 100, &d));
    int v[3] = {0, 0, 0};
    if (t_rank == 0)
        v[0] = 11, v[1] = -22, v[2] = 33;
    MPI_CHK(MPI_Bcast(v, 3, a, 0, MPI_COMM_WORLD));
    CHECK(v[0] == 11 && v[1] == -22 && v[2] == 33, "Bcast of 3 f90 integers: %d %d %d", v[0], v[1], v[2]);
    double x[2] = {t_rank + 0.5, 2.0 * t_rank}, sum[2] = {0, 0};
    MPI_CHK(MPI_Allreduce(x, sum, 2, d, MPI_SUM, MPI_COMM_WORLD));
    double n = t_size;
    CHECK(sum[0] == n * (n - 1) / 2 + n / 2 && sum[1] == n * (n - 1), "Allreduce SUM of f90 reals: %g %g", sum[0], sum[1]);

    /* A derived type built on one is an ordinary derived type. */
    MPI_Datatype pair;
    MPI_CHK(MPI_Type_contiguous(2, a, &pair));
    MPI_CHK(MPI_Type_commit(&pair));
    int ni, na, nd, comb;
    MPI_CHK(MPI_Type_get_envelope(pair, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_CONTIGUOUS && ni == 1 && nd == 1, "contiguous of an f90 type: combiner %d", comb);
    MPI_Datatype inner;
    MPI_CHK(MPI_Type_get_contents(pair, 1, 0, 1, &ni, NULL, &inner));
    CHECK(inner == a, "contents of contiguous(2, f90): type %#x, expected %#x", (unsigned)inner, (unsigned)a);
    MPI_CHK(MPI_Type_free(&pair));
    return t_finish();
}
