/* Attributes: predefined communicator attributes (MPI_TAG_UB, MPI_HOST, MPI_IO,
 * MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM); communicator keyvals with copy/delete
 * callbacks and extra_state on dup/free/delete/overwrite; MPI_COMM_NULL_COPY_FN, MPI_COMM_DUP_FN;
 * type keyvals on Type_dup/Type_free; COMM_SELF attributes deleted first in MPI_Finalize; the order
 * of callbacks (MPICH's): on communicators the most recently set first, for copies and deletes (MPI
 * asks for last-in-first-out on MPI_COMM_SELF at MPI_Finalize), on datatypes and windows the first
 * set first. */
#include "common.h"

static int copies, deletes, self_deleted;
static int extra = 1234;

static int copy_fn(MPI_Comm old, int key, void *extra_state, void *in, void *out, int *flag)
{
    (void)old;
    (void)key;
    if (extra_state != &extra)
        FAIL("copy callback: extra_state %p, expected %p", extra_state, (void *)&extra);
    copies++;
    *(void **)out = (void *)((char *)in + 1); /* value + 1 */
    *flag = 1;
    return MPI_SUCCESS;
}
static int no_copy_fn(MPI_Comm old, int key, void *extra_state, void *in, void *out, int *flag)
{
    (void)old, (void)key, (void)extra_state, (void)in, (void)out;
    copies++;
    *flag = 0;
    return MPI_SUCCESS;
}
static int delete_fn(MPI_Comm c, int key, void *val, void *extra_state)
{
    (void)c, (void)key, (void)val;
    if (extra_state != &extra)
        FAIL("delete callback: extra_state %p, expected %p", extra_state, (void *)&extra);
    deletes++;
    return MPI_SUCCESS;
}
static int self_delete_fn(MPI_Comm c, int key, void *val, void *extra_state)
{
    (void)key, (void)extra_state;
    if (c == MPI_COMM_SELF && val == (void *)0x5e1f)
        self_deleted++;
    return MPI_SUCCESS;
}
/* Callbacks that log the value they see, to check their order. */
static long order[16];
static int norder;
static void log_value(void *val)
{
    if (norder < 16)
        order[norder++] = (long)val;
}
static int order_copy_fn(MPI_Comm c, int key, void *es, void *in, void *out, int *flag)
{
    (void)c, (void)key, (void)es;
    log_value(in);
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int order_delete_fn(MPI_Comm c, int key, void *val, void *es)
{
    (void)c, (void)key, (void)es;
    log_value(val);
    return MPI_SUCCESS;
}
static int order_type_delete_fn(MPI_Datatype t, int key, void *val, void *es)
{
    return order_delete_fn((MPI_Comm)t, key, val, es);
}
static int order_win_delete_fn(MPI_Win w, int key, void *val, void *es)
{
    return order_delete_fn((MPI_Comm)w, key, val, es);
}
static void expect_order(const long *want, int n, const char *what)
{
    CHECK(norder == n, "%s: %d callbacks, expected %d", what, norder, n);
    for (int i = 0; i < n; i++)
        CHECK(order[i] == want[i], "%s: callback %d saw value %ld, expected %ld", what, i, order[i], want[i]);
    norder = 0;
}

static int tcopies, tdeletes;
static int type_copy_fn(MPI_Datatype t, int key, void *es, void *in, void *out, int *flag)
{
    (void)t, (void)key, (void)es;
    tcopies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int type_delete_fn(MPI_Datatype t, int key, void *val, void *es)
{
    (void)t, (void)key, (void)val, (void)es;
    tdeletes++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "attr", 1);
    int flag = 0;
    int *ip = NULL;

    /* ---- Predefined attributes. */
    MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ip, &flag));
    CHECK(flag && ip, "MPI_TAG_UB not set");
    CHECK(*ip >= 32767, "MPI_TAG_UB = %d, must be >= 32767", *ip);
    int tag_ub = *ip;
    MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &ip, &flag));
    CHECK(flag && ip, "MPI_HOST not set");
    CHECK(*ip == MPI_PROC_NULL || (*ip >= 0 && *ip < t_size), "MPI_HOST = %d", *ip);
    MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &ip, &flag));
    CHECK(flag && ip, "MPI_IO not set");
    CHECK(*ip == MPI_ANY_SOURCE || *ip == MPI_PROC_NULL || (*ip >= 0 && *ip < t_size), "MPI_IO = %d", *ip);
    MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &ip, &flag));
    if (flag)
        CHECK(*ip == 0 || *ip == 1, "MPI_WTIME_IS_GLOBAL = %d", *ip);
    MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &ip, &flag));
    if (flag)
        CHECK(*ip >= t_size, "MPI_UNIVERSE_SIZE = %d < world size %d", *ip, t_size);
    MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &ip, &flag));
    if (flag)
        CHECK_EQ(*ip, 0, "MPI_APPNUM of a single-program launch");
    /* A tag of TAG_UB works. */
    {
        int v = 3, w = 0;
        MPI_Request r;
        MPI_CHK(MPI_Isend(&v, 1, MPI_INT, t_rank, tag_ub, MPI_COMM_WORLD, &r));
        MPI_Status st;
        MPI_CHK(MPI_Recv(&w, 1, MPI_INT, t_rank, tag_ub, MPI_COMM_WORLD, &st));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK_EQ(st.MPI_TAG, tag_ub, "status tag of a message with tag MPI_TAG_UB");
    }
    /* Predefined attributes are on dups too. */
    {
        MPI_Comm d;
        MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        MPI_CHK(MPI_Comm_get_attr(d, MPI_TAG_UB, &ip, &flag));
        CHECK(flag && *ip == tag_ub, "MPI_TAG_UB on a dup: flag %d", flag);
        MPI_CHK(MPI_Comm_free(&d));
    }

    /* ---- User keyvals on communicators. */
    int key = MPI_KEYVAL_INVALID, key_nocopy, key_null, key_dup;
    MPI_CHK(MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &extra));
    CHECK(key != MPI_KEYVAL_INVALID, "Comm_create_keyval gave MPI_KEYVAL_INVALID");
    MPI_CHK(MPI_Comm_create_keyval(no_copy_fn, delete_fn, &key_nocopy, &extra));
    MPI_CHK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &key_null, NULL));
    MPI_CHK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &key_dup, NULL));

    MPI_Comm c;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    void *val = NULL;
    MPI_CHK(MPI_Comm_get_attr(c, key, &val, &flag));
    CHECK_EQ(flag, 0, "get_attr of an unset keyval");
    MPI_CHK(MPI_Comm_set_attr(c, key, (void *)100));
    MPI_CHK(MPI_Comm_set_attr(c, key_nocopy, (void *)200));
    MPI_CHK(MPI_Comm_set_attr(c, key_null, (void *)300));
    MPI_CHK(MPI_Comm_set_attr(c, key_dup, (void *)400));
    MPI_CHK(MPI_Comm_get_attr(c, key, &val, &flag));
    CHECK(flag && val == (void *)100, "get_attr after set: flag %d value %p", flag, val);
    CHECK_EQ(deletes, 0, "delete callbacks before any delete");

    /* Overwrite calls the delete callback on the old value. */
    MPI_CHK(MPI_Comm_set_attr(c, key, (void *)101));
    CHECK_EQ(deletes, 1, "delete callbacks after overwriting an attribute");

    /* Dup: copy callbacks run for key (copied +1) and key_nocopy (not copied). */
    MPI_Comm c2;
    MPI_CHK(MPI_Comm_dup(c, &c2));
    CHECK_EQ(copies, 2, "copy callbacks run on dup");
    MPI_CHK(MPI_Comm_get_attr(c2, key, &val, &flag));
    CHECK(flag && val == (void *)102, "copied attribute: flag %d value %p (expected 0x66)", flag, val);
    MPI_CHK(MPI_Comm_get_attr(c2, key_nocopy, &val, &flag));
    CHECK_EQ(flag, 0, "attribute whose copy callback said no");
    MPI_CHK(MPI_Comm_get_attr(c2, key_null, &val, &flag));
    CHECK_EQ(flag, 0, "attribute with MPI_COMM_NULL_COPY_FN");
    MPI_CHK(MPI_Comm_get_attr(c2, key_dup, &val, &flag));
    CHECK(flag && val == (void *)400, "attribute with MPI_COMM_DUP_FN: flag %d value %p", flag, val);
    /* The original is unchanged. */
    MPI_CHK(MPI_Comm_get_attr(c, key, &val, &flag));
    CHECK(flag && val == (void *)101, "original after dup: %p", val);

    /* Delete_attr runs the delete callback; get then reports no attribute. */
    deletes = 0;
    MPI_CHK(MPI_Comm_delete_attr(c2, key));
    CHECK_EQ(deletes, 1, "delete callback on Comm_delete_attr");
    MPI_CHK(MPI_Comm_get_attr(c2, key, &val, &flag));
    CHECK_EQ(flag, 0, "get_attr after delete_attr");
    MPI_CHK(MPI_Comm_set_attr(c2, key, (void *)7));

    /* Freeing the keyval leaves existing attributes usable until their communicators go away. */
    int key_copy = key;
    MPI_CHK(MPI_Comm_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "Comm_free_keyval did not set MPI_KEYVAL_INVALID");
    MPI_CHK(MPI_Comm_get_attr(c2, key_copy, &val, &flag));
    CHECK(flag && val == (void *)7, "attribute after its keyval was freed: flag %d", flag);

    /* Free: delete callbacks of key (c2, c) and key_nocopy (c only). */
    deletes = 0;
    MPI_CHK(MPI_Comm_free(&c2));
    CHECK_EQ(deletes, 1, "delete callbacks when freeing the dup");
    MPI_CHK(MPI_Comm_free(&c));
    CHECK_EQ(deletes, 3, "delete callbacks when freeing the original");
    MPI_CHK(MPI_Comm_free_keyval(&key_nocopy));
    MPI_CHK(MPI_Comm_free_keyval(&key_null));
    MPI_CHK(MPI_Comm_free_keyval(&key_dup));

    /* ---- Attributes on MPI_COMM_WORLD (no dup involved). */
    {
        int k;
        MPI_CHK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &k, &extra));
        deletes = 0;
        MPI_CHK(MPI_Comm_set_attr(MPI_COMM_WORLD, k, &extra));
        MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, k, &val, &flag));
        CHECK(flag && val == &extra, "attribute on MPI_COMM_WORLD");
        MPI_CHK(MPI_Comm_delete_attr(MPI_COMM_WORLD, k));
        CHECK_EQ(deletes, 1, "delete callback on world");
        MPI_CHK(MPI_Comm_free_keyval(&k));
    }

    /* ---- Type attributes. */
    {
        int tk;
        MPI_CHK(MPI_Type_create_keyval(type_copy_fn, type_delete_fn, &tk, NULL));
        MPI_Datatype t, t2;
        MPI_CHK(MPI_Type_contiguous(3, MPI_INT, &t));
        MPI_CHK(MPI_Type_set_attr(t, tk, (void *)55));
        MPI_CHK(MPI_Type_get_attr(t, tk, &val, &flag));
        CHECK(flag && val == (void *)55, "type attribute: flag %d value %p", flag, val);
        MPI_CHK(MPI_Type_dup(t, &t2));
        CHECK_EQ(tcopies, 1, "type copy callback on Type_dup");
        MPI_CHK(MPI_Type_get_attr(t2, tk, &val, &flag));
        CHECK(flag && val == (void *)55, "type attribute on the dup: flag %d value %p", flag, val);
        MPI_CHK(MPI_Type_delete_attr(t2, tk));
        CHECK_EQ(tdeletes, 1, "type delete callback on Type_delete_attr");
        MPI_CHK(MPI_Type_free(&t2));
        CHECK_EQ(tdeletes, 1, "type delete callbacks after freeing a type without the attribute");
        MPI_CHK(MPI_Type_free(&t));
        CHECK_EQ(tdeletes, 2, "type delete callback on Type_free");
        /* Attributes on a predefined type. */
        MPI_CHK(MPI_Type_set_attr(MPI_DOUBLE, tk, (void *)66));
        MPI_CHK(MPI_Type_get_attr(MPI_DOUBLE, tk, &val, &flag));
        CHECK(flag && val == (void *)66, "attribute on MPI_DOUBLE");
        MPI_CHK(MPI_Type_delete_attr(MPI_DOUBLE, tk));
        CHECK_EQ(tdeletes, 3, "type delete callback on MPI_DOUBLE");
        MPI_CHK(MPI_Type_free_keyval(&tk));
        CHECK(tk == MPI_KEYVAL_INVALID, "Type_free_keyval did not set MPI_KEYVAL_INVALID");
    }

    /* ---- Order of callbacks: on a communicator the attribute set last comes first, on a datatype
     * or window the first set; setting a value again keeps the attribute's place (its old value is
     * deleted at once). */
    int ok[3];
    for (int i = 0; i < 3; i++)
        MPI_CHK(MPI_Comm_create_keyval(order_copy_fn, order_delete_fn, &ok[i], NULL));
    {
        MPI_Comm a, b;
        MPI_CHK(MPI_Comm_dup(MPI_COMM_SELF, &a));
        MPI_CHK(MPI_Comm_set_attr(a, ok[1], (void *)1));
        MPI_CHK(MPI_Comm_set_attr(a, ok[0], (void *)2));
        MPI_CHK(MPI_Comm_set_attr(a, ok[2], (void *)3));
        MPI_CHK(MPI_Comm_set_attr(a, ok[1], (void *)4));
        const long reset[] = {1};
        expect_order(reset, 1, "delete callback of a value set again");
        MPI_CHK(MPI_Comm_dup(a, &b));
        const long lifo[] = {3, 2, 4};
        expect_order(lifo, 3, "copy callbacks of Comm_dup");
        MPI_CHK(MPI_Comm_free(&b));
        expect_order(lifo, 3, "delete callbacks of Comm_free of the dup");
        MPI_CHK(MPI_Comm_free(&a));
        expect_order(lifo, 3, "delete callbacks of Comm_free");
    }
    {
        int tk[2];
        for (int i = 0; i < 2; i++)
            MPI_CHK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, order_type_delete_fn, &tk[i], NULL));
        MPI_Datatype t;
        MPI_CHK(MPI_Type_contiguous(2, MPI_INT, &t));
        MPI_CHK(MPI_Type_set_attr(t, tk[1], (void *)1));
        MPI_CHK(MPI_Type_set_attr(t, tk[0], (void *)2));
        MPI_CHK(MPI_Type_set_attr(t, tk[1], (void *)3));
        const long reset[] = {1};
        expect_order(reset, 1, "type delete callback of a value set again");
        MPI_CHK(MPI_Type_free(&t));
        const long fifo[] = {3, 2};
        expect_order(fifo, 2, "delete callbacks of Type_free");
        int wk[2];
        for (int i = 0; i < 2; i++)
            MPI_CHK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, order_win_delete_fn, &wk[i], NULL));
        MPI_Win w;
        MPI_CHK(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_SELF, &w));
        MPI_CHK(MPI_Win_set_attr(w, wk[1], (void *)1));
        MPI_CHK(MPI_Win_set_attr(w, wk[0], (void *)2));
        MPI_CHK(MPI_Win_free(&w));
        const long wfifo[] = {1, 2};
        expect_order(wfifo, 2, "delete callbacks of Win_free");
    }
    /* On MPI_COMM_SELF at MPI_Finalize (checked after it, below). */
    MPI_CHK(MPI_Comm_set_attr(MPI_COMM_SELF, ok[1], (void *)1));
    MPI_CHK(MPI_Comm_set_attr(MPI_COMM_SELF, ok[0], (void *)2));
    MPI_CHK(MPI_Comm_set_attr(MPI_COMM_SELF, ok[2], (void *)3));

    /* ---- An attribute on MPI_COMM_SELF is deleted (callback run) inside MPI_Finalize. */
    int sk;
    MPI_CHK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &sk, NULL));
    MPI_CHK(MPI_Comm_set_attr(MPI_COMM_SELF, sk, (void *)0x5e1f));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int rank = t_rank;
    CHECK_EQ(self_deleted, 0, "COMM_SELF delete callback before Finalize");
    if (MPI_Finalize() != MPI_SUCCESS) {
        printf("FAIL attr: MPI_Finalize failed (rank %d)\n", rank);
        return 1;
    }
    if (self_deleted != 1) {
        printf("FAIL attr: COMM_SELF attribute delete callback ran %d times in MPI_Finalize, expected 1 (rank %d)\n",
               self_deleted, rank);
        return 1;
    }
    const long self_lifo[] = {3, 2, 1};
    for (int i = 0; i < 3; i++)
        if (norder != 3 || order[i] != self_lifo[i]) {
            printf("FAIL attr: COMM_SELF delete callback %d at MPI_Finalize saw %ld of %d, expected %ld (rank %d)\n", i,
                   i < norder ? order[i] : -1L, norder, self_lifo[i], rank);
            return 1;
        }
    if (rank == 0)
        printf("PASS attr\n");
    return 0;
}
