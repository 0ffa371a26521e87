/* MPI_Status_set_elements / MPI_Status_set_elements_x, and what MPI_Get_count, MPI_Get_elements
 * and MPI_Get_elements_x read from the status afterwards, as MPICH 4.0.2 does it: the status
 * records count times the datatype's size in bytes. For a predefined type that is `count`
 * elements; for a derived type it is `count` instances of it (MPI says basic elements; MPICH
 * and so programs written for it count instances). Read with another datatype, a byte count
 * that is not a whole number of its elements gives MPI_UNDEFINED. Negative counts are
 * MPI_ERR_COUNT, MPI_DATATYPE_NULL is MPI_ERR_TYPE. One rank. */
#include "common.h"

/* Reads the status with `t`: count, elements (int and MPI_Count forms). */
static void expect(const MPI_Status *st, MPI_Datatype t, int count, int elements, MPI_Count elements_x,
                   const char *what)
{
    int c = -5, e = -5;
    MPI_Count ex = -5;
    MPI_CHK(MPI_Get_count(st, t, &c));
    MPI_CHK(MPI_Get_elements(st, t, &e));
    MPI_CHK(MPI_Get_elements_x(st, t, &ex));
    CHECK(c == count && e == elements && ex == elements_x,
          "%s: count %d, elements %d, elements_x %lld; want %d, %d, %lld", what, c, e, (long long)ex, count, elements,
          (long long)elements_x);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "status_elements", 1);
    const int U = MPI_UNDEFINED;
    MPI_Status st;
    MPI_Datatype pair, mixed, vec;
    MPI_CHK(MPI_Type_contiguous(2, MPI_INT, &pair));
    MPI_CHK(MPI_Type_commit(&pair));
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 8};
    MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE};
    MPI_CHK(MPI_Type_create_struct(2, bl, d, ts, &mixed)); /* 12 bytes: an int and a double */
    MPI_CHK(MPI_Type_commit(&mixed));
    MPI_CHK(MPI_Type_vector(3, 1, 2, MPI_SHORT, &vec)); /* 6 bytes: three shorts */
    MPI_CHK(MPI_Type_commit(&vec));

    /* Predefined types: count elements, read back with other types by bytes. */
    MPI_CHK(MPI_Status_set_elements(&st, MPI_INT, 3));
    expect(&st, MPI_INT, 3, 3, 3, "3 MPI_INT");
    expect(&st, MPI_BYTE, 12, 12, 12, "3 MPI_INT read as MPI_BYTE");
    expect(&st, MPI_SHORT, 6, 6, 6, "3 MPI_INT read as MPI_SHORT");
    expect(&st, pair, U, 3, 3, "3 MPI_INT read as a pair of ints (one cut)");
    MPI_CHK(MPI_Status_set_elements(&st, MPI_INT, 2));
    expect(&st, pair, 1, 2, 2, "2 MPI_INT read as a pair of ints");
    MPI_CHK(MPI_Status_set_elements(&st, MPI_DOUBLE_INT, 3));
    expect(&st, MPI_DOUBLE_INT, 3, 6, 6, "3 MPI_DOUBLE_INT");
    MPI_CHK(MPI_Status_set_elements(&st, MPI_BYTE, 0));
    expect(&st, MPI_INT, 0, 0, 0, "0 MPI_BYTE read as MPI_INT");

    /* Derived types: count instances. */
    for (int n = 0; n < 8; n++) {
        char what[64];
        snprintf(what, sizeof what, "set_elements(pair, %d)", n);
        MPI_CHK(MPI_Status_set_elements(&st, pair, n));
        expect(&st, pair, n, 2 * n, 2 * n, what);
        expect(&st, MPI_INT, 2 * n, 2 * n, 2 * n, what);
        expect(&st, MPI_BYTE, 8 * n, 8 * n, 8 * n, what);
        snprintf(what, sizeof what, "set_elements(mixed, %d)", n);
        MPI_CHK(MPI_Status_set_elements(&st, mixed, n));
        expect(&st, mixed, n, 2 * n, 2 * n, what);
        expect(&st, MPI_INT, 3 * n, 3 * n, 3 * n, what);
        /* 12 n bytes are whole doubles for even n only. */
        int doubles = n % 2 ? U : 3 * n / 2;
        expect(&st, MPI_DOUBLE, doubles, doubles, doubles, what);
        snprintf(what, sizeof what, "set_elements_x(vector of 3 shorts, %d)", n);
        MPI_CHK(MPI_Status_set_elements_x(&st, vec, (MPI_Count)n));
        expect(&st, vec, n, 3 * n, 3 * n, what);
        expect(&st, MPI_SHORT, 3 * n, 3 * n, 3 * n, what);
    }

    /* More bytes than an int counts: only the MPI_Count form tells. */
    MPI_CHK(MPI_Status_set_elements_x(&st, MPI_BYTE, (MPI_Count)1 << 33));
    expect(&st, MPI_BYTE, U, U, (MPI_Count)1 << 33, "2^33 MPI_BYTE");
    expect(&st, MPI_INT, U, U, (MPI_Count)1 << 31, "2^33 MPI_BYTE read as MPI_INT");
    MPI_CHK(MPI_Status_set_elements_x(&st, pair, (MPI_Count)1 << 30));
    expect(&st, pair, 1 << 30, U, (MPI_Count)1 << 31, "2^30 pairs");

    /* Errors. */
    int class = -1;
    MPI_Error_class(MPI_Status_set_elements(&st, MPI_INT, -1), &class);
    CHECK_EQ(class, MPI_ERR_COUNT, "set_elements with a negative count");
    MPI_Error_class(MPI_Status_set_elements(&st, MPI_DATATYPE_NULL, 1), &class);
    CHECK_EQ(class, MPI_ERR_TYPE, "set_elements of MPI_DATATYPE_NULL");

    MPI_CHK(MPI_Type_free(&pair));
    MPI_CHK(MPI_Type_free(&mixed));
    MPI_CHK(MPI_Type_free(&vec));
    return t_finish();
}
