/* MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect between two groups of one job: the world
 * splits in two halves; the first half's rank 0 opens a port and passes its name to the second
 * half (by MPI_Send, and through MPI_Publish_name / MPI_Lookup_name); the halves accept and
 * connect, exchange data both ways, merge and reduce, and disconnect. Also MPI_Comm_join over a
 * socket pair made between world ranks 0 and 1. */
#include "common.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static void check_intercomm(MPI_Comm inter, int low)
{
    int me, nremote;
    MPI_CHK(MPI_Comm_rank(inter, &me));
    MPI_CHK(MPI_Comm_remote_size(inter, &nremote));
    for (int r = 0; r < nremote; r++) {
        int out = 1000 * low + me, in = -1;
        MPI_CHK(MPI_Sendrecv(&out, 1, MPI_INT, r, 3, &in, 1, MPI_INT, r, 3, inter, MPI_STATUS_IGNORE));
        CHECK_EQ(in, 1000 * !low + r, "value from the other group");
    }
    MPI_Comm merged;
    MPI_CHK(MPI_Intercomm_merge(inter, !low, &merged));
    int size, sum = 0, one = 1;
    MPI_CHK(MPI_Comm_size(merged, &size));
    MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK_EQ(sum, size, "allreduce over the merged communicator");
    MPI_CHK(MPI_Comm_free(&merged));
}

/* A connected TCP socket between world ranks 0 and 1 (0 listens, 1 connects). */
static int socket_between_0_and_1(void)
{
    int fd = -1;
    if (t_rank == 0) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;
        CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0, "listen");
        getsockname(l, (struct sockaddr *)&a, &len);
        int port = ntohs(a.sin_port);
        MPI_CHK(MPI_Send(&port, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
        fd = accept(l, NULL, NULL);
        close(l);
    } else if (t_rank == 1) {
        int port;
        MPI_CHK(MPI_Recv(&port, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect");
    }
    return fd;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "connect_accept", 2);
    int low = t_rank < t_size / 2;
    MPI_Comm half;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, !low, t_rank, &half));
    char port[MPI_MAX_PORT_NAME] = "";
    int other_root = t_size / 2;
    if (t_rank == 0) {
        MPI_CHK(MPI_Open_port(MPI_INFO_NULL, port));
        MPI_CHK(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, other_root, 1, MPI_COMM_WORLD));
    } else if (t_rank == other_root) {
        MPI_CHK(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    MPI_Comm inter;
    if (low)
        MPI_CHK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    else
        MPI_CHK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter));
    check_intercomm(inter, low);
    MPI_CHK(MPI_Comm_disconnect(&inter));

    /* The same port again, found through the name service this time. */
    if (t_rank == 0)
        MPI_CHK(MPI_Publish_name("bb-connect-accept", MPI_INFO_NULL, port));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (t_rank == other_root) {
        char found[MPI_MAX_PORT_NAME] = "";
        MPI_CHK(MPI_Lookup_name("bb-connect-accept", MPI_INFO_NULL, found));
        CHECK(strcmp(found, port) == 0, "the looked-up port is the published one");
    }
    if (low)
        MPI_CHK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    else
        MPI_CHK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter));
    check_intercomm(inter, low);
    MPI_CHK(MPI_Comm_disconnect(&inter));
    if (t_rank == 0) {
        MPI_CHK(MPI_Unpublish_name("bb-connect-accept", MPI_INFO_NULL, port));
        char found[MPI_MAX_PORT_NAME];
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Lookup_name("bb-connect-accept", MPI_INFO_NULL, found);
        int class = 0;
        MPI_Error_class(rc, &class);
        CHECK_EQ(class, MPI_ERR_NAME, "lookup of an unpublished name");
        MPI_CHK(MPI_Close_port(port));
    }

    /* MPI_Comm_join between world ranks 0 and 1. */
    int fd = socket_between_0_and_1();
    if (t_rank < 2) {
        MPI_Comm joined;
        MPI_CHK(MPI_Comm_join(fd, &joined));
        int rsize = 0;
        MPI_CHK(MPI_Comm_remote_size(joined, &rsize));
        CHECK_EQ(rsize, 1, "remote size after join");
        int out = t_rank, in = -1;
        MPI_CHK(MPI_Sendrecv(&out, 1, MPI_INT, 0, 4, &in, 1, MPI_INT, 0, 4, joined, MPI_STATUS_IGNORE));
        CHECK_EQ(in, 1 - t_rank, "value over the joined communicator");
        MPI_CHK(MPI_Comm_disconnect(&joined));
        close(fd);
    }
    MPI_CHK(MPI_Comm_free(&half));
    return t_finish();
}
