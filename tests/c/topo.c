/* Cartesian topologies: Dims_create, Cart_create (periodic and not, fewer nodes than ranks),
 * Cartdim_get, Cart_get, Cart_coords, Cart_rank (wrapping), Cart_shift (PROC_NULL at borders),
 * Cart_sub, Topo_test; a halo exchange over the shifts. Any N >= 1. */
#include "common.h"

static void dims_case(int nnodes, int ndims, const int *in, const int *want)
{
    int d[8];
    memcpy(d, in, sizeof(int) * (size_t)ndims);
    MPI_CHK(MPI_Dims_create(nnodes, ndims, d));
    for (int i = 0; i < ndims; i++)
        CHECK(d[i] == want[i], "Dims_create(%d, %d): dim %d expected %d, got %d", nnodes, ndims, i, want[i], d[i]);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "topo", 1);
    const int rank = t_rank, size = t_size;

    /* Dims_create: balanced, non-increasing; fixed entries kept. */
    dims_case(12, 2, (int[]){0, 0}, (int[]){4, 3});
    dims_case(16, 2, (int[]){0, 0}, (int[]){4, 4});
    dims_case(7, 2, (int[]){0, 0}, (int[]){7, 1});
    dims_case(24, 3, (int[]){0, 0, 0}, (int[]){4, 3, 2});
    dims_case(12, 3, (int[]){0, 3, 0}, (int[]){2, 3, 2});
    dims_case(6, 2, (int[]){0, 6}, (int[]){1, 6});
    dims_case(1, 3, (int[]){0, 0, 0}, (int[]){1, 1, 1});
    dims_case(8, 1, (int[]){0}, (int[]){8});
    /* MPICH 4.0.2's answers where the most balanced grid is not what handing out prime factors
     * largest first gives, where spreads tie, and large ones (from a program run with MPICH). */
    {
        static const struct {
            int n, ndims, in[8], want[8];
        } mpich[] = {
        {72, 2, {0, 0}, {9, 8}},
        {180, 2, {0, 0}, {15, 12}},
        {240, 2, {0, 0}, {16, 15}},
        {288, 2, {0, 0}, {18, 16}},
        {336, 2, {0, 0}, {21, 16}},
        {144, 3, {2, 0, 0}, {2, 9, 8}},
        {216, 3, {0, 3, 0}, {9, 3, 8}},
        {144, 3, {0, 0, 2}, {9, 8, 2}},
        {72, 3, {0, 0, 0}, {6, 4, 3}},
        {20, 4, {0, 0, 0, 0}, {5, 2, 2, 1}},
        {360, 3, {0, 0, 0}, {10, 6, 6}},
        {99, 4, {0, 0, 0, 0}, {11, 3, 3, 1}},
        {110, 4, {0, 0, 0, 0}, {11, 5, 2, 1}},
        {210, 5, {0, 0, 0, 0, 0}, {7, 5, 3, 2, 1}},
        {384, 5, {0, 0, 0, 0, 0}, {4, 4, 4, 3, 2}},
        {720720, 2, {0, 0}, {858, 840}},
        {1048576, 3, {0, 0, 0}, {128, 128, 64}},
        {5040, 4, {0, 0, 0, 0}, {10, 9, 8, 7}},
        {65536, 5, {0, 0, 0, 4, 0}, {16, 16, 8, 4, 8}},
        {30030, 6, {0, 0, 0, 0, 0, 0}, {13, 11, 7, 5, 3, 2}},
        {1000000, 7, {0, 0, 0, 0, 0, 0, 0}, {10, 10, 10, 8, 5, 5, 5}},
        {4096, 2, {0, 0}, {64, 64}},
        {46080, 3, {0, 4, 0}, {120, 4, 96}},
        {362880, 4, {0, 0, 0, 0}, {28, 27, 24, 20}},
        {100000, 5, {0, 0, 0, 0, 0}, {10, 10, 10, 10, 10}},
        };
        for (unsigned i = 0; i < sizeof mpich / sizeof *mpich; i++)
            dims_case(mpich[i].n, mpich[i].ndims, mpich[i].in, mpich[i].want);
    }

    int topo = -5;
    MPI_CHK(MPI_Topo_test(MPI_COMM_WORLD, &topo));
    CHECK_EQ(topo, MPI_UNDEFINED, "Topo_test(world)");

    /* 2D grid over all ranks: dim 0 periodic, dim 1 not. */
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_CHK(MPI_Dims_create(size, 2, dims));
    CHECK_EQ(dims[0] * dims[1], size, "Dims_create product");
    CHECK(dims[0] >= dims[1], "Dims_create not non-increasing: %d x %d", dims[0], dims[1]);
    MPI_Comm cart;
    MPI_CHK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    CHECK(cart != MPI_COMM_NULL, "Cart_create gave MPI_COMM_NULL to a member");
    MPI_CHK(MPI_Topo_test(cart, &topo));
    CHECK_EQ(topo, MPI_CART, "Topo_test(cart)");
    int nd = -1;
    MPI_CHK(MPI_Cartdim_get(cart, &nd));
    CHECK_EQ(nd, 2, "Cartdim_get");
    int gd[2], gp[2], gc[2];
    MPI_CHK(MPI_Cart_get(cart, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1], "Cart_get dims %dx%d, expected %dx%d", gd[0], gd[1], dims[0], dims[1]);
    CHECK(gp[0] == 1 && gp[1] == 0, "Cart_get periods %d,%d", gp[0], gp[1]);
    int cr;
    MPI_CHK(MPI_Comm_rank(cart, &cr));
    CHECK_EQ(cr, rank, "rank in cart without reorder");
    /* Row-major: rank = c0 * dims[1] + c1. */
    CHECK(gc[0] == rank / dims[1] && gc[1] == rank % dims[1], "Cart_get coords (%d,%d) for rank %d", gc[0], gc[1],
          rank);
    for (int r = 0; r < size; r++) {
        int c[2] = {-1, -1};
        MPI_CHK(MPI_Cart_coords(cart, r, 2, c));
        CHECK(c[0] == r / dims[1] && c[1] == r % dims[1], "Cart_coords(%d) = (%d,%d)", r, c[0], c[1]);
        int back = -1;
        MPI_CHK(MPI_Cart_rank(cart, c, &back));
        CHECK_EQ(back, r, "Cart_rank(Cart_coords(r))");
    }
    /* Periodic dimension wraps in Cart_rank. */
    {
        int c[2] = {gc[0] + dims[0], gc[1]}, r = -1;
        MPI_CHK(MPI_Cart_rank(cart, c, &r));
        CHECK_EQ(r, rank, "Cart_rank with coordinate + dims in a periodic dim");
        c[0] = gc[0] - dims[0];
        MPI_CHK(MPI_Cart_rank(cart, c, &r));
        CHECK_EQ(r, rank, "Cart_rank with coordinate - dims in a periodic dim");
    }

    /* Shifts. */
    int src0, dst0, src1, dst1;
    MPI_CHK(MPI_Cart_shift(cart, 0, 1, &src0, &dst0));
    CHECK_EQ(src0, ((gc[0] - 1 + dims[0]) % dims[0]) * dims[1] + gc[1], "Cart_shift dim 0 source (periodic)");
    CHECK_EQ(dst0, ((gc[0] + 1) % dims[0]) * dims[1] + gc[1], "Cart_shift dim 0 dest (periodic)");
    MPI_CHK(MPI_Cart_shift(cart, 1, 1, &src1, &dst1));
    CHECK_EQ(src1, gc[1] == 0 ? MPI_PROC_NULL : rank - 1, "Cart_shift dim 1 source (non-periodic)");
    CHECK_EQ(dst1, gc[1] == dims[1] - 1 ? MPI_PROC_NULL : rank + 1, "Cart_shift dim 1 dest (non-periodic)");
    {
        int s, d;
        MPI_CHK(MPI_Cart_shift(cart, 1, -1, &s, &d));
        CHECK(s == dst1 && d == src1, "Cart_shift by -1 is the reverse of +1");
    }

    /* Halo exchange along both dimensions with the shift results. */
    {
        int got = -7;
        MPI_CHK(MPI_Sendrecv(&rank, 1, MPI_INT, dst0, 0, &got, 1, MPI_INT, src0, 0, cart, MPI_STATUS_IGNORE));
        CHECK_EQ(got, src0, "halo dim 0");
        got = -7;
        MPI_CHK(MPI_Sendrecv(&rank, 1, MPI_INT, dst1, 1, &got, 1, MPI_INT, src1, 1, cart, MPI_STATUS_IGNORE));
        CHECK_EQ(got, src1 == MPI_PROC_NULL ? -7 : src1, "halo dim 1");
    }

    /* Cart_sub keeping dim 1: rows. */
    {
        int keep[2] = {0, 1};
        MPI_Comm row;
        MPI_CHK(MPI_Cart_sub(cart, keep, &row));
        int rs, rr, rnd;
        MPI_CHK(MPI_Comm_size(row, &rs));
        MPI_CHK(MPI_Comm_rank(row, &rr));
        CHECK_EQ(rs, dims[1], "Cart_sub row size");
        CHECK_EQ(rr, gc[1], "Cart_sub row rank");
        MPI_CHK(MPI_Cartdim_get(row, &rnd));
        CHECK_EQ(rnd, 1, "Cart_sub row ndims");
        MPI_CHK(MPI_Topo_test(row, &topo));
        CHECK_EQ(topo, MPI_CART, "Topo_test(Cart_sub)");
        int sum = -1;
        MPI_CHK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, row));
        int want = 0;
        for (int j = 0; j < dims[1]; j++)
            want += gc[0] * dims[1] + j;
        CHECK_EQ(sum, want, "sum over a Cart_sub row");
        MPI_CHK(MPI_Comm_free(&row));
        /* (Cart_sub keeping no dimension is not tested: MPICH 4.0.2 gives a size-1 communicator
         * to cart rank 0 and MPI_COMM_NULL to the others.) */
    }
    /* A dup of a cart keeps its topology. */
    {
        MPI_Comm d;
        MPI_CHK(MPI_Comm_dup(cart, &d));
        MPI_CHK(MPI_Topo_test(d, &topo));
        CHECK_EQ(topo, MPI_CART, "Topo_test(dup of cart)");
        MPI_CHK(MPI_Comm_free(&d));
    }
    MPI_CHK(MPI_Comm_free(&cart));

    /* A 1D ring smaller than the world: extra ranks get MPI_COMM_NULL. */
    {
        int n1 = size > 1 ? size - 1 : 1, p1 = 1;
        MPI_Comm ring;
        MPI_CHK(MPI_Cart_create(MPI_COMM_WORLD, 1, &n1, &p1, 0, &ring));
        if (rank < n1) {
            CHECK(ring != MPI_COMM_NULL, "1D cart: member got MPI_COMM_NULL");
            int s, d;
            MPI_CHK(MPI_Cart_shift(ring, 0, 2, &s, &d));
            CHECK_EQ(d, (rank + 2) % n1, "1D periodic shift by 2: dest");
            CHECK_EQ(s, ((rank - 2) % n1 + n1) % n1, "1D periodic shift by 2: source");
            MPI_CHK(MPI_Comm_free(&ring));
        } else {
            CHECK(ring == MPI_COMM_NULL, "1D cart: rank %d beyond %d nodes got a communicator", rank, n1);
        }
    }
    /* Reorder allowed: still a valid cart with all ranks. */
    {
        int d3[3] = {0, 0, 0}, p3[3] = {0, 1, 0};
        MPI_CHK(MPI_Dims_create(size, 3, d3));
        MPI_Comm c3;
        MPI_CHK(MPI_Cart_create(MPI_COMM_WORLD, 3, d3, p3, 1, &c3));
        int r3, c[3], back;
        MPI_CHK(MPI_Comm_rank(c3, &r3));
        MPI_CHK(MPI_Cart_coords(c3, r3, 3, c));
        MPI_CHK(MPI_Cart_rank(c3, c, &back));
        CHECK_EQ(back, r3, "3D cart rank/coords round trip");
        int sum = -1;
        MPI_CHK(MPI_Allreduce(&r3, &sum, 1, MPI_INT, MPI_SUM, c3));
        CHECK_EQ(sum, size * (size - 1) / 2, "sum of ranks in reordered 3D cart");
        MPI_CHK(MPI_Comm_free(&c3));
    }
    return t_finish();
}
