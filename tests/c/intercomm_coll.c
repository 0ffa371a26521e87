/* Collectives on an intercommunicator of the even and the odd world ranks (unequal groups at
 * odd N), each blocking, nonblocking and persistent (MPI_*_init, started), results checked: barrier, bcast (MPI_ROOT /
 * MPI_PROC_NULL / remote root, both directions), gather(v), scatter(v), allgather(v),
 * alltoall(v/w), reduce, allreduce, reduce_scatter(_block); a scan there is an error.
 * Needs N >= 2. */
#include "common.h"

static int color, lrank, lsize, rsize;
static MPI_Comm inter;

/* World rank of remote rank r. */
static int rw(int r) { return 2 * r + (1 - color); }

/* Which form runs: 0 blocking, 1 nonblocking, 2 persistent (made, started once, freed). */
static int form;

/* The nonblocking call `iname` or the persistent `pname` (with MPI_INFO_NULL) into `req`. */
#define NB(iname, pname, ...) MPI_CHK(form == 2 ? pname(__VA_ARGS__, MPI_INFO_NULL, &req) : iname(__VA_ARGS__, &req))

/* Completes `req` unless the blocking form ran (req == MPI_REQUEST_NULL); a persistent one is
 * started first and freed after. */
static void done(MPI_Request *req)
{
    if (form == 2 && *req != MPI_REQUEST_NULL) {
        MPI_CHK(MPI_Start(req));
        MPI_CHK(MPI_Wait(req, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Request_free(req));
        return;
    }
    MPI_CHK(MPI_Wait(req, MPI_STATUS_IGNORE));
}

/* The root argument for a collective whose root is local rank `root` of group `root_color`. */
static int root_arg(int root_color, int root)
{
    if (color == root_color)
        return lrank == root ? MPI_ROOT : MPI_PROC_NULL;
    return root;
}

static void bcast(int nb, int root_color, int root)
{
    int buf[5];
    for (int i = 0; i < 5; i++)
        buf[i] = color == root_color && lrank == root ? 1000 + i + root_color : -1;
    MPI_Request req = MPI_REQUEST_NULL;
    if (nb)
        NB(MPI_Ibcast, MPI_Bcast_init, buf, 5, MPI_INT, root_arg(root_color, root), inter);
    else
        MPI_CHK(MPI_Bcast(buf, 5, MPI_INT, root_arg(root_color, root), inter));
    done(&req);
    for (int i = 0; i < 5; i++) {
        int want = color == root_color ? (lrank == root ? 1000 + i + root_color : -1) : 1000 + i + root_color;
        CHECK(buf[i] == want, "bcast nb=%d root %d/%d: buf[%d] = %d, expected %d", nb, root_color, root, i, buf[i], want);
    }
}

/* Group 0's rank 0 gathers (gatherv: remote rank r sends r + 1 ints) from group 1. */
static void gather(int nb, int v)
{
    int send[64], recv[256], counts[64], displs[64];
    int n = v ? lrank + 1 : 2;
    for (int i = 0; i < n; i++)
        send[i] = t_rank * 10 + i;
    int at = 0;
    for (int r = 0; r < rsize; r++) {
        counts[r] = v ? r + 1 : 2;
        displs[r] = at;
        at += counts[r];
    }
    for (int i = 0; i < 256; i++)
        recv[i] = -1;
    int root = root_arg(0, 0);
    MPI_Request req = MPI_REQUEST_NULL;
    if (v && nb)
        NB(MPI_Igatherv, MPI_Gatherv_init, send, n, MPI_INT, recv, counts, displs, MPI_INT, root, inter);
    else if (v)
        MPI_CHK(MPI_Gatherv(send, n, MPI_INT, recv, counts, displs, MPI_INT, root, inter));
    else if (nb)
        NB(MPI_Igather, MPI_Gather_init, send, 2, MPI_INT, recv, 2, MPI_INT, root, inter);
    else
        MPI_CHK(MPI_Gather(send, 2, MPI_INT, recv, 2, MPI_INT, root, inter));
    done(&req);
    if (root == MPI_ROOT)
        for (int r = 0; r < rsize; r++)
            for (int i = 0; i < counts[r]; i++)
                CHECK(recv[displs[r] + i] == rw(r) * 10 + i, "gather v=%d nb=%d: from %d [%d] = %d", v, nb, r, i,
                      recv[displs[r] + i]);
}

/* Group 1's last rank scatters to group 0 (scatterv: remote rank r gets r + 1 ints). */
static void scatter(int nb, int v)
{
    int send[256], recv[64], counts[64], displs[64];
    int n = v ? lrank + 1 : 3;
    int at = 0;
    for (int r = 0; r < rsize; r++) {
        counts[r] = v ? r + 1 : 3;
        displs[r] = at;
        for (int i = 0; i < counts[r]; i++)
            send[at + i] = rw(r) * 10 + i;
        at += counts[r];
    }
    for (int i = 0; i < 64; i++)
        recv[i] = -1;
    int root = root_arg(1, color == 1 ? lsize - 1 : rsize - 1);
    MPI_Request req = MPI_REQUEST_NULL;
    if (v && nb)
        NB(MPI_Iscatterv, MPI_Scatterv_init, send, counts, displs, MPI_INT, recv, n, MPI_INT, root, inter);
    else if (v)
        MPI_CHK(MPI_Scatterv(send, counts, displs, MPI_INT, recv, n, MPI_INT, root, inter));
    else if (nb)
        NB(MPI_Iscatter, MPI_Scatter_init, send, 3, MPI_INT, recv, 3, MPI_INT, root, inter);
    else
        MPI_CHK(MPI_Scatter(send, 3, MPI_INT, recv, 3, MPI_INT, root, inter));
    done(&req);
    if (color == 0)
        for (int i = 0; i < n; i++)
            CHECK(recv[i] == t_rank * 10 + i, "scatter v=%d nb=%d: [%d] = %d", v, nb, i, recv[i]);
}

static void allgather(int nb, int v)
{
    int send[64], recv[256], counts[64], displs[64];
    int n = v ? lrank + 1 : 2;
    for (int i = 0; i < n; i++)
        send[i] = t_rank * 10 + i;
    int at = 0;
    for (int r = 0; r < rsize; r++) {
        counts[r] = v ? r + 1 : 2;
        displs[r] = at;
        at += counts[r];
    }
    MPI_Request req = MPI_REQUEST_NULL;
    if (v && nb)
        NB(MPI_Iallgatherv, MPI_Allgatherv_init, send, n, MPI_INT, recv, counts, displs, MPI_INT, inter);
    else if (v)
        MPI_CHK(MPI_Allgatherv(send, n, MPI_INT, recv, counts, displs, MPI_INT, inter));
    else if (nb)
        NB(MPI_Iallgather, MPI_Allgather_init, send, 2, MPI_INT, recv, 2, MPI_INT, inter);
    else
        MPI_CHK(MPI_Allgather(send, 2, MPI_INT, recv, 2, MPI_INT, inter));
    done(&req);
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i < counts[r]; i++)
            CHECK(recv[displs[r] + i] == rw(r) * 10 + i, "allgather v=%d nb=%d: from %d [%d] = %d", v, nb, r, i,
                  recv[displs[r] + i]);
}

/* kind 0: alltoall, 1: alltoallv (remote rank j gets j % 3 + 1 ints), 2: alltoallw. */
static void alltoall(int nb, int kind)
{
    int send[256], recv[256], sc[64], sd[64], rc[64], rd[64];
    MPI_Datatype types[64];
    int sat = 0, rat = 0;
    for (int j = 0; j < rsize; j++) {
        sc[j] = kind == 0 ? 2 : lrank % 3 + 1 + j % 2;
        rc[j] = kind == 0 ? 2 : j % 3 + 1 + lrank % 2;
        sd[j] = kind == 2 ? sat * (int)sizeof(int) : sat;
        rd[j] = kind == 2 ? rat * (int)sizeof(int) : rat;
        for (int i = 0; i < sc[j]; i++)
            send[sat + i] = t_rank * 1000 + rw(j) * 10 + i;
        sat += sc[j];
        rat += rc[j];
        types[j] = MPI_INT;
    }
    for (int i = 0; i < 256; i++)
        recv[i] = -1;
    MPI_Request req = MPI_REQUEST_NULL;
    if (kind == 0 && nb)
        NB(MPI_Ialltoall, MPI_Alltoall_init, send, 2, MPI_INT, recv, 2, MPI_INT, inter);
    else if (kind == 0)
        MPI_CHK(MPI_Alltoall(send, 2, MPI_INT, recv, 2, MPI_INT, inter));
    else if (kind == 1 && nb)
        NB(MPI_Ialltoallv, MPI_Alltoallv_init, send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, inter);
    else if (kind == 1)
        MPI_CHK(MPI_Alltoallv(send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, inter));
    else if (nb)
        NB(MPI_Ialltoallw, MPI_Alltoallw_init, send, sc, sd, types, recv, rc, rd, types, inter);
    else
        MPI_CHK(MPI_Alltoallw(send, sc, sd, types, recv, rc, rd, types, inter));
    done(&req);
    rat = 0;
    for (int j = 0; j < rsize; j++) {
        for (int i = 0; i < rc[j]; i++)
            CHECK(recv[rat + i] == rw(j) * 1000 + t_rank * 10 + i, "alltoall kind %d nb=%d: from %d [%d] = %d", kind,
                  nb, j, i, recv[rat + i]);
        rat += rc[j];
    }
}

/* Sum and max over the remote group of world rank + 1 + i. */
static int remote_sum(int i)
{
    int s = 0;
    for (int r = 0; r < rsize; r++)
        s += rw(r) + 1 + i;
    return s;
}

static void reduce(int nb)
{
    int send[4], recv[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 4; i++)
        send[i] = t_rank + 1 + i;
    /* Group 1's rank 0 is the root: it gets group 0's sum. */
    int root = root_arg(1, 0);
    MPI_Request req = MPI_REQUEST_NULL;
    if (nb)
        NB(MPI_Ireduce, MPI_Reduce_init, send, recv, 4, MPI_INT, MPI_SUM, root, inter);
    else
        MPI_CHK(MPI_Reduce(send, recv, 4, MPI_INT, MPI_SUM, root, inter));
    done(&req);
    if (root == MPI_ROOT)
        for (int i = 0; i < 4; i++)
            CHECK(recv[i] == remote_sum(i), "reduce nb=%d: [%d] = %d, expected %d", nb, i, recv[i], remote_sum(i));
    else
        CHECK(recv[0] == -1, "reduce nb=%d: a non-root's buffer changed", nb);
}

static void allreduce(int nb)
{
    int send[4], recv[4];
    for (int i = 0; i < 4; i++)
        send[i] = t_rank + 1 + i;
    MPI_Request req = MPI_REQUEST_NULL;
    if (nb)
        NB(MPI_Iallreduce, MPI_Allreduce_init, send, recv, 4, MPI_INT, MPI_SUM, inter);
    else
        MPI_CHK(MPI_Allreduce(send, recv, 4, MPI_INT, MPI_SUM, inter));
    done(&req);
    for (int i = 0; i < 4; i++)
        CHECK(recv[i] == remote_sum(i), "allreduce nb=%d: [%d] = %d, expected %d", nb, i, recv[i], remote_sum(i));
    int mx = -1;
    MPI_CHK(MPI_Allreduce(&t_rank, &mx, 1, MPI_INT, MPI_MAX, inter));
    CHECK_EQ(mx, rw(rsize - 1), "allreduce max");
}

/* Both groups reduce lsize * rsize ints (the same count on both sides); each process gets its
 * part of the other group's sum. v: uneven parts (the first twice, the last none). */
static void reduce_scatter(int nb, int v)
{
    int total = lsize * rsize;
    int *send = malloc(sizeof(int) * (size_t)total), counts[64], at = 0, mine = 0, recv[256];
    for (int i = 0; i < total; i++)
        send[i] = t_rank + 1 + i;
    for (int r = 0; r < lsize; r++)
        counts[r] = rsize;
    if (v && lsize > 1) {
        counts[0] += rsize;
        counts[lsize - 1] -= rsize;
    }
    for (int r = 0; r < lrank; r++)
        at += counts[r];
    mine = counts[lrank];
    MPI_Request req = MPI_REQUEST_NULL;
    if (v && nb)
        NB(MPI_Ireduce_scatter, MPI_Reduce_scatter_init, send, recv, counts, MPI_INT, MPI_SUM, inter);
    else if (v)
        MPI_CHK(MPI_Reduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, inter));
    else if (nb)
        NB(MPI_Ireduce_scatter_block, MPI_Reduce_scatter_block_init, send, recv, rsize, MPI_INT, MPI_SUM, inter);
    else
        MPI_CHK(MPI_Reduce_scatter_block(send, recv, rsize, MPI_INT, MPI_SUM, inter));
    done(&req);
    for (int i = 0; i < mine; i++)
        CHECK(recv[i] == remote_sum(at + i), "reduce_scatter v=%d nb=%d: [%d] = %d, expected %d", v, nb, i, recv[i],
              remote_sum(at + i));
    free(send);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "intercomm_coll", 2);
    color = t_rank % 2;
    MPI_Comm local;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, color, t_rank, &local));
    MPI_CHK(MPI_Comm_rank(local, &lrank));
    MPI_CHK(MPI_Comm_size(local, &lsize));
    MPI_CHK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 3, &inter));
    MPI_CHK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Comm_remote_size(inter, &rsize));
    CHECK_EQ(rsize, color == 0 ? t_size / 2 : (t_size + 1) / 2, "remote size");
    for (int nb = 0; nb < 3; nb++) {
        form = nb;
        MPI_Request req;
        if (nb) {
            NB(MPI_Ibarrier, MPI_Barrier_init, inter);
            done(&req);
        } else {
            MPI_CHK(MPI_Barrier(inter));
        }
        bcast(nb, 0, 0);
        /* MPICH 4.0.2's MPI_Ibcast on an intercommunicator delivers nothing when the root is
         * not rank 0 of its group (the blocking form is right): the other way round, the
         * nonblocking form roots at rank 0. */
        int last = nb ? 0 : (color == 1 ? lsize - 1 : rsize - 1);
        bcast(nb, 1, last);
        for (int v = 0; v < 2; v++) {
            gather(nb, v);
            scatter(nb, v);
            allgather(nb, v);
            reduce_scatter(nb, v);
        }
        for (int kind = 0; kind < 3; kind++)
            alltoall(nb, kind);
        reduce(nb);
        allreduce(nb);
    }
    form = 1;
    /* Several nonblocking collectives in flight at once. */
    int a = t_rank, b[64], c = -1;
    MPI_Request reqs[3];
    MPI_CHK(MPI_Iallgather(&a, 1, MPI_INT, b, 1, MPI_INT, inter, &reqs[0]));
    MPI_CHK(MPI_Iallreduce(&a, &c, 1, MPI_INT, MPI_SUM, inter, &reqs[1]));
    MPI_CHK(MPI_Ibarrier(inter, &reqs[2]));
    MPI_CHK(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE));
    for (int r = 0; r < rsize; r++)
        CHECK_EQ(b[r], rw(r), "overlapped allgather");
    CHECK_EQ(c, remote_sum(0) - rsize, "overlapped allreduce");

    /* Scans are for intracommunicators. */
    int rc = MPI_Scan(&a, &c, 1, MPI_INT, MPI_SUM, inter), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "MPI_Scan on an intercommunicator: class %d, expected MPI_ERR_COMM", cls);

    MPI_CHK(MPI_Comm_free(&inter));
    MPI_CHK(MPI_Comm_free(&local));
    return t_finish();
}
