/* MPI_Comm_accept / MPI_Comm_connect between two separate jobs (run by tests/tests/dynamic.rs,
 * not by suite.txt: it needs two launchers at once).
 *   two_jobs server FILE      opens a port, writes its name to FILE, accepts one group
 *   two_jobs client FILE      reads FILE, connects
 *   two_jobs badclient FILE   reads FILE, changes the port's token, and expects the connect to
 *                             fail with MPI_ERR_PORT (the server never sees it)
 *   two_jobs rounds_server FILE / rounds_client FILE
 *                             20 rounds of accept (connect), an exchange and MPI_Comm_disconnect
 *                             on one port: every rank's open descriptors after the last round are
 *                             as many as after the first (disconnect closes the other job's
 *                             connections)
 * Server and client exchange data both ways, merge and reduce, then disconnect. */
#include "common.h"
#include <dirent.h>

#define ROUNDS 20

/* Descriptors this process has open now. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL, "cannot read /proc/self/fd");
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* Accept (connect) ROUNDS times on `port`, exchange, disconnect; the descriptors stay level. */
static void rounds(int server, const char *port)
{
    int first = -1, now = -1;
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm inter;
        if (server)
            MPI_CHK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
        else
            MPI_CHK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
        int nremote;
        MPI_CHK(MPI_Comm_remote_size(inter, &nremote));
        for (int r = 0; r < nremote; r++) {
            int out = 1000 * round + t_rank, in = -1;
            MPI_CHK(MPI_Sendrecv(&out, 1, MPI_INT, r, 6, &in, 1, MPI_INT, r, 6, inter, MPI_STATUS_IGNORE));
            CHECK_EQ(in, 1000 * round + r, "value from the other job");
        }
        MPI_CHK(MPI_Comm_disconnect(&inter));
        now = open_fds();
        if (round == 0)
            first = now;
    }
    CHECK(now == first, "%d descriptors open after %d connect/disconnect rounds, %d after the first", now, ROUNDS,
          first);
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
    int server = strcmp(mode, "server") == 0 || strcmp(mode, "rounds_server") == 0;
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
        rounds(server, port);
        if (server && t_rank == 0)
            MPI_CHK(MPI_Close_port(port));
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
    MPI_Comm inter;
    if (server)
        MPI_CHK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    else
        MPI_CHK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    int nremote;
    MPI_CHK(MPI_Comm_remote_size(inter, &nremote));
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
