/* Shared-memory windows (MPI_Win_allocate_shared, MPI_Win_shared_query): every rank sees
 * every other's part by load and store, at the address MPI_Win_shared_query gives, parts
 * contiguous in rank order; RMA on the window (a fetch-and-add under lock_all) acts on the
 * same memory; MPI_PROC_NULL queries the first part that has memory.
 */
#include "common.h"

#define N 16

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_shared", 1);
    int n = t_size;
    MPI_Comm node;
    MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int nn, nme;
    MPI_Comm_size(node, &nn);
    MPI_Comm_rank(node, &nme);
    CHECK_EQ(nn, n, "ranks on the node (the suite runs on one host)");
    /* rank 0 brings no memory: MPI_PROC_NULL must name rank 1's part */
    MPI_Aint mysize = nme == 0 && nn > 1 ? 0 : N * sizeof(long);
    long *mine = NULL;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate_shared(mysize, sizeof(long), MPI_INFO_NULL, node, &mine, &win));
    int flavor_ok = 0, *flavor = NULL;
    MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flavor_ok));
    CHECK(flavor_ok && *flavor == MPI_WIN_FLAVOR_SHARED, "MPI_WIN_CREATE_FLAVOR of a shared window");
    for (int i = 0; mysize && i < N; i++)
        mine[i] = nme * 100 + i;
    MPI_CHK(MPI_Win_fence(0, win));
    for (int r = 0; r < nn; r++) {
        MPI_Aint sz = -1;
        int unit = -1;
        long *p = NULL;
        MPI_CHK(MPI_Win_shared_query(win, r, &sz, &unit, &p));
        CHECK_EQ(unit, sizeof(long), "displacement unit of a part");
        if (r == 0 && nn > 1) {
            CHECK_EQ(sz, 0, "size of rank 0's empty part");
            continue;
        }
        CHECK_EQ(sz, N * sizeof(long), "size of a part");
        for (int i = 0; i < N; i++)
            CHECK(p[i] == r * 100 + i, "rank %d's part [%d] = %ld by load", r, i, p[i]);
    }
    MPI_Aint sz;
    int unit;
    long *first = NULL;
    MPI_CHK(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &unit, &first));
    long *last = NULL;
    MPI_CHK(MPI_Win_shared_query(win, nn - 1, &sz, &unit, &last));
    if (nn > 1) {
        long *one = NULL;
        MPI_CHK(MPI_Win_shared_query(win, 1, &sz, &unit, &one));
        CHECK(first == one, "MPI_PROC_NULL names the first part with memory");
    }
    MPI_CHK(MPI_Win_fence(0, win));
    /* Stores into the last rank's part by everyone, then a fetch-and-add there by RMA. */
    last[N - 1 - nme] = -nme;
    MPI_CHK(MPI_Win_fence(0, win));
    for (int r = 0; r < nn && r < N; r++)
        CHECK(last[N - 1 - r] == -r, "the last part's [%d] = %ld after the stores", N - 1 - r, last[N - 1 - r]);
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    MPI_CHK(MPI_Win_lock_all(0, win));
    long one = 1, got = -1;
    MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, nn - 1, 0, MPI_SUM, win));
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(node));
    MPI_CHK(MPI_Win_lock_all(0, win));
    MPI_CHK(MPI_Win_sync(win));
    CHECK_EQ(last[0], (nn - 1) * 100 + nn, "the last part's [0] after every rank's fetch-and-add");
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_Comm_free(&node));
    return t_finish();
}
