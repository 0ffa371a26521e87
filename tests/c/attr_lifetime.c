/* When attribute delete callbacks run: when the object is destroyed, which is not always when
 * the program frees its handle (MPICH 4.0.2 counts references, and so must we).
 * - A communicator freed while an inactive persistent request uses it keeps its attributes until
 *   MPI_Request_free of that request; the callback gets the handle, which still answers
 *   MPI_Comm_size. One no request uses loses them in MPI_Comm_free. Pending nonblocking
 *   operations: MPICH 4.0.2 defers the callbacks to the MPI_Wait/MPI_Test that frees the last of
 *   them on 1 rank, but runs them in MPI_Comm_free on more (its devices differ), so here they
 *   must have run exactly once by the time the last request is freed.
 * - A datatype freed while a derived type built from it lives keeps its attributes until that
 *   type goes (the derived one's callbacks first), and so does one a persistent request uses.
 * - So does one a pending nonblocking receive uses, until the wait that frees it (a send that
 *   completed as it started: loosely, as for communicators).
 * - A window loses them in MPI_Win_free.
 * Messages go from each rank to itself, so any number of ranks runs the same checks. */
#include "common.h"

#define MAXLOG 16
static const char *dlog[MAXLOG];
static int nlog;

static int comm_del(MPI_Comm c, int key, void *val, void *es)
{
    (void)key, (void)es;
    int n = 0;
    int rc = MPI_Comm_size(c, &n);
    CHECK(rc == MPI_SUCCESS && n == t_size, "delete callback of %s: MPI_Comm_size gave rc %d, size %d", (char *)val, rc,
          n);
    if (nlog < MAXLOG)
        dlog[nlog++] = val;
    return MPI_SUCCESS;
}
static int type_del(MPI_Datatype t, int key, void *val, void *es)
{
    (void)key, (void)es;
    int size = -1;
    int rc = MPI_Type_size(t, &size);
    CHECK(rc == MPI_SUCCESS && size > 0, "delete callback of %s: MPI_Type_size gave rc %d, size %d", (char *)val, rc,
          size);
    if (nlog < MAXLOG)
        dlog[nlog++] = val;
    return MPI_SUCCESS;
}
static int win_del(MPI_Win w, int key, void *val, void *es)
{
    (void)w, (void)key, (void)es;
    if (nlog < MAXLOG)
        dlog[nlog++] = val;
    return MPI_SUCCESS;
}

/* The callbacks run since the last call, in order, as "a,b" ("" for none). */
static const char *deleted(void)
{
    static char s[256];
    s[0] = 0;
    for (int i = 0; i < nlog; i++) {
        if (i)
            strcat(s, ",");
        strcat(s, dlog[i]);
    }
    nlog = 0;
    return s;
}
#define DELETED(want, when) CHECK(strcmp(deleted_now = deleted(), want) == 0, "%s: deleted [%s], expected [%s]", when, \
                                  deleted_now, want)

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "attr_lifetime", 1);
    const char *deleted_now;
    int ck, tk, wk;
    MPI_CHK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_del, &ck, NULL));
    MPI_CHK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_del, &tk, NULL));
    MPI_CHK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_del, &wk, NULL));
    int me = t_rank, in = 0, out = 7;
    MPI_Comm c;
    MPI_Request rs, rr;

    /* No request: gone in MPI_Comm_free. */
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_CHK(MPI_Comm_set_attr(c, ck, "idle"));
    MPI_CHK(MPI_Comm_free(&c));
    DELETED("idle", "MPI_Comm_free of a communicator without requests");

    /* A send and a receive on it: gone when the last of them is freed. */
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_CHK(MPI_Comm_set_attr(c, ck, "p2p"));
    MPI_CHK(MPI_Irecv(&in, 1, MPI_INT, me, 5, c, &rr));
    MPI_CHK(MPI_Isend(&out, 1, MPI_INT, me, 5, c, &rs));
    MPI_CHK(MPI_Comm_free(&c));
    MPI_CHK(MPI_Wait(&rs, MPI_STATUS_IGNORE));
    t_wait_bounded(&rr, MPI_STATUS_IGNORE, 10, "the receive on a freed communicator");
    DELETED("p2p", "MPI_Test that completed the last request");
    CHECK_EQ(in, 7, "received value");

    /* A cancelled receive: gone when MPI_Wait frees it. */
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_CHK(MPI_Comm_set_attr(c, ck, "cancelled"));
    MPI_CHK(MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 6, c, &rr));
    MPI_CHK(MPI_Comm_free(&c));
    MPI_CHK(MPI_Cancel(&rr));
    MPI_CHK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
    DELETED("cancelled", "MPI_Wait of the cancelled receive");

    /* An inactive persistent request: gone with MPI_Request_free. */
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_CHK(MPI_Comm_set_attr(c, ck, "persistent"));
    MPI_CHK(MPI_Send_init(&out, 1, MPI_INT, me, 7, c, &rs));
    MPI_CHK(MPI_Comm_free(&c));
    DELETED("", "MPI_Comm_free with an inactive persistent request");
    MPI_CHK(MPI_Request_free(&rs));
    DELETED("persistent", "MPI_Request_free of the persistent request");

    /* Requests in a list: gone in the MPI_Waitall that frees them. */
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_CHK(MPI_Comm_set_attr(c, ck, "waitall"));
    MPI_Request two[2];
    MPI_CHK(MPI_Irecv(&in, 1, MPI_INT, me, 8, c, &two[0]));
    MPI_CHK(MPI_Isend(&out, 1, MPI_INT, me, 8, c, &two[1]));
    MPI_CHK(MPI_Comm_free(&c));
    MPI_CHK(MPI_Waitall(2, two, MPI_STATUSES_IGNORE));
    DELETED("waitall", "MPI_Waitall");

    /* A datatype a derived type is built from: gone with the derived type, after it. */
    MPI_Datatype inner, outer;
    MPI_CHK(MPI_Type_contiguous(2, MPI_INT, &inner));
    MPI_CHK(MPI_Type_set_attr(inner, tk, "inner"));
    MPI_CHK(MPI_Type_vector(2, 1, 2, inner, &outer));
    MPI_CHK(MPI_Type_set_attr(outer, tk, "outer"));
    MPI_CHK(MPI_Type_commit(&outer));
    MPI_CHK(MPI_Type_free(&inner));
    DELETED("", "MPI_Type_free of a type a live derived type uses");
    MPI_CHK(MPI_Type_free(&outer));
    DELETED("outer,inner", "MPI_Type_free of the derived type");

    /* A datatype a persistent request uses: gone with the request. */
    MPI_Datatype pair;
    MPI_CHK(MPI_Type_contiguous(2, MPI_INT, &pair));
    MPI_CHK(MPI_Type_commit(&pair));
    MPI_CHK(MPI_Type_set_attr(pair, tk, "pair"));
    int two_ints[2] = {1, 2};
    MPI_CHK(MPI_Send_init(two_ints, 1, pair, me, 9, MPI_COMM_WORLD, &rs));
    MPI_CHK(MPI_Type_free(&pair));
    DELETED("", "MPI_Type_free of a type a persistent request uses");
    MPI_CHK(MPI_Request_free(&rs));
    DELETED("pair", "MPI_Request_free of the persistent request");

    /* A datatype pending nonblocking operations use: gone when the call that frees the last
     * of them ends (each request holds a reference, as in MPICH), not in MPI_Type_free. */
    MPI_Datatype vec;
    int grid[6] = {0}, six[6] = {1, 2, 3, 4, 5, 6}, got[3] = {0};
    MPI_CHK(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    MPI_CHK(MPI_Type_commit(&vec));
    MPI_CHK(MPI_Type_set_attr(vec, tk, "recv"));
    MPI_CHK(MPI_Irecv(grid, 1, vec, me, 10, MPI_COMM_WORLD, &rr));
    MPI_CHK(MPI_Type_free(&vec));
    DELETED("", "MPI_Type_free of a type a pending receive uses");
    MPI_CHK(MPI_Send(six, 3, MPI_INT, me, 10, MPI_COMM_WORLD));
    MPI_CHK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
    DELETED("recv", "MPI_Wait of the receive");
    CHECK(grid[0] == 1 && grid[1] == 0 && grid[2] == 2 && grid[4] == 3, "the strided receive gave %d %d %d %d", grid[0],
          grid[1], grid[2], grid[4]);
    MPI_CHK(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    MPI_CHK(MPI_Type_commit(&vec));
    MPI_CHK(MPI_Type_set_attr(vec, tk, "send"));
    MPI_CHK(MPI_Isend(six, 1, vec, me, 11, MPI_COMM_WORLD, &rs));
    /* A send that is complete as it starts (eager, to itself): MPICH 4.0.2 drops its
     * reference at once on 2 and more ranks and at the wait on 1, so only "exactly once, by the
     * wait" is checked. */
    MPI_CHK(MPI_Type_free(&vec));
    int early = nlog;
    MPI_CHK(MPI_Recv(got, 3, MPI_INT, me, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Wait(&rs, MPI_STATUS_IGNORE));
    CHECK(early <= 1, "%d callbacks at MPI_Type_free of a type a pending send uses", early);
    DELETED("send", "MPI_Type_free and MPI_Wait of the send");
    CHECK(got[0] == 1 && got[1] == 3 && got[2] == 5, "the strided send gave %d %d %d", got[0], got[1], got[2]);

    /* A datatype nothing else uses: gone in MPI_Type_free. */
    MPI_CHK(MPI_Type_contiguous(3, MPI_INT, &pair));
    MPI_CHK(MPI_Type_set_attr(pair, tk, "alone"));
    MPI_CHK(MPI_Type_free(&pair));
    DELETED("alone", "MPI_Type_free of a type nothing uses");

    /* A window: gone in MPI_Win_free. */
    MPI_Win w;
    int wbuf[4];
    MPI_CHK(MPI_Win_create(wbuf, sizeof wbuf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    MPI_CHK(MPI_Win_set_attr(w, wk, "win"));
    MPI_CHK(MPI_Win_free(&w));
    DELETED("win", "MPI_Win_free");

    MPI_CHK(MPI_Comm_free_keyval(&ck));
    MPI_CHK(MPI_Type_free_keyval(&tk));
    MPI_CHK(MPI_Win_free_keyval(&wk));
    return t_finish();
}
