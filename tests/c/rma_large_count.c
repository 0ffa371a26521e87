/* The large-count (_c) one-sided calls of MPI 4.0: windows made by MPI_Win_create_c,
 * MPI_Win_allocate_c and MPI_Win_allocate_shared_c (with MPI_Win_shared_query_c), and
 * MPI_Put_c, MPI_Get_c, MPI_Accumulate_c, MPI_Get_accumulate_c and their request-based forms
 * (MPI_Rput_c, MPI_Rget_c, MPI_Raccumulate_c, MPI_Rget_accumulate_c) around a ring, with MPI_Count
 * counts and MPI_Aint displacement units, checked against the int forms' results. Any N >= 1. */
#include "common.h"

enum { N = 256 };

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "rma_large_count", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    int *base = NULL;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate_c((MPI_Aint)(3 * N * sizeof(int)), (MPI_Aint)sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &base, &win));
    for (int i = 0; i < 3 * N; i++)
        base[i] = -1;
    int src[N], got[N], old[N];
    for (int i = 0; i < N; i++)
        src[i] = t_rank * 1000 + i;
    const MPI_Count n = N;

    /* Put into the right neighbour's first third; accumulate into its second third. */
    MPI_CHK(MPI_Win_fence(0, win));
    MPI_CHK(MPI_Put_c(src, n, MPI_INT, right, 0, n, MPI_INT, win));
    MPI_CHK(MPI_Accumulate_c(src, n, MPI_INT, right, N, n, MPI_INT, MPI_REPLACE, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++) {
        CHECK_EQ(base[i], left * 1000 + i, "MPI_Put_c");
        CHECK_EQ(base[N + i], left * 1000 + i, "MPI_Accumulate_c (replace)");
    }
    /* Every rank has read its window before the next epoch's operations reach it. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Accumulate_c(src, n, MPI_INT, right, N, n, MPI_INT, MPI_SUM, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++)
        CHECK_EQ(base[N + i], 2 * (left * 1000 + i), "MPI_Accumulate_c (sum)");
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* Get back from the right neighbour; fetch-and-add into its third part. */
    MPI_CHK(MPI_Get_c(got, n, MPI_INT, right, 0, n, MPI_INT, win));
    MPI_CHK(MPI_Get_accumulate_c(src, n, MPI_INT, old, n, MPI_INT, right, 2 * N, n, MPI_INT, MPI_REPLACE, win));
    MPI_CHK(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++) {
        CHECK_EQ(got[i], t_rank * 1000 + i, "MPI_Get_c");
        CHECK_EQ(old[i], -1, "MPI_Get_accumulate_c: the old value");
        CHECK_EQ(base[2 * N + i], left * 1000 + i, "MPI_Get_accumulate_c: the new value");
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* The request-based forms in a passive-target epoch. */
    MPI_Request rq[4];
    int got2[N], old2[N];
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_CHK(MPI_Rput_c(src, n, MPI_INT, right, 0, n, MPI_INT, win, &rq[0]));
    MPI_CHK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Win_flush(right, win));
    MPI_CHK(MPI_Rget_c(got2, n, MPI_INT, right, 0, n, MPI_INT, win, &rq[1]));
    MPI_CHK(MPI_Raccumulate_c(src, n, MPI_INT, right, N, n, MPI_INT, MPI_SUM, win, &rq[2]));
    MPI_CHK(MPI_Waitall(2, &rq[1], MPI_STATUSES_IGNORE));
    MPI_CHK(MPI_Win_flush(right, win));
    MPI_CHK(MPI_Rget_accumulate_c(src, n, MPI_INT, old2, n, MPI_INT, right, N, n, MPI_INT, MPI_NO_OP, win, &rq[3]));
    MPI_CHK(MPI_Wait(&rq[3], MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Win_unlock(right, win));
    for (int i = 0; i < N; i++) {
        CHECK_EQ(got2[i], t_rank * 1000 + i, "MPI_Rget_c");
        CHECK_EQ(old2[i], 3 * (t_rank * 1000 + i), "MPI_Raccumulate_c then MPI_Rget_accumulate_c (no-op)");
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_free(&win));

    /* MPI_Win_create_c with a displacement unit of 8 (each int addressed as 8 bytes apart). */
    {
        long long mem[N];
        for (int i = 0; i < N; i++)
            mem[i] = -1;
        MPI_CHK(MPI_Win_create_c(mem, (MPI_Aint)sizeof mem, (MPI_Aint)sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD,
                                 &win));
        long long v = 100 + t_rank;
        MPI_CHK(MPI_Win_fence(0, win));
        MPI_CHK(MPI_Put_c(&v, 1, MPI_LONG_LONG, right, 7, 1, MPI_LONG_LONG, win));
        MPI_CHK(MPI_Win_fence(0, win));
        CHECK(mem[7] == 100 + left, "MPI_Win_create_c: element 7 is %lld", mem[7]);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_free(&win));
    }

    /* MPI_Win_allocate_shared_c and MPI_Win_shared_query_c. */
    {
        MPI_Comm node;
        MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
        int nrank;
        MPI_CHK(MPI_Comm_rank(node, &nrank));
        double *mine = NULL;
        MPI_CHK(MPI_Win_allocate_shared_c((MPI_Aint)(4 * sizeof(double)), (MPI_Aint)sizeof(double), MPI_INFO_NULL, node,
                                          &mine, &win));
        MPI_Aint size = -1, unit = -1;
        double *theirs = NULL;
        MPI_CHK(MPI_Win_shared_query_c(win, 0, &size, &unit, &theirs));
        CHECK_EQ(size, 4 * sizeof(double), "MPI_Win_shared_query_c: size");
        CHECK_EQ(unit, sizeof(double), "MPI_Win_shared_query_c: displacement unit");
        CHECK(theirs != NULL, "MPI_Win_shared_query_c: no base");
        MPI_CHK(MPI_Win_fence(0, win));
        if (nrank == 0)
            theirs[3] = 42.5;
        MPI_CHK(MPI_Win_fence(0, win));
        CHECK(theirs[3] == 42.5, "a store through the shared window is %g", theirs[3]);
        MPI_CHK(MPI_Win_free(&win));
        MPI_CHK(MPI_Comm_free(&node));
    }
#ifdef BILLBOARD_MPI
    /* A displacement unit that does not fit an int is refused, naming it. */
    {
        int cls = -1, rc = MPI_Win_allocate_c(64, (MPI_Aint)1 << 40, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Error_class(rc, &cls);
        CHECK_EQ(cls, MPI_ERR_DISP, "MPI_Win_allocate_c with a displacement unit of 2^40");
    }
#endif
    return t_finish();
}
