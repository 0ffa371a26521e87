/* Graph and distributed graph topologies: MPI_Graph_create (ring; with fewer nodes than ranks the
 * others get MPI_COMM_NULL), MPI_Topo_test, MPI_Graphdims_get, MPI_Graph_get, MPI_Graph_neighbors
 * (_count), MPI_Graph_map, the topology surviving MPI_Comm_dup; MPI_Dist_graph_create_adjacent
 * (weighted and MPI_UNWEIGHTED), MPI_Dist_graph_create with edges given by other ranks than their
 * ends, MPI_Dist_graph_neighbors(_count); messages along the graph; a Cartesian query on a graph
 * communicator and a graph query on a plain one are MPI_ERR_TOPOLOGY. Any N >= 1. */
#include "common.h"
#include <stdlib.h>

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void check_ring_graph(MPI_Comm g, int n, const char *what)
{
    int status, nnodes, nedges;
    MPI_CHK(MPI_Topo_test(g, &status));
    CHECK_EQ(status, MPI_GRAPH, what);
    MPI_CHK(MPI_Graphdims_get(g, &nnodes, &nedges));
    CHECK(nnodes == n && nedges == 2 * n, "%s: Graphdims_get %d nodes %d edges, expected %d and %d", what, nnodes,
          nedges, n, 2 * n);
    int index[8], edges[16];
    MPI_CHK(MPI_Graph_get(g, n, 2 * n, index, edges));
    for (int i = 0; i < n; i++) {
        CHECK(index[i] == 2 * (i + 1), "%s: index[%d] = %d, expected %d", what, i, index[i], 2 * (i + 1));
        CHECK(edges[2 * i] == (i + n - 1) % n && edges[2 * i + 1] == (i + 1) % n, "%s: node %d edges %d %d", what, i,
              edges[2 * i], edges[2 * i + 1]);
    }
    for (int i = 0; i < n; i++) {
        int k, nb[2] = {-1, -1};
        MPI_CHK(MPI_Graph_neighbors_count(g, i, &k));
        CHECK_EQ(k, 2, "Graph_neighbors_count");
        MPI_CHK(MPI_Graph_neighbors(g, i, 2, nb));
        CHECK(nb[0] == (i + n - 1) % n && nb[1] == (i + 1) % n, "%s: neighbours of %d: %d %d", what, i, nb[0], nb[1]);
    }
    int k, rc = MPI_Graph_neighbors_count(g, n, &k);
    CHECK(rc != MPI_SUCCESS, "%s: Graph_neighbors_count of node %d (of %d) succeeded", what, n, n);
    int ndims, cls;
    rc = MPI_Cartdim_get(g, &ndims);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_TOPOLOGY, "Cartdim_get on a graph communicator");
    /* A message around the ring. */
    int rank, size, got = -1;
    MPI_CHK(MPI_Comm_rank(g, &rank));
    MPI_CHK(MPI_Comm_size(g, &size));
    CHECK_EQ(size, n, "graph communicator size");
    MPI_CHK(MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % n, 5, &got, 1, MPI_INT, (rank + n - 1) % n, 5, g,
                         MPI_STATUS_IGNORE));
    CHECK_EQ(got, (rank + n - 1) % n, "ring message on the graph communicator");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "topo_graph", 1);
    int n = t_size, me = t_rank;
    if (n > 8)
        FAIL("written for at most 8 ranks, got %d", n);
    int index[8], edges[16];
    for (int i = 0; i < n; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + n - 1) % n;
        edges[2 * i + 1] = (i + 1) % n;
    }
    MPI_Comm g, d;
    MPI_CHK(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g));
    check_ring_graph(g, n, "ring graph");
    MPI_CHK(MPI_Comm_dup(g, &d));
    check_ring_graph(d, n, "dup of the ring graph");
    MPI_CHK(MPI_Comm_free(&d));
    MPI_CHK(MPI_Comm_free(&g));
    int newrank;
    MPI_CHK(MPI_Graph_map(MPI_COMM_WORLD, n, index, edges, &newrank));
    CHECK_EQ(newrank, me, "Graph_map rank");

    /* Fewer nodes than ranks: the last rank is left out. */
    if (n > 1) {
        int m = n - 1;
        for (int i = 0; i < m; i++) {
            index[i] = 2 * (i + 1);
            edges[2 * i] = (i + m - 1) % m;
            edges[2 * i + 1] = (i + 1) % m;
        }
        MPI_CHK(MPI_Graph_create(MPI_COMM_WORLD, m, index, edges, 0, &g));
        if (me == m) {
            CHECK(g == MPI_COMM_NULL, "rank %d outside a %d-node graph got a communicator", me, m);
        } else {
            check_ring_graph(g, m, "smaller ring graph");
            MPI_CHK(MPI_Comm_free(&g));
        }
    }

    /* A plain communicator has no graph. */
    int st, nn, ne, rc, cls;
    MPI_CHK(MPI_Topo_test(MPI_COMM_WORLD, &st));
    CHECK_EQ(st, MPI_UNDEFINED, "Topo_test of MPI_COMM_WORLD");
    rc = MPI_Graphdims_get(MPI_COMM_WORLD, &nn, &ne);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_TOPOLOGY, "Graphdims_get on MPI_COMM_WORLD");

    /* Adjacent distributed graph: in from the left neighbour, out to the right, weighted. */
    int left = (me + n - 1) % n, right = (me + 1) % n;
    int lw = 10 + left, rw = 10 + me;
    MPI_CHK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &lw, 1, &right, &rw, MPI_INFO_NULL, 0, &d));
    MPI_CHK(MPI_Topo_test(d, &st));
    CHECK_EQ(st, MPI_DIST_GRAPH, "Topo_test of a distributed graph");
    int indeg, outdeg, weighted;
    MPI_CHK(MPI_Dist_graph_neighbors_count(d, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && weighted, "adjacent: counts %d %d weighted %d", indeg, outdeg, weighted);
    int src = -1, sw = -1, dst = -1, dw = -1;
    MPI_CHK(MPI_Dist_graph_neighbors(d, 1, &src, &sw, 1, &dst, &dw));
    CHECK(src == left && sw == lw && dst == right && dw == rw, "adjacent: neighbours %d (w %d) -> %d (w %d)", src, sw,
          dst, dw);
    int got = -1;
    MPI_CHK(MPI_Sendrecv(&me, 1, MPI_INT, dst, 3, &got, 1, MPI_INT, src, 3, d, MPI_STATUS_IGNORE));
    CHECK_EQ(got, left, "message along the distributed graph");
    MPI_CHK(MPI_Comm_free(&d));
    MPI_CHK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right, MPI_UNWEIGHTED,
                                           MPI_INFO_NULL, 0, &d));
    MPI_CHK(MPI_Dist_graph_neighbors_count(d, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && !weighted, "unweighted adjacent: counts %d %d weighted %d", indeg, outdeg,
          weighted);
    MPI_CHK(MPI_Comm_free(&d));

    /* General distributed graph: rank r gives the edge r -> r+1 (weight r+1); rank 0 also gives
     * s -> s for every s (weight 100 + s), edges it neither starts nor ends. */
    int srcs[9], degs[9], dsts[9], wts[9], k = 0;
    srcs[k] = me, degs[k] = 1, dsts[k] = right, wts[k] = me + 1, k++;
    if (me == 0)
        for (int s = 0; s < n; s++)
            srcs[k] = s, degs[k] = 1, dsts[k] = s, wts[k] = 100 + s, k++;
    MPI_CHK(MPI_Dist_graph_create(MPI_COMM_WORLD, k, srcs, degs, dsts, wts, MPI_INFO_NULL, 0, &d));
    MPI_CHK(MPI_Dist_graph_neighbors_count(d, &indeg, &outdeg, &weighted));
    CHECK(indeg == 2 && outdeg == 2 && weighted, "Dist_graph_create: counts %d %d weighted %d", indeg, outdeg,
          weighted);
    int in[2], inw[2], outn[2], outw[2];
    MPI_CHK(MPI_Dist_graph_neighbors(d, 2, in, inw, 2, outn, outw));
    /* The order is the library's: compare as sets of (rank * 1000 + weight). */
    int a[2] = {in[0] * 1000 + inw[0], in[1] * 1000 + inw[1]}, b[2] = {outn[0] * 1000 + outw[0], outn[1] * 1000 + outw[1]};
    int ea[2] = {left * 1000 + left + 1, me * 1000 + 100 + me}, eb[2] = {right * 1000 + me + 1, me * 1000 + 100 + me};
    qsort(a, 2, sizeof(int), cmp_int), qsort(b, 2, sizeof(int), cmp_int);
    qsort(ea, 2, sizeof(int), cmp_int), qsort(eb, 2, sizeof(int), cmp_int);
    CHECK(a[0] == ea[0] && a[1] == ea[1], "Dist_graph_create: in-edges %d %d, expected %d %d", a[0], a[1], ea[0], ea[1]);
    CHECK(b[0] == eb[0] && b[1] == eb[1], "Dist_graph_create: out-edges %d %d, expected %d %d", b[0], b[1], eb[0], eb[1]);
    MPI_CHK(MPI_Comm_free(&d));
    return t_finish();
}
