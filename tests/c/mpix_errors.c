/* MPICH's MPIX_Delete_error_class/code/string (MPI 4.1's MPI_Remove_error_*): a deleted
 * string is gone from MPI_Error_string, a deleted code and class can no more be deleted nor
 * given a string or a code, the predefined ones cannot be deleted, and the numbers of deleted
 * classes come back from MPI_Add_error_class (as MPICH 4.0.2 gives them). MPICH 4.0.2 lets a
 * class with codes left be deleted and then crashes in MPI_Error_string of those codes; MPI
 * 4.1 makes that erroneous, so this test deletes the codes first; the checks MPICH 4.0.2
 * fails (it still takes a string for a deleted code, a code for a deleted class) are made
 * against our header only. MPICH 4.0.2 itself still aborts at the end ("double free" in
 * MPIX_Delete_error_code of a code whose number was given again). Any N >= 1. */
#include "common.h"

static int klass(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "mpix_errors", 1);
    int c1, c2, k1, k2, len;
    char s[MPI_MAX_ERROR_STRING];
    MPI_CHK(MPI_Add_error_class(&c1));
    MPI_CHK(MPI_Add_error_class(&c2));
    MPI_CHK(MPI_Add_error_code(c1, &k1));
    MPI_CHK(MPI_Add_error_code(c1, &k2));
    MPI_CHK(MPI_Add_error_string(k1, "first code"));
    MPI_CHK(MPI_Add_error_string(k2, "second code"));

    /* A string deleted: MPI_Error_string gives the empty string, as for a code without one. */
    MPI_CHK(MPIX_Delete_error_string(k2));
    s[0] = 'x';
    MPI_CHK(MPI_Error_string(k2, s, &len));
    CHECK(len == 0 && s[0] == 0, "string of k2 after MPIX_Delete_error_string: '%s' (%d)", s, len);
    MPI_CHK(MPI_Error_string(k1, s, &len));
    CHECK(strcmp(s, "first code") == 0, "string of k1 (not deleted): '%s'", s);
    /* Deleting the string of a code that has none is fine. */
    MPI_CHK(MPIX_Delete_error_string(k2));

    /* A code deleted: deleting it again, or its string, is an error (MPI_ERR_OTHER, as MPICH). */
    MPI_CHK(MPIX_Delete_error_code(k1));
    int rc = MPIX_Delete_error_code(k1);
    CHECK(rc != MPI_SUCCESS, "MPIX_Delete_error_code of a deleted code succeeded");
    CHECK_EQ(klass(rc), MPI_ERR_OTHER, "class of deleting a deleted code");
    rc = MPIX_Delete_error_string(k1);
    CHECK(rc != MPI_SUCCESS, "MPIX_Delete_error_string of a deleted code succeeded");
#ifdef BILLBOARD_MPI
    /* MPICH 4.0.2 still takes a string for a deleted code. */
    rc = MPI_Add_error_string(k1, "again");
    CHECK(rc != MPI_SUCCESS, "MPI_Add_error_string of a deleted code succeeded");
#endif

    /* Predefined classes and codes stay; a class is not a code. */
    CHECK(MPIX_Delete_error_class(MPI_ERR_COMM) != MPI_SUCCESS, "deleted the predefined MPI_ERR_COMM");
    CHECK(MPIX_Delete_error_code(MPI_ERR_RANK) != MPI_SUCCESS, "deleted the predefined code MPI_ERR_RANK");
    CHECK(MPIX_Delete_error_string(MPI_ERR_RANK) != MPI_SUCCESS, "deleted MPI_ERR_RANK's string");
    CHECK(MPIX_Delete_error_code(c1) != MPI_SUCCESS, "MPIX_Delete_error_code took a class");
    MPI_CHK(MPI_Error_string(MPI_ERR_RANK, s, &len));
    CHECK(len > 0, "MPI_ERR_RANK lost its string");

    /* The class, once its codes are gone. */
    MPI_CHK(MPIX_Delete_error_code(k2));
    MPI_CHK(MPIX_Delete_error_class(c1));
    rc = MPIX_Delete_error_class(c1);
    CHECK(rc != MPI_SUCCESS, "MPIX_Delete_error_class of a deleted class succeeded");
    CHECK_EQ(klass(rc), MPI_ERR_OTHER, "class of deleting a deleted class");
    int k3;
#ifdef BILLBOARD_MPI
    /* MPICH 4.0.2 still adds codes to a deleted class. */
    CHECK(MPI_Add_error_code(c1, &k3) != MPI_SUCCESS, "MPI_Add_error_code in a deleted class succeeded");
#endif

    /* Its number comes back, with no string; c2 is untouched. */
    int c3;
    MPI_CHK(MPI_Add_error_class(&c3));
    CHECK_EQ(c3, c1, "MPI_Add_error_class after deleting the first class");
    MPI_CHK(MPI_Error_string(c3, s, &len));
    CHECK_EQ(len, 0, "string length of the new class");
    MPI_CHK(MPI_Add_error_code(c2, &k3));
    int cls = -1;
    MPI_CHK(MPI_Error_class(k3, &cls));
    CHECK_EQ(cls, c2, "class of a new code of c2");
    MPI_CHK(MPIX_Delete_error_code(k3));
    MPI_CHK(MPIX_Delete_error_class(c2));
    MPI_CHK(MPIX_Delete_error_class(c3));
    return t_finish();
}
