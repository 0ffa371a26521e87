/* Neighbourhood collectives (every MPI_Neighbor_* and MPI_Ineighbor_*, each persistent _init
 * started every round, and large-count _c forms) on a periodic ring (MPI_Cart_create, 1 dimension), a non-periodic 2-D
 * grid (neighbours off the edge are MPI_PROC_NULL: their parts are left alone) and a
 * distributed graph (each rank sends to the next two, receives from the previous two); every
 * result checked against what the neighbours sent. Any N >= 1. */
#include "common.h"

enum { MAXNB = 8, ROUNDS = 5 };

/* What rank r sends to its k-th destination in the all-to-alls. */
static int payload(int r, int k, int round) { return r * 100 + k * 10 + round; }

/* Checks one communicator with a topology: `nsrc` sources `src[]` and `ndst` destinations
 * (-1 for MPI_PROC_NULL), in MPI's order; `dstk[]`: which of its destinations this rank is to
 * each source (for the all-to-alls). */
static void check(MPI_Comm comm, int nsrc, const int *src, const int *srck, int ndst, const char *what)
{
    int me;
    MPI_CHK(MPI_Comm_rank(comm, &me));
    int sbuf[MAXNB], rbuf[MAXNB], counts[MAXNB], displs[MAXNB], scounts[MAXNB], sdispls[MAXNB];
    MPI_Aint wsd[MAXNB], wrd[MAXNB];
    MPI_Datatype types[MAXNB];
    for (int k = 0; k < MAXNB; k++) {
        counts[k] = scounts[k] = 1;
        displs[k] = sdispls[k] = k;
        wsd[k] = wrd[k] = k * (MPI_Aint)sizeof(int);
        types[k] = MPI_INT;
    }
    /* The persistent forms, made once and started every round. */
    MPI_Request p[5];
    int one = -1;
    MPI_CHK(MPI_Neighbor_allgather_init(&one, 1, MPI_INT, rbuf, 1, MPI_INT, comm, MPI_INFO_NULL, &p[0]));
    MPI_CHK(MPI_Neighbor_allgatherv_init(&one, 1, MPI_INT, rbuf, counts, displs, MPI_INT, comm, MPI_INFO_NULL, &p[1]));
    MPI_CHK(MPI_Neighbor_alltoall_init(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, comm, MPI_INFO_NULL, &p[2]));
    MPI_CHK(MPI_Neighbor_alltoallv_init(sbuf, scounts, sdispls, MPI_INT, rbuf, counts, displs, MPI_INT, comm,
                                        MPI_INFO_NULL, &p[3]));
    MPI_CHK(MPI_Neighbor_alltoallw_init(sbuf, scounts, wsd, types, rbuf, counts, wrd, types, comm, MPI_INFO_NULL,
                                        &p[4]));
    for (int round = 0; round < ROUNDS; round++) {
        /* allgather: blocking, nonblocking, persistent, _c, v, nonblocking v, persistent v. */
        for (int form = 0; form < 7; form++) {
            one = me * 1000 + round * 10 + form;
            for (int k = 0; k < MAXNB; k++)
                rbuf[k] = -7;
            MPI_Request r;
            if (form == 0)
                MPI_CHK(MPI_Neighbor_allgather(&one, 1, MPI_INT, rbuf, 1, MPI_INT, comm));
            else if (form == 1) {
                MPI_CHK(MPI_Ineighbor_allgather(&one, 1, MPI_INT, rbuf, 1, MPI_INT, comm, &r));
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else if (form == 2) {
                MPI_CHK(MPI_Start(&p[0]));
                MPI_CHK(MPI_Wait(&p[0], MPI_STATUS_IGNORE));
            } else if (form == 3)
                MPI_CHK(MPI_Neighbor_allgather_c(&one, 1, MPI_INT, rbuf, 1, MPI_INT, comm));
            else if (form == 4)
                MPI_CHK(MPI_Neighbor_allgatherv(&one, 1, MPI_INT, rbuf, counts, displs, MPI_INT, comm));
            else if (form == 5) {
                MPI_CHK(MPI_Ineighbor_allgatherv(&one, 1, MPI_INT, rbuf, counts, displs, MPI_INT, comm, &r));
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else {
                MPI_CHK(MPI_Start(&p[1]));
                MPI_CHK(MPI_Wait(&p[1], MPI_STATUS_IGNORE));
            }
            for (int k = 0; k < nsrc; k++)
                CHECK_EQ(rbuf[k], src[k] < 0 ? -7 : src[k] * 1000 + round * 10 + form, what);
        }
        /* all-to-all: plain, v, w, nonblocking _c, nonblocking v and w, persistent plain, v, w. */
        for (int form = 0; form < 9; form++) {
            for (int k = 0; k < ndst; k++)
                sbuf[k] = payload(me, k, round + form);
            for (int k = 0; k < MAXNB; k++)
                rbuf[k] = -7;
            MPI_Request r;
            if (form == 0)
                MPI_CHK(MPI_Neighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, comm));
            else if (form == 1)
                MPI_CHK(MPI_Neighbor_alltoallv(sbuf, scounts, sdispls, MPI_INT, rbuf, counts, displs, MPI_INT, comm));
            else if (form == 2)
                MPI_CHK(MPI_Neighbor_alltoallw(sbuf, scounts, wsd, types, rbuf, counts, wrd, types, comm));
            else if (form == 3) {
                MPI_CHK(MPI_Ineighbor_alltoall_c(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, comm, &r));
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else if (form == 4) {
                MPI_CHK(MPI_Ineighbor_alltoallv(sbuf, scounts, sdispls, MPI_INT, rbuf, counts, displs, MPI_INT, comm, &r));
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else if (form == 5) {
                MPI_CHK(MPI_Ineighbor_alltoallw(sbuf, scounts, wsd, types, rbuf, counts, wrd, types, comm, &r));
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else {
                MPI_CHK(MPI_Start(&p[form - 4]));
                MPI_CHK(MPI_Wait(&p[form - 4], MPI_STATUS_IGNORE));
            }
            for (int k = 0; k < nsrc; k++)
                CHECK_EQ(rbuf[k], src[k] < 0 ? -7 : payload(src[k], srck[k], round + form), what);
        }
    }
    for (int k = 0; k < 5; k++)
        MPI_CHK(MPI_Request_free(&p[k]));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "neighbor", 1);
    const int n = t_size, me = t_rank;

    /* A periodic ring: sources and destinations (left, right). With 1 or 2 ranks a neighbour
     * is named twice; messages between one pair match in order, so what left sends to its
     * right arrives first from it. */
    if (n >= 3) {
        MPI_Comm ring;
        int dims[1] = {n}, periods[1] = {1};
        MPI_CHK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
        int src[2] = {(me + n - 1) % n, (me + 1) % n}, srck[2] = {1, 0};
        check(ring, 2, src, srck, 2, "periodic ring");
        MPI_CHK(MPI_Comm_free(&ring));
    }

    /* A non-periodic grid. */
    {
        MPI_Comm grid;
        int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
        MPI_CHK(MPI_Dims_create(n, 2, dims));
        MPI_CHK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid));
        int gr;
        MPI_CHK(MPI_Comm_rank(grid, &gr));
        MPI_CHK(MPI_Cart_coords(grid, gr, 2, coords));
        int src[4], srck[4];
        for (int d = 0; d < 2; d++) {
            int lo, hi;
            MPI_CHK(MPI_Cart_shift(grid, d, 1, &lo, &hi));
            src[2 * d] = lo == MPI_PROC_NULL ? -1 : lo, srck[2 * d] = 2 * d + 1;
            src[2 * d + 1] = hi == MPI_PROC_NULL ? -1 : hi, srck[2 * d + 1] = 2 * d;
        }
        check(grid, 4, src, srck, 4, "non-periodic grid");
        MPI_CHK(MPI_Comm_free(&grid));
    }

    /* A distributed graph: to me+1 and me+2, from me-1 and me-2 (n >= 3 so they differ). */
    if (n >= 3) {
        MPI_Comm g;
        int sources[2] = {(me + n - 1) % n, (me + n - 2) % n}, dests[2] = {(me + 1) % n, (me + 2) % n};
        MPI_CHK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, sources, MPI_UNWEIGHTED, 2, dests, MPI_UNWEIGHTED,
                                               MPI_INFO_NULL, 0, &g));
        int srck[2] = {0, 1};
        check(g, 2, sources, srck, 2, "distributed graph");
        MPI_CHK(MPI_Comm_free(&g));
    }

    /* No topology: an error, not a hang. */
    int x = 0, y[8];
    int rc = MPI_Neighbor_allgather(&x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_TOPOLOGY, "a neighbourhood collective on a communicator without a topology");
    return t_finish();
}
