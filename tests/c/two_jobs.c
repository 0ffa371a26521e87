/* MPI_Comm_accept / MPI_Comm_connect between two separate jobs (run by tests/tests/dynamic.rs,
 * not by suite.txt: it needs two launchers at once).
 *   two_jobs server FILE      opens a port, writes its name to FILE, accepts one group
 *   two_jobs client FILE      reads FILE, connects
 *   two_jobs badclient FILE   reads FILE, changes the port's token, and expects the connect to
 *                             fail with MPI_ERR_PORT (the server never sees it)
 *   two_jobs rounds_server FILE [N] / rounds_client FILE [N]
 *                             N (20) rounds of accept (connect), an exchange checked every round
 *                             and MPI_Comm_disconnect on one port: every rank's open descriptors
 *                             after the last round are as many as after the first (disconnect
 *                             closes the other job's connections), and its per-peer tables hold
 *                             no more peers than its job and the other one (the count of MPI_T's
 *                             per-peer counter bb_bytes_received: disconnected peers' numbers
 *                             are taken again)
 *   two_jobs flush_server FILE / flush_client FILE
 *                             the client's every rank MPI_Isends each server rank FLUSH_EAGER
 *                             eager messages, one rendezvous message and one more eager one whose
 *                             request it frees, while the server sleeps (the sockets fill, the
 *                             rest waits in user space), then MPI_Comm_disconnect and MPI_Finalize
 *                             at once; the server posts its receives late, disconnects, and checks
 *                             every byte. After MPI_Comm_disconnect every request on the
 *                             communicator is complete on both sides (MPI 4.0 section 11.10.4:
 *                             it waits for the pending communication)
 *   two_jobs stale_server FILE / stale_client FILE
 *                             the server accepts two client jobs one after the other (run
 *                             stale_client twice); from the first it keeps the remote group and
 *                             the group of the merged communicator, then disconnects, and the
 *                             second job's processes take the numbers the first one's had. The
 *                             kept groups still name the first job's processes (as MPICH's do):
 *                             MPI_Group_translate_ranks finds none of them in the second job's
 *                             groups, MPI_Group_compare says MPI_UNEQUAL, and MPI_Comm_create_group
 *                             over the second merged communicator with a kept group is
 *                             MPI_ERR_GROUP naming a disconnected process, never a communicator of
 *                             the second job's processes
 * Server and client exchange data both ways, merge and reduce, then disconnect. */
#include "common.h"

#define ROUNDS 20

/* The server accepts on `port`, the client connects: the intercommunicator, and the other
 * job's size in `nremote`. */
static MPI_Comm meet(int server, const char *port, int *nremote)
{
    MPI_Comm inter;
    if (server)
        MPI_CHK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    else
        MPI_CHK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    MPI_CHK(MPI_Comm_remote_size(inter, nremote));
    return inter;
}

/* Accept (connect) `n` times on `port`, exchange, disconnect; the descriptors and the per-peer
 * tables stay level. */
static void rounds(int server, const char *port, int n)
{
    int provided, first = -1, now = -1;
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread");
    for (int round = 0; round < n; round++) {
        int nremote;
        MPI_Comm inter = meet(server, port, &nremote);
        for (int r = 0; r < nremote; r++) {
            int out = 1000 * round + t_rank, in = -1;
            MPI_CHK(MPI_Sendrecv(&out, 1, MPI_INT, r, 6, &in, 1, MPI_INT, r, 6, inter, MPI_STATUS_IGNORE));
            CHECK_EQ(in, 1000 * round + r, "value from the other job");
        }
        MPI_CHK(MPI_Comm_disconnect(&inter));
        int known = t_peers_known();
        CHECK(known <= t_size + nremote, "%d peers in the tables after round %d (%d ranks here, %d there)", known,
              round, t_size, nremote);
        now = t_open_fds();
        if (round == 0)
            first = now;
    }
    CHECK(now == first, "%d descriptors open after %d connect/disconnect rounds, %d after the first", now, n, first);
    MPI_T_finalize();
}

/* Accepts (connects to) one job and merges with it, the server's ranks first. */
static MPI_Comm meet_merged(int server, const char *port, MPI_Comm *inter, int *nremote)
{
    *inter = meet(server, port, nremote);
    MPI_Comm merged;
    MPI_CHK(MPI_Intercomm_merge(*inter, !server, &merged));
    return merged;
}

/* The server's part of `two_jobs stale_server` (see the top of the file). */
static void stale_server(const char *port)
{
    int provided, nremote, n;
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread");
    MPI_Comm inter, merged = meet_merged(1, port, &inter, &nremote);
    MPI_Group kept_remote, kept_merged, remote, all;
    MPI_CHK(MPI_Comm_remote_group(inter, &kept_remote));
    MPI_CHK(MPI_Comm_group(merged, &kept_merged));
    MPI_CHK(MPI_Comm_free(&merged));
    MPI_CHK(MPI_Comm_disconnect(&inter));

    merged = meet_merged(1, port, &inter, &n);
    CHECK_EQ(n, nremote, "size of the second client job");
    int known = t_peers_known();
    CHECK(known <= t_size + n, "%d peers in the tables (%d ranks here, %d there): the numbers were not reused", known,
          t_size, n);
    MPI_CHK(MPI_Comm_remote_group(inter, &remote));
    MPI_CHK(MPI_Comm_group(merged, &all));

    int size = t_size + n, ranks[64], found[64], result = -1, me = -1;
    CHECK(size <= 64, "%d processes", size);
    for (int r = 0; r < size; r++)
        ranks[r] = r;
    MPI_CHK(MPI_Group_translate_ranks(kept_remote, n, ranks, remote, found));
    for (int r = 0; r < n; r++)
        CHECK_EQ(found[r], MPI_UNDEFINED, "the first job's rank in the second job's remote group");
    MPI_CHK(MPI_Group_translate_ranks(kept_merged, size, ranks, all, found));
    for (int r = 0; r < size; r++)
        CHECK_EQ(found[r], r < t_size ? r : MPI_UNDEFINED, "member of the kept merged group in the new one");
    MPI_CHK(MPI_Group_compare(kept_remote, remote, &result));
    CHECK_EQ(result, MPI_UNEQUAL, "MPI_Group_compare of the kept and the new remote group");
    MPI_CHK(MPI_Group_compare(kept_merged, all, &result));
    CHECK_EQ(result, MPI_UNEQUAL, "MPI_Group_compare of the kept and the new merged group");
    MPI_CHK(MPI_Group_rank(kept_merged, &me));
    CHECK_EQ(me, t_rank, "this process's rank in the kept group");

    /* Only the server's processes make this call: an error must come before any message. */
    MPI_CHK(MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN));
    MPI_Group kept[2] = {kept_merged, kept_remote};
    for (int k = 0; k < 2; k++) {
        MPI_Comm made = MPI_COMM_NULL;
        int rc = MPI_Comm_create_group(merged, kept[k], 9, &made), class = -1, len = 0;
        char msg[MPI_MAX_ERROR_STRING] = "";
        MPI_Error_class(rc, &class);
        MPI_Error_string(rc, msg, &len);
        CHECK(class == MPI_ERR_GROUP, "MPI_Comm_create_group with the kept %s group: class %d, not MPI_ERR_GROUP (%s)",
              k ? "remote" : "merged", class, msg);
        CHECK(strstr(msg, "disconnected") != NULL, "the error names a disconnected process: '%s'", msg);
    }
    MPI_CHK(MPI_Group_free(&kept_remote));
    MPI_CHK(MPI_Group_free(&kept_merged));
    MPI_CHK(MPI_Group_free(&remote));
    MPI_CHK(MPI_Group_free(&all));
    MPI_CHK(MPI_Comm_free(&merged));
    MPI_CHK(MPI_Comm_disconnect(&inter));
    MPI_T_finalize();
}

#define FLUSH_EAGER 96
#define FLUSH_EAGER_BYTES (48 << 10)
#define FLUSH_LARGE_BYTES (3 << 20)

/* The bytes of message k (FLUSH_EAGER: the rendezvous one; + 1: the freed one) from client rank
 * c to server rank s. */
static void flush_fill(unsigned char *buf, long n, int c, int s, int k)
{
    for (long i = 0; i < n; i++)
        buf[i] = t_byte(i, 1000 * c + 10 * s + k);
}

static long flush_bytes(int k) { return k == FLUSH_EAGER ? FLUSH_LARGE_BYTES : FLUSH_EAGER_BYTES; }

/* Sends (client) or receives (server) the flush test's messages, then disconnects. */
static void flush(int server, const char *port)
{
    int nremote;
    MPI_Comm inter = meet(server, port, &nremote);
    int per = FLUSH_EAGER + 2, n = nremote * per, kept = 0;
    unsigned char **bufs = calloc((size_t)n, sizeof *bufs);
    MPI_Request *reqs = calloc((size_t)n, sizeof *reqs);
    if (server)
        usleep(1500 * 1000); /* the client's sockets fill meanwhile */
    for (int r = 0; r < nremote; r++) {
        for (int k = 0; k < per; k++) {
            int i = r * per + k, c = server ? r : t_rank, s = server ? t_rank : r;
            long len = flush_bytes(k);
            bufs[i] = malloc((size_t)len);
            CHECK(bufs[i] != NULL, "out of memory");
            int tag = k == FLUSH_EAGER ? 8 : 7;
            if (server) {
                memset(bufs[i], 0, (size_t)len);
                MPI_CHK(MPI_Irecv(bufs[i], (int)len, MPI_BYTE, r, tag, inter, &reqs[kept++]));
            } else {
                flush_fill(bufs[i], len, c, s, k);
                MPI_Request req;
                MPI_CHK(MPI_Isend(bufs[i], (int)len, MPI_BYTE, r, tag, inter, &req));
                if (k == per - 1)
                    MPI_CHK(MPI_Request_free(&req));
                else
                    reqs[kept++] = req;
            }
        }
    }
    MPI_CHK(MPI_Comm_disconnect(&inter));
    CHECK(inter == MPI_COMM_NULL, "MPI_Comm_disconnect leaves MPI_COMM_NULL");
    int done = 0;
    MPI_Status *statuses = calloc((size_t)n, sizeof *statuses);
    MPI_CHK(MPI_Testall(kept, reqs, &done, statuses));
    free(statuses);
    CHECK(done, "%s requests still pending after MPI_Comm_disconnect", server ? "receive" : "send");
    if (server) {
        unsigned char *want = malloc(FLUSH_LARGE_BYTES);
        CHECK(want != NULL, "out of memory");
        for (int r = 0; r < nremote; r++)
            for (int k = 0; k < per; k++) {
                long len = flush_bytes(k);
                flush_fill(want, len, r, t_rank, k);
                CHECK(memcmp(bufs[r * per + k], want, (size_t)len) == 0,
                      "message %d of %ld bytes from client rank %d differs", k, len, r);
            }
        free(want);
    }
    /* Every buffer is the program's again, the freed request's too (disconnect waited for its
     * send): scribbled over, so a byte sent from it later shows at the server. */
    for (int i = 0; i < n; i++) {
        memset(bufs[i], 0xee, (size_t)flush_bytes(i % per));
        free(bufs[i]);
    }
    free(bufs);
    free(reqs);
}

static void read_port(const char *file, char *port)
{
    for (int tries = 0; tries < 3000; tries++) {
        FILE *f = fopen(file, "r");
        if (f) {
            int ok = fgets(port, MPI_MAX_PORT_NAME, f) != NULL;
            fclose(f);
            if (ok) {
                port[strcspn(port, "\n")] = 0;
                return;
            }
        }
        usleep(10000);
    }
    FAIL("no port name in %s", file);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *mode = argv[1], *file = argv[2];
    t_init(&argc, &argv, "two_jobs", 1);
    int server = strcmp(mode, "server") == 0 || strcmp(mode, "rounds_server") == 0 || strcmp(mode, "flush_server") == 0 ||
                 strcmp(mode, "stale_server") == 0;
    char port[MPI_MAX_PORT_NAME] = "";
    if (server && t_rank == 0) {
        MPI_CHK(MPI_Open_port(MPI_INFO_NULL, port));
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", file);
        FILE *f = fopen(tmp, "w");
        CHECK(f != NULL, "cannot write %s", tmp);
        fprintf(f, "%s\n", port);
        fclose(f);
        CHECK(rename(tmp, file) == 0, "rename to %s", file);
    } else if (!server && t_rank == 0) {
        read_port(file, port);
    }
    if (strncmp(mode, "rounds_", 7) == 0) {
        rounds(server, port, argc > 3 ? atoi(argv[3]) : ROUNDS);
        if (server && t_rank == 0)
            MPI_CHK(MPI_Close_port(port));
        return t_finish();
    }
    if (strncmp(mode, "flush_", 6) == 0) {
        flush(server, port);
        if (server && t_rank == 0)
            MPI_CHK(MPI_Close_port(port));
        return t_finish();
    }
    if (strncmp(mode, "stale_", 6) == 0) {
        if (server) {
            stale_server(port);
            if (t_rank == 0)
                MPI_CHK(MPI_Close_port(port));
        } else {
            MPI_Comm inter, merged = meet_merged(0, port, &inter, &(int){0});
            MPI_CHK(MPI_Comm_free(&merged));
            MPI_CHK(MPI_Comm_disconnect(&inter));
        }
        return t_finish();
    }
    if (strcmp(mode, "badclient") == 0) {
        if (t_rank == 0) {
            size_t n = strlen(port);
            port[n - 1] = port[n - 1] == '0' ? '1' : '0';
        }
        MPI_Comm inter = MPI_COMM_WORLD;
        int rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
        int class = 0;
        MPI_Error_class(rc, &class);
        CHECK_EQ(class, MPI_ERR_PORT, "connect with a wrong token");
        CHECK(inter == MPI_COMM_NULL, "no communicator after a failed connect");
        return t_finish();
    }
    int nremote;
    MPI_Comm inter = meet(server, port, &nremote);
    for (int r = 0; r < nremote; r++) {
        int out = 100 * server + t_rank, in = -1;
        MPI_CHK(MPI_Sendrecv(&out, 1, MPI_INT, r, 5, &in, 1, MPI_INT, r, 5, inter, MPI_STATUS_IGNORE));
        CHECK_EQ(in, 100 * !server + r, "value from the other job");
    }
    MPI_Comm merged;
    MPI_CHK(MPI_Intercomm_merge(inter, !server, &merged));
    int size, sum = 0, one = 1;
    MPI_CHK(MPI_Comm_size(merged, &size));
    CHECK_EQ(size, t_size + nremote, "merged size");
    MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK_EQ(sum, size, "allreduce over both jobs");
    MPI_CHK(MPI_Comm_free(&merged));
    MPI_CHK(MPI_Comm_disconnect(&inter));
    if (server && t_rank == 0)
        MPI_CHK(MPI_Close_port(port));
    return t_finish();
}
