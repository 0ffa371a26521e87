/* MPI_Comm_spawn: the program spawns itself, first 2 children, then 3 (`spawn on HOST`: on that
 * host, through the `host` info key; tests/tests/dynamic.rs runs it on two network namespaces). Each time the parents
 * and the children exchange data both ways over the intercommunicator (every parent with every
 * child), merge it into an intracommunicator (parents first) and run an allreduce there, then
 * disconnect. The children check MPI_Comm_get_parent and their own MPI_COMM_WORLD.
 * `spawn loop N` (tests/tests/dynamic.rs): N rounds of one child spawned, the exchange and
 * disconnect: the descriptors and the per-peer tables stay level. */
#include "common.h"

static void exchange(MPI_Comm inter, int parent_side)
{
    int me, nlocal, nremote;
    MPI_CHK(MPI_Comm_rank(inter, &me));
    MPI_CHK(MPI_Comm_size(inter, &nlocal));
    MPI_CHK(MPI_Comm_remote_size(inter, &nremote));
    /* Every process sends (side, rank, peer) to every remote process and checks what it gets. */
    for (int r = 0; r < nremote; r++) {
        int out[3] = {parent_side, me, r}, in[3] = {-1, -1, -1};
        MPI_Status st;
        MPI_CHK(MPI_Sendrecv(out, 3, MPI_INT, r, 7, in, 3, MPI_INT, r, 7, inter, &st));
        CHECK(in[0] == !parent_side && in[1] == r && in[2] == me, "from remote %d: got (%d,%d,%d)", r, in[0], in[1],
              in[2]);
        CHECK_EQ(st.MPI_SOURCE, r, "status source");
    }
    /* A larger message, past the TCP eager limit, from remote rank 0 to local rank 0. */
    enum { BIG = 300000 };
    static unsigned char big[BIG];
    if (me == 0) {
        if (parent_side) {
            for (long i = 0; i < BIG; i++)
                big[i] = t_byte(i, 3);
            MPI_CHK(MPI_Send(big, BIG, MPI_BYTE, 0, 8, inter));
        } else {
            memset(big, 0, BIG);
            MPI_CHK(MPI_Recv(big, BIG, MPI_BYTE, 0, 8, inter, MPI_STATUS_IGNORE));
            for (long i = 0; i < BIG; i++)
                if (big[i] != t_byte(i, 3))
                    FAIL("big message byte %ld: %d", i, big[i]);
        }
    }
    MPI_Comm merged;
    MPI_CHK(MPI_Intercomm_merge(inter, !parent_side, &merged));
    int mrank, msize;
    MPI_CHK(MPI_Comm_rank(merged, &mrank));
    MPI_CHK(MPI_Comm_size(merged, &msize));
    CHECK_EQ(msize, nlocal + nremote, "merged size");
    if (parent_side)
        CHECK_EQ(mrank, me, "a parent's merged rank");
    else
        CHECK_EQ(mrank, nremote + me, "a child's merged rank");
    int sum = 0, one = mrank + 1;
    MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK_EQ(sum, msize * (msize + 1) / 2, "allreduce over the merged communicator");
    int root_val = mrank == 0 ? 4242 : 0;
    MPI_CHK(MPI_Bcast(&root_val, 1, MPI_INT, 0, merged));
    CHECK_EQ(root_val, 4242, "bcast over the merged communicator");
    MPI_CHK(MPI_Comm_free(&merged));
}

/* `spawn loop N`: N rounds of spawning one child, the exchange, MPI_Comm_disconnect and the
 * child's exit; the descriptors stay level and the per-peer tables hold at most the world and
 * one child (its number is taken again). */
static void spawn_loop(const char *self, int rounds)
{
    int provided, first = -1, now = -1;
    MPI_CHK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    for (int round = 0; round < rounds; round++) {
        char *args[] = {"child", "1", NULL};
        MPI_Comm child;
        MPI_CHK(MPI_Comm_spawn(self, args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child, MPI_ERRCODES_IGNORE));
        exchange(child, 1);
        MPI_CHK(MPI_Comm_disconnect(&child));
        int known = t_peers_known();
        CHECK(known <= t_size + 1, "%d peers in the tables after spawn %d of one child (%d ranks)", known, round, t_size);
        now = t_open_fds();
        if (round == 0)
            first = now;
    }
    CHECK(now == first, "%d descriptors open after %d spawns, %d after the first", now, rounds, first);
    MPI_T_finalize();
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        t_init(&argc, &argv, "spawn-child", 1);
        MPI_Comm parent;
        MPI_CHK(MPI_Comm_get_parent(&parent));
        CHECK(parent != MPI_COMM_NULL, "a spawned process has a parent");
        int want = atoi(argv[2]), flag = 0;
        if (argc > 3) {
            const char *host = getenv("BB_HOST");
            CHECK(host && strcmp(host, argv[3]) == 0, "a child runs on host %s, not %s", host ? host : "?", argv[3]);
        }
        CHECK_EQ(t_size, want, "the children's MPI_COMM_WORLD size");
        int is_inter = 0;
        MPI_CHK(MPI_Comm_test_inter(parent, &is_inter));
        CHECK(is_inter, "the parent communicator is an intercommunicator");
        exchange(parent, 0);
        MPI_CHK(MPI_Comm_disconnect(&parent));
        CHECK(parent == MPI_COMM_NULL, "disconnect sets the handle to MPI_COMM_NULL");
        MPI_Comm again;
        MPI_CHK(MPI_Comm_get_parent(&again));
        CHECK(again == MPI_COMM_NULL, "no parent after disconnecting it");
        (void)flag;
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_Finalize();
        return 0;
    }
    t_init(&argc, &argv, "spawn", 1);
    if (argc > 2 && strcmp(argv[1], "loop") == 0) {
        spawn_loop(argv[0], atoi(argv[2]));
        return t_finish();
    }
    MPI_Comm parent;
    MPI_CHK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "the first job has no parent");
    int *usize = NULL, flag = 0;
    MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag));
    /* MPICH under Hydra on one host leaves it unset; where set, it counts the world. */
    CHECK(!flag || *usize >= t_size, "MPI_UNIVERSE_SIZE is at least the world's size");
    MPI_Info info = MPI_INFO_NULL;
    if (argc > 2 && strcmp(argv[1], "on") == 0) {
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "host", argv[2]));
        /* What that host cannot run fails the spawn there, naming the host and the command,
         * and the job goes on (it ended the job when only the agent could tell). */
        MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        MPI_Comm none = MPI_COMM_WORLD;
        int codes[2] = {-1, -1};
        int rc = MPI_Comm_spawn("./no-such-program-bb", MPI_ARGV_NULL, 2, info, 0, MPI_COMM_WORLD, &none, codes);
        int class = 0;
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_SPAWN, "class %d of a spawn of a missing program on host %s", class, argv[2]);
        CHECK(none == MPI_COMM_NULL, "no intercommunicator after a failed spawn");
        CHECK(strstr(t_errstr(rc), "no-such-program-bb") && strstr(t_errstr(rc), argv[2]),
              "the error names the command and the host: %s", t_errstr(rc));
        MPI_Info bad;
        MPI_CHK(MPI_Info_dup(info, &bad));
        MPI_CHK(MPI_Info_set(bad, "wdir", "/no/such/dir-bb"));
        rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, bad, 0, MPI_COMM_WORLD, &none, codes);
        CHECK(rc != MPI_SUCCESS && strstr(t_errstr(rc), "/no/such/dir-bb"),
              "a working directory missing on host %s fails the spawn: %s", argv[2], t_errstr(rc));
        MPI_CHK(MPI_Info_free(&bad));
        MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }
    for (int n = 2; n <= 3; n++) {
        char count[8];
        snprintf(count, sizeof count, "%d", n);
        /* On a named host, the children check they run there (BB_HOST: bbrun's name for it). */
        char *args[] = {"child", count, info != MPI_INFO_NULL ? argv[2] : NULL, NULL};
        int errcodes[3] = {-1, -1, -1};
        MPI_Comm children;
        MPI_CHK(MPI_Comm_spawn(argv[0], args, n, info, 0, MPI_COMM_WORLD, &children, errcodes));
        for (int i = 0; i < n; i++)
            CHECK_EQ(errcodes[i], MPI_SUCCESS, "errcode");
        int remote = 0;
        MPI_CHK(MPI_Comm_remote_size(children, &remote));
        CHECK_EQ(remote, n, "remote size of the children's intercommunicator");
        exchange(children, 1);
        MPI_CHK(MPI_Comm_disconnect(&children));
    }
    if (info != MPI_INFO_NULL)
        MPI_CHK(MPI_Info_free(&info));
    return t_finish();
}
