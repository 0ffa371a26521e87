/* Windows as objects: the predefined attributes (MPI_WIN_BASE, MPI_WIN_SIZE,
 * MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL) of MPI_Win_create and
 * MPI_Win_allocate windows, names (MPI_Win_set_name / get_name), MPI_Win_get_group against
 * the communicator's group, MPI_Win_get_info, user keyvals (MPI_Win_create_keyval,
 * set/get/delete_attr, the delete callback run by MPI_Win_free), windows on a split
 * communicator and a window of size 0. Any N >= 1. */
#include "common.h"

static int deleted, delete_keyval = MPI_KEYVAL_INVALID;
static MPI_Win deleted_from = MPI_WIN_NULL;
static int on_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)extra;
    deleted += *(int *)value;
    deleted_from = win;
    CHECK(keyval == delete_keyval, "delete callback got keyval %d, expected %d", keyval, delete_keyval);
    return MPI_SUCCESS;
}

static void check_attrs(MPI_Win win, void *base, MPI_Aint size, int unit, int flavor)
{
    void *b = NULL;
    MPI_Aint *s = NULL;
    int *u = NULL, *f = NULL, *model = NULL, flag = 0;
    MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_BASE, &b, &flag));
    CHECK(flag && b == base, "MPI_WIN_BASE: flag %d, %p, expected %p", flag, b, base);
    MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &s, &flag));
    CHECK(flag && *s == size, "MPI_WIN_SIZE: flag %d, %ld, expected %ld", flag, (long)*s, (long)size);
    MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &u, &flag));
    CHECK(flag && *u == unit, "MPI_WIN_DISP_UNIT: flag %d, %d, expected %d", flag, *u, unit);
    MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &f, &flag));
    CHECK(flag && *f == flavor, "MPI_WIN_CREATE_FLAVOR: flag %d, %d, expected %d", flag, *f, flavor);
    MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE), "MPI_WIN_MODEL: flag %d, %d", flag,
          *model);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_attr", 1);
    const int me = t_rank;

    /* ---- MPI_Win_create: attributes, name, group, info. */
    double buf[10];
    MPI_Win win;
    MPI_CHK(MPI_Win_create(buf, sizeof buf, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attrs(win, buf, sizeof buf, sizeof(double), MPI_WIN_FLAVOR_CREATE);

    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_CHK(MPI_Win_set_name(win, "my window"));
    MPI_CHK(MPI_Win_get_name(win, name, &len));
    CHECK(strcmp(name, "my window") == 0 && len == 9, "name '%s' (%d), expected 'my window' (9)", name, len);

    MPI_Group wg, cg;
    int result = -1;
    MPI_CHK(MPI_Win_get_group(win, &wg));
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &cg));
    MPI_CHK(MPI_Group_compare(wg, cg, &result));
    CHECK_EQ(result, MPI_IDENT, "window group vs MPI_COMM_WORLD's");
    MPI_CHK(MPI_Group_free(&wg));
    MPI_CHK(MPI_Group_free(&cg));

    MPI_Info info;
    int nkeys = -1;
    MPI_CHK(MPI_Win_get_info(win, &info));
    MPI_CHK(MPI_Info_get_nkeys(info, &nkeys));
    CHECK(nkeys >= 0, "MPI_Win_get_info: %d keys", nkeys);
    MPI_CHK(MPI_Info_free(&info));

    /* ---- User keyvals: set, get, replace (delete callback on the old value), delete at free. */
    int kv = MPI_KEYVAL_INVALID, flag = 0;
    MPI_CHK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, &kv, NULL));
    delete_keyval = kv;
    static int v1 = 1, v2 = 10;
    int *got = NULL;
    MPI_CHK(MPI_Win_get_attr(win, kv, &got, &flag));
    CHECK(flag == 0, "an unset attribute has flag %d", flag);
    MPI_CHK(MPI_Win_set_attr(win, kv, &v1));
    MPI_CHK(MPI_Win_get_attr(win, kv, &got, &flag));
    CHECK(flag && got == &v1, "get_attr: flag %d, %p, expected %p", flag, (void *)got, (void *)&v1);
    MPI_CHK(MPI_Win_set_attr(win, kv, &v2));
    CHECK_EQ(deleted, 1, "delete callback runs when an attribute is replaced");
    MPI_CHK(MPI_Win_delete_attr(win, kv));
    CHECK_EQ(deleted, 11, "delete callback runs on MPI_Win_delete_attr");
    MPI_CHK(MPI_Win_get_attr(win, kv, &got, &flag));
    CHECK(flag == 0, "a deleted attribute has flag %d", flag);
    MPI_CHK(MPI_Win_set_attr(win, kv, &v1));
    MPI_Win before = win;
    MPI_CHK(MPI_Win_free(&win));
    CHECK_EQ(deleted, 12, "delete callback runs on MPI_Win_free");
    CHECK(deleted_from == before, "delete callback got window %#x, expected %#x", (unsigned)deleted_from,
          (unsigned)before);
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free did not set MPI_WIN_NULL");
    MPI_CHK(MPI_Win_free_keyval(&kv));
    CHECK(kv == MPI_KEYVAL_INVALID, "MPI_Win_free_keyval did not reset the keyval");

    /* ---- MPI_Win_allocate on a split communicator; every other rank's window is empty. */
    MPI_Comm half;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half));
    int hsize, hrank;
    MPI_Comm_size(half, &hsize);
    MPI_Comm_rank(half, &hrank);
    MPI_Aint size = (hrank % 2) ? 0 : 24;
    int *mem = NULL;
    MPI_CHK(MPI_Win_allocate(size, 4, MPI_INFO_NULL, half, &mem, &win));
    check_attrs(win, mem, size, 4, MPI_WIN_FLAVOR_ALLOCATE);
    MPI_CHK(MPI_Win_get_name(win, name, &len));
    CHECK(len == (int)strlen(name), "default name '%s' has length %d", name, len);
    MPI_CHK(MPI_Win_get_group(win, &wg));
    MPI_CHK(MPI_Comm_group(half, &cg));
    MPI_CHK(MPI_Group_compare(wg, cg, &result));
    CHECK_EQ(result, MPI_IDENT, "window group vs its communicator's");
    int gsize = -1;
    MPI_Group_size(wg, &gsize);
    CHECK_EQ(gsize, hsize, "window group size");
    MPI_CHK(MPI_Group_free(&wg));
    MPI_CHK(MPI_Group_free(&cg));
    /* Every even member of the half puts its rank into the first even member's window. */
    MPI_CHK(MPI_Win_fence(0, win));
    int mine = 100 + me;
    if (hrank % 2 == 0)
        MPI_CHK(MPI_Put(&mine, 1, MPI_INT, 0, hrank / 2, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_fence(0, win));
    if (hrank == 0)
        for (int r = 0; r < hsize; r += 2) {
            /* Half rank r is world rank me % 2 + 2 * (hsize - 1 - r) (keys reverse the order). */
            int world = me % 2 + 2 * (hsize - 1 - r);
            CHECK(mem[r / 2] == 100 + world, "allocated window [%d] = %d, expected %d", r / 2, mem[r / 2], 100 + world);
        }
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_Comm_free(&half));
    return t_finish();
}
