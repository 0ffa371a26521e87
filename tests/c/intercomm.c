/* Intercommunicators: MPI_Intercomm_create from the even and the odd world ranks (each group
 * ranked by world rank), MPI_Comm_test_inter, MPI_Comm_remote_size/group, point-to-point across
 * (named ranks, MPI_ANY_SOURCE, probe, nonblocking, persistent, MPI_PROC_NULL, a bad rank),
 * MPI_Intercomm_merge with both orders of `high`, MPI_Comm_dup/idup/split/create/compare/free
 * of intercommunicators, attributes copied by dup. Needs N >= 2 (odd N: unequal groups). */
#include "common.h"

static int color, lrank, lsize, rsize;

/* World rank of remote rank r (the remote group is the other parity, by world rank). */
static int remote_world(int r) { return 2 * r + (1 - color); }

static void check_remote_group(MPI_Comm inter, const char *what)
{
    int flag = -1, rs = -1;
    MPI_CHK(MPI_Comm_test_inter(inter, &flag));
    CHECK_EQ(flag, 1, what);
    MPI_CHK(MPI_Comm_remote_size(inter, &rs));
    CHECK_EQ(rs, rsize, what);
    MPI_Group g, world;
    MPI_CHK(MPI_Comm_remote_group(inter, &g));
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    for (int r = 0; r < rsize; r++) {
        int w = -1;
        MPI_CHK(MPI_Group_translate_ranks(g, 1, &r, world, &w));
        CHECK(w == remote_world(r), "%s: remote rank %d is world rank %d, expected %d", what, r, w, remote_world(r));
    }
    MPI_CHK(MPI_Group_free(&g));
    MPI_CHK(MPI_Group_free(&world));
}

/* Every process sends one message to every remote process, then receives them by probing
 * with MPI_ANY_SOURCE; then again with nonblocking receives from MPI_ANY_SOURCE. */
static void p2p(MPI_Comm inter, int ls, int lr, int rs, const char *what)
{
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(2 * rs));
    int *out = malloc(sizeof(int) * (size_t)rs), *in = malloc(sizeof(int) * (size_t)rs);
    int *seen = calloc((size_t)rs, sizeof(int));
    for (int j = 0; j < rs; j++) {
        out[j] = lr * 100 + j;
        MPI_CHK(MPI_Isend(&out[j], 1, MPI_INT, j, 5, inter, &reqs[j]));
    }
    for (int k = 0; k < rs; k++) {
        MPI_Status st;
        MPI_CHK(MPI_Probe(MPI_ANY_SOURCE, 5, inter, &st));
        int s = st.MPI_SOURCE;
        CHECK(s >= 0 && s < rs && !seen[s], "%s: probe found source %d", what, s);
        seen[s] = 1;
        int v = -1;
        MPI_CHK(MPI_Recv(&v, 1, MPI_INT, s, 5, inter, &st));
        CHECK(v == s * 100 + lr, "%s: from remote %d got %d, expected %d", what, s, v, s * 100 + lr);
        CHECK_EQ(st.MPI_SOURCE, s, what);
    }
    MPI_CHK(MPI_Waitall(rs, reqs, MPI_STATUSES_IGNORE));
    for (int j = 0; j < rs; j++)
        MPI_CHK(MPI_Irecv(&in[j], 1, MPI_INT, MPI_ANY_SOURCE, 6, inter, &reqs[j]));
    for (int j = 0; j < rs; j++)
        MPI_CHK(MPI_Isend(&out[j], 1, MPI_INT, j, 6, inter, &reqs[rs + j]));
    MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)(2 * rs));
    MPI_CHK(MPI_Waitall(2 * rs, reqs, sts));
    memset(seen, 0, sizeof(int) * (size_t)rs);
    for (int j = 0; j < rs; j++) {
        int s = sts[j].MPI_SOURCE;
        CHECK(s >= 0 && s < rs && !seen[s], "%s: any-source receive from %d", what, s);
        seen[s] = 1;
        CHECK(in[j] == s * 100 + lr, "%s: any-source from %d got %d", what, s, in[j]);
    }
    (void)ls;
    free(sts);
    free(reqs);
    free(out);
    free(in);
    free(seen);
}

/* Persistent sends and receives with each remote rank, started twice. */
static void persistent(MPI_Comm inter)
{
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(2 * rsize));
    int *out = malloc(sizeof(int) * (size_t)rsize), *in = malloc(sizeof(int) * (size_t)rsize);
    for (int j = 0; j < rsize; j++) {
        MPI_CHK(MPI_Recv_init(&in[j], 1, MPI_INT, j, 7, inter, &reqs[j]));
        MPI_CHK(MPI_Send_init(&out[j], 1, MPI_INT, j, 7, inter, &reqs[rsize + j]));
    }
    for (int round = 0; round < 2; round++) {
        for (int j = 0; j < rsize; j++)
            out[j] = round * 1000 + t_rank * 10 + j % 10;
        MPI_CHK(MPI_Startall(2 * rsize, reqs));
        MPI_CHK(MPI_Waitall(2 * rsize, reqs, MPI_STATUSES_IGNORE));
        for (int j = 0; j < rsize; j++)
            CHECK(in[j] == round * 1000 + remote_world(j) * 10 + lrank % 10, "persistent round %d from %d: %d", round,
                  j, in[j]);
    }
    for (int j = 0; j < 2 * rsize; j++)
        MPI_CHK(MPI_Request_free(&reqs[j]));
    free(reqs);
    free(out);
    free(in);
}

/* The merged communicator has the world ranks of `first_color` first, each group by world rank. */
static void check_merged(MPI_Comm merged, int first_color, const char *what)
{
    int s = -1, r = -1;
    MPI_CHK(MPI_Comm_size(merged, &s));
    CHECK_EQ(s, t_size, what);
    MPI_CHK(MPI_Comm_rank(merged, &r));
    int first_size = first_color == 0 ? (t_size + 1) / 2 : t_size / 2;
    int want = color == first_color ? lrank : first_size + lrank;
    CHECK(r == want, "%s: merged rank %d, expected %d", what, r, want);
    int flag = -1;
    MPI_CHK(MPI_Comm_test_inter(merged, &flag));
    CHECK_EQ(flag, 0, what);
    int sum = -1;
    MPI_CHK(MPI_Allreduce(&t_rank, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK_EQ(sum, t_size * (t_size - 1) / 2, what);
}

static int copies;
static int count_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "intercomm", 2);
    color = t_rank % 2;
    MPI_Comm local, inter;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, color, t_rank, &local));
    MPI_CHK(MPI_Comm_rank(local, &lrank));
    MPI_CHK(MPI_Comm_size(local, &lsize));
    rsize = color == 0 ? t_size / 2 : (t_size + 1) / 2;
    MPI_CHK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 77, &inter));
    MPI_CHK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    int s = -1, r = -1, flag = -1;
    MPI_CHK(MPI_Comm_size(inter, &s));
    MPI_CHK(MPI_Comm_rank(inter, &r));
    CHECK_EQ(s, lsize, "local size");
    CHECK_EQ(r, lrank, "local rank");
    MPI_CHK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CHECK_EQ(flag, 0, "world is no intercommunicator");
    check_remote_group(inter, "created");

    p2p(inter, lsize, lrank, rsize, "p2p");
    persistent(inter);
    MPI_Status st;
    int v = 3;
    MPI_CHK(MPI_Sendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 1, &v, 1, MPI_INT, MPI_PROC_NULL, 1, inter, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL, "proc null source");
    int rc = MPI_Send(&v, 1, MPI_INT, rsize, 1, inter);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "send to remote rank %d (the remote size): class %d, expected MPI_ERR_RANK", rsize, cls);

    /* Merge, both orders of high, and the same high on both sides. */
    MPI_Comm merged;
    MPI_CHK(MPI_Intercomm_merge(inter, color, &merged));
    check_merged(merged, 0, "merge high = color");
    MPI_CHK(MPI_Comm_free(&merged));
    MPI_CHK(MPI_Intercomm_merge(inter, 1 - color, &merged));
    check_merged(merged, 1, "merge high = 1 - color");
    MPI_CHK(MPI_Comm_free(&merged));
    MPI_CHK(MPI_Intercomm_merge(inter, 0, &merged));
    MPI_CHK(MPI_Comm_size(merged, &s));
    CHECK_EQ(s, t_size, "merge with equal high");
    MPI_CHK(MPI_Comm_free(&merged));

    /* Dup and idup keep both groups and attributes; compare. */
    int key;
    MPI_CHK(MPI_Comm_create_keyval(count_copy, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    static int value = 42;
    MPI_CHK(MPI_Comm_set_attr(inter, key, &value));
    MPI_Comm dup, idup;
    MPI_CHK(MPI_Comm_dup(inter, &dup));
    check_remote_group(dup, "dup");
    CHECK_EQ(copies, 1, "attribute copies");
    void *got = NULL;
    MPI_CHK(MPI_Comm_get_attr(dup, key, &got, &flag));
    CHECK(flag && got == &value, "dup's attribute: flag %d", flag);
    MPI_CHK(MPI_Comm_compare(inter, dup, &rc));
    CHECK_EQ(rc, MPI_CONGRUENT, "compare(inter, dup)");
    MPI_CHK(MPI_Comm_compare(inter, inter, &rc));
    CHECK_EQ(rc, MPI_IDENT, "compare(inter, inter)");
    MPI_CHK(MPI_Comm_compare(inter, MPI_COMM_WORLD, &rc));
    CHECK_EQ(rc, MPI_UNEQUAL, "compare(inter, world)");
    MPI_Request req;
    MPI_CHK(MPI_Comm_idup(inter, &idup, &req));
    MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    check_remote_group(idup, "idup");
    p2p(dup, lsize, lrank, rsize, "p2p on dup");
    p2p(idup, lsize, lrank, rsize, "p2p on idup");
    MPI_CHK(MPI_Comm_free(&idup));
    MPI_CHK(MPI_Comm_free(&dup));
    MPI_CHK(MPI_Comm_free_keyval(&key));

    /* Split by local rank parity, reversed order: an intercommunicator per parity that both
     * sides have. */
    MPI_Comm split;
    int c2 = lrank % 2;
    MPI_CHK(MPI_Comm_split(inter, c2, -lrank, &split));
    int rlocal = c2 == 0 ? (rsize + 1) / 2 : rsize / 2;
    if (rlocal == 0) {
        CHECK(split == MPI_COMM_NULL, "split color %d without remote members: not MPI_COMM_NULL", c2);
    } else {
        CHECK(split != MPI_COMM_NULL, "split color %d: MPI_COMM_NULL", c2);
        int nl = c2 == 0 ? (lsize + 1) / 2 : lsize / 2;
        int sr = -1, ss = -1, srs = -1;
        MPI_CHK(MPI_Comm_size(split, &ss));
        MPI_CHK(MPI_Comm_rank(split, &sr));
        MPI_CHK(MPI_Comm_remote_size(split, &srs));
        CHECK_EQ(ss, nl, "split local size");
        CHECK_EQ(srs, rlocal, "split remote size");
        CHECK_EQ(sr, nl - 1 - lrank / 2, "split rank (reversed)");
        p2p(split, ss, sr, srs, "p2p on split");
        MPI_CHK(MPI_Comm_free(&split));
    }
    MPI_CHK(MPI_Comm_split(inter, lrank == 0 ? 0 : MPI_UNDEFINED, 0, &split));
    CHECK(lrank == 0 ? split != MPI_COMM_NULL : split == MPI_COMM_NULL, "split with MPI_UNDEFINED");
    if (split != MPI_COMM_NULL) {
        MPI_CHK(MPI_Comm_remote_size(split, &s));
        CHECK_EQ(s, 1, "leaders' split: remote size");
    }
    if (split != MPI_COMM_NULL)
        MPI_CHK(MPI_Comm_free(&split));
    (void)0;

    /* Create from the group of each side's last member. */
    MPI_Group lg, last;
    MPI_CHK(MPI_Comm_group(inter, &lg));
    int lastrank = lsize - 1;
    MPI_CHK(MPI_Group_incl(lg, 1, &lastrank, &last));
    MPI_Comm created;
    MPI_CHK(MPI_Comm_create(inter, last, &created));
    if (lrank == lsize - 1) {
        CHECK(created != MPI_COMM_NULL, "created: MPI_COMM_NULL on the member");
        MPI_CHK(MPI_Comm_test_inter(created, &flag));
        CHECK_EQ(flag, 1, "created is an intercommunicator");
        MPI_CHK(MPI_Comm_remote_size(created, &s));
        CHECK_EQ(s, 1, "created remote size");
        int out = t_rank, in = -1;
        MPI_CHK(MPI_Sendrecv(&out, 1, MPI_INT, 0, 9, &in, 1, MPI_INT, 0, 9, created, MPI_STATUS_IGNORE));
        int want = color == 0 ? (t_size % 2 == 0 ? t_size - 1 : t_size - 2) : (t_size % 2 == 0 ? t_size - 2 : t_size - 1);
        CHECK_EQ(in, want, "created: the other side's last member");
        MPI_CHK(MPI_Comm_free(&created));
    } else {
        CHECK(created == MPI_COMM_NULL, "created: not MPI_COMM_NULL off the group");
    }
    MPI_CHK(MPI_Group_free(&last));
    MPI_CHK(MPI_Group_free(&lg));

    MPI_CHK(MPI_Comm_free(&inter));
    MPI_CHK(MPI_Comm_free(&local));
    return t_finish();
}
