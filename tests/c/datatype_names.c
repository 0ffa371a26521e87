/* Datatype names: MPI_Type_get_name of every predefined datatype (C, pair, Fortran, C++, MPI_AINT,
 * MPI_OFFSET, MPI_COUNT ...) gives MPICH 4.0.2's name; MPI_Type_set_name renames predefined and
 * derived types; a new type has the empty name; MPI_DATATYPE_NULL is MPI_ERR_TYPE. Any N >= 1. */
#include "common.h"

static void expect_name(MPI_Datatype t, const char *want, const char *what)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    name[0] = 0;
    MPI_CHK(MPI_Type_get_name(t, name, &len));
    CHECK(!strcmp(name, want) && len == (int)strlen(want), "Type_get_name(%s): \"%s\" (length %d), expected \"%s\"",
          what, name, len, want);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "datatype_names", 1);
    /* The names MPICH 4.0.2 gives (from a program asking it for each). */
    static const struct {
        MPI_Datatype t;
        const char *constant, *name;
    } all[] = {
        {MPI_CHAR, "MPI_CHAR", "MPI_CHAR"},
        {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", "MPI_SIGNED_CHAR"},
        {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", "MPI_UNSIGNED_CHAR"},
        {MPI_BYTE, "MPI_BYTE", "MPI_BYTE"},
        {MPI_WCHAR, "MPI_WCHAR", "MPI_WCHAR"},
        {MPI_SHORT, "MPI_SHORT", "MPI_SHORT"},
        {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", "MPI_UNSIGNED_SHORT"},
        {MPI_INT, "MPI_INT", "MPI_INT"},
        {MPI_UNSIGNED, "MPI_UNSIGNED", "MPI_UNSIGNED"},
        {MPI_LONG, "MPI_LONG", "MPI_LONG"},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", "MPI_UNSIGNED_LONG"},
        {MPI_FLOAT, "MPI_FLOAT", "MPI_FLOAT"},
        {MPI_DOUBLE, "MPI_DOUBLE", "MPI_DOUBLE"},
        {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", "MPI_LONG_DOUBLE"},
        {MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", "MPI_LONG_LONG_INT"},
        {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", "MPI_UNSIGNED_LONG_LONG"},
        {MPI_PACKED, "MPI_PACKED", "MPI_PACKED"},
        {MPI_LB, "MPI_LB", "MPI_LB"},
        {MPI_UB, "MPI_UB", "MPI_UB"},
        {MPI_FLOAT_INT, "MPI_FLOAT_INT", "MPI_FLOAT_INT"},
        {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", "MPI_DOUBLE_INT"},
        {MPI_LONG_INT, "MPI_LONG_INT", "MPI_LONG_INT"},
        {MPI_SHORT_INT, "MPI_SHORT_INT", "MPI_SHORT_INT"},
        {MPI_2INT, "MPI_2INT", "MPI_2INT"},
        {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", "MPI_LONG_DOUBLE_INT"},
        {MPI_COMPLEX, "MPI_COMPLEX", "MPI_COMPLEX"},
        {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", "MPI_DOUBLE_COMPLEX"},
        {MPI_LOGICAL, "MPI_LOGICAL", "MPI_LOGICAL"},
        {MPI_REAL, "MPI_REAL", "MPI_REAL"},
        {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", "MPI_DOUBLE_PRECISION"},
        {MPI_INTEGER, "MPI_INTEGER", "MPI_INTEGER"},
        {MPI_2INTEGER, "MPI_2INTEGER", "MPI_2INTEGER"},
        {MPI_2REAL, "MPI_2REAL", "MPI_2REAL"},
        {MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", "MPI_2DOUBLE_PRECISION"},
        {MPI_CHARACTER, "MPI_CHARACTER", "MPI_CHARACTER"},
        {MPI_REAL4, "MPI_REAL4", "MPI_REAL4"},
        {MPI_REAL8, "MPI_REAL8", "MPI_REAL8"},
        {MPI_REAL16, "MPI_REAL16", "MPI_REAL16"},
        {MPI_COMPLEX8, "MPI_COMPLEX8", "MPI_COMPLEX8"},
        {MPI_COMPLEX16, "MPI_COMPLEX16", "MPI_COMPLEX16"},
        {MPI_COMPLEX32, "MPI_COMPLEX32", "MPI_COMPLEX32"},
        {MPI_INTEGER1, "MPI_INTEGER1", "MPI_INTEGER1"},
        {MPI_INTEGER2, "MPI_INTEGER2", "MPI_INTEGER2"},
        {MPI_INTEGER4, "MPI_INTEGER4", "MPI_INTEGER4"},
        {MPI_INTEGER8, "MPI_INTEGER8", "MPI_INTEGER8"},
        {MPI_INT8_T, "MPI_INT8_T", "MPI_INT8_T"},
        {MPI_INT16_T, "MPI_INT16_T", "MPI_INT16_T"},
        {MPI_INT32_T, "MPI_INT32_T", "MPI_INT32_T"},
        {MPI_INT64_T, "MPI_INT64_T", "MPI_INT64_T"},
        {MPI_UINT8_T, "MPI_UINT8_T", "MPI_UINT8_T"},
        {MPI_UINT16_T, "MPI_UINT16_T", "MPI_UINT16_T"},
        {MPI_UINT32_T, "MPI_UINT32_T", "MPI_UINT32_T"},
        {MPI_UINT64_T, "MPI_UINT64_T", "MPI_UINT64_T"},
        {MPI_C_BOOL, "MPI_C_BOOL", "MPI_C_BOOL"},
        {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", "MPI_C_COMPLEX"},
        {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", "MPI_C_DOUBLE_COMPLEX"},
        {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", "MPI_C_LONG_DOUBLE_COMPLEX"},
        {MPI_AINT, "MPI_AINT", "MPI_AINT"},
        {MPI_OFFSET, "MPI_OFFSET", "MPI_OFFSET"},
        {MPI_COUNT, "MPI_COUNT", "MPI_COUNT"},
        {MPI_CXX_BOOL, "MPI_CXX_BOOL", "MPI_CXX_BOOL"},
        {MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", "MPI_CXX_FLOAT_COMPLEX"},
        {MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", "MPI_CXX_DOUBLE_COMPLEX"},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", "MPI_CXX_LONG_DOUBLE_COMPLEX"},
        {MPI_C_COMPLEX, "MPI_C_COMPLEX", "MPI_C_COMPLEX"},
        {MPI_LONG_LONG, "MPI_LONG_LONG", "MPI_LONG_LONG_INT"},
#ifdef MPIX_C_FLOAT16
        {MPIX_C_FLOAT16, "MPIX_C_FLOAT16", ""},
#endif
    };
    for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
        expect_name(all[i].t, all[i].name, all[i].constant);

    /* Predefined types can be renamed (a basic and a pair type); the others keep their names. */
    MPI_CHK(MPI_Type_set_name(MPI_CHAR, "my char"));
    expect_name(MPI_CHAR, "my char", "MPI_CHAR after Type_set_name");
    MPI_CHK(MPI_Type_set_name(MPI_FLOAT_INT, "my pair"));
    expect_name(MPI_FLOAT_INT, "my pair", "MPI_FLOAT_INT after Type_set_name");
    expect_name(MPI_INT, "MPI_INT", "MPI_INT beside a renamed type");
    MPI_CHK(MPI_Type_set_name(MPI_CHAR, "MPI_CHAR"));

    /* Derived types: empty until named (a dup does not take its parent's name). */
    MPI_Datatype dup, contig;
    MPI_CHK(MPI_Type_dup(MPI_INT, &dup));
    expect_name(dup, "", "a dup of MPI_INT");
    MPI_CHK(MPI_Type_contiguous(3, MPI_DOUBLE, &contig));
    expect_name(contig, "", "a new contiguous type");
    MPI_CHK(MPI_Type_set_name(contig, "three doubles"));
    expect_name(contig, "three doubles", "a named contiguous type");
    MPI_CHK(MPI_Type_free(&dup));
    MPI_CHK(MPI_Type_free(&contig));

    /* MPI_DATATYPE_NULL has no name. */
    char name[MPI_MAX_OBJECT_NAME];
    int len, cls = -1;
    int rc = MPI_Type_get_name(MPI_DATATYPE_NULL, name, &len);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_TYPE, "class of Type_get_name(MPI_DATATYPE_NULL)");
    rc = MPI_Type_set_name(MPI_DATATYPE_NULL, "nothing");
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_TYPE, "class of Type_set_name(MPI_DATATYPE_NULL)");
    return t_finish();
}
