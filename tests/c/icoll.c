/* Nonblocking collectives: every I-form at once, beside a blocking collective, with results
 * checked against what each must compute; and an Iallreduce that does not block its caller.
 *
 *  - Overlap: rank 1 starts an Iallreduce, then sends (synchronously) the message rank 0 waits
 *    for before starting its own; a blocking Iallreduce would deadlock (the watchdog says so).
 *  - Progress while blocked elsewhere: the last rank waits for its Iallreduce and only then
 *    sends rank 0 the message rank 0 is blocked on; rank 0 (the reduction's root) must move
 *    its share of the Iallreduce on inside that MPI_Recv, or both wait forever.
 *  - All sixteen I-collectives in flight together, a blocking MPI_Allreduce on the same
 *    communicator between their starts and one MPI_Waitall: each result is checked element by
 *    element, so one collective taking another's messages shows as wrong data.
 *  - MPI_IN_PLACE in Iallreduce; a non-contiguous datatype (a vector) in Ibcast.
 */
#include "common.h"

#define K 3 /* elements per rank and block */
#define NOPS 16

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "icoll", 1);
    const int n = t_size, me = t_rank;

    /* Does not block. */
    {
        int token = 0, in = me + 1, sum = 0;
        MPI_Request r;
        if (me == 0 && n > 1) {
            MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_CHK(MPI_Iallreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
        } else {
            MPI_CHK(MPI_Iallreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
            if (me == 1)
                MPI_CHK(MPI_Ssend(&token, 1, MPI_INT, 0, 4, MPI_COMM_WORLD));
        }
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK_EQ(sum, n * (n + 1) / 2, "Iallreduce sum");
    }

    /* Moves on inside another blocking call. */
    if (n > 1) {
        int token = 7, in = me + 1, sum = 0;
        MPI_Request r;
        MPI_CHK(MPI_Iallreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
        if (me == 0)
            MPI_CHK(MPI_Recv(&token, 1, MPI_INT, n - 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (me == n - 1)
            MPI_CHK(MPI_Send(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
        CHECK_EQ(sum, n * (n + 1) / 2, "Iallreduce sum, completed during a receive");
        CHECK_EQ(token, 7, "token");
    }

    /* Everything in flight at once. */
    int *mine = malloc(sizeof(int) * K * n), *all = malloc(sizeof(int) * K * n * n);
    int *out[NOPS];
    for (int i = 0; i < NOPS; i++) {
        out[i] = malloc(sizeof(int) * K * n * n);
        for (int j = 0; j < K * n * n; j++)
            out[i][j] = -1;
    }
    /* all[r][j] is what rank r contributes at position j; mine is this rank's row. */
    for (int r = 0; r < n; r++)
        for (int j = 0; j < K * n; j++)
            all[r * K * n + j] = 1000 * r + j;
    for (int j = 0; j < K * n; j++)
        mine[j] = all[me * K * n + j];
    int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n);
    for (int r = 0; r < n; r++) {
        counts[r] = K;
        displs[r] = K * r;
    }
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * n);
    int *bytes_displs = malloc(sizeof(int) * n);
    for (int r = 0; r < n; r++) {
        types[r] = MPI_INT;
        bytes_displs[r] = (int)(K * r * sizeof(int));
    }
    const int root = n - 1;
    int strided[2 * K];
    for (int j = 0; j < 2 * K; j++)
        strided[j] = me == root ? 500 + j : -1;
    MPI_Datatype vec;
    MPI_CHK(MPI_Type_vector(K, 1, 2, MPI_INT, &vec));
    MPI_CHK(MPI_Type_commit(&vec));

    MPI_Request reqs[NOPS];
    int o = 0;
    MPI_CHK(MPI_Ibcast(strided, 1, vec, root, MPI_COMM_WORLD, &reqs[o++]));                                      /* 0 */
    MPI_CHK(MPI_Ireduce(mine, out[1], K, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &reqs[o++]));                  /* 1 */
    for (int j = 0; j < K; j++)
        out[2][j] = mine[j];
    MPI_CHK(MPI_Iallreduce(MPI_IN_PLACE, out[2], K, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &reqs[o++]));              /* 2 */
    MPI_CHK(MPI_Ireduce_scatter_block(mine, out[3], K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[o++]));           /* 3 */
    MPI_CHK(MPI_Ireduce_scatter(mine, out[4], counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[o++]));            /* 4 */
    MPI_CHK(MPI_Iscan(mine, out[5], K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[o++]));                           /* 5 */
    MPI_CHK(MPI_Iexscan(mine, out[6], K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[o++]));                         /* 6 */
    int blocking_sum = 0, one = 1;
    MPI_CHK(MPI_Allreduce(&one, &blocking_sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_CHK(MPI_Igather(mine, K, MPI_INT, out[7], K, MPI_INT, root, MPI_COMM_WORLD, &reqs[o++]));               /* 7 */
    MPI_CHK(MPI_Igatherv(mine, K, MPI_INT, out[8], counts, displs, MPI_INT, root, MPI_COMM_WORLD, &reqs[o++])); /* 8 */
    MPI_CHK(MPI_Iscatter(all + root * K * n, K, MPI_INT, out[9], K, MPI_INT, root, MPI_COMM_WORLD, &reqs[o++]));
    MPI_CHK(MPI_Iscatterv(all + root * K * n, counts, displs, MPI_INT, out[10], K, MPI_INT, root, MPI_COMM_WORLD,
                          &reqs[o++]));
    MPI_CHK(MPI_Iallgather(mine, K, MPI_INT, out[11], K, MPI_INT, MPI_COMM_WORLD, &reqs[o++]));                  /* 11 */
    MPI_CHK(MPI_Iallgatherv(mine, K, MPI_INT, out[12], counts, displs, MPI_INT, MPI_COMM_WORLD, &reqs[o++]));     /* 12 */
    MPI_CHK(MPI_Ialltoall(mine, K, MPI_INT, out[13], K, MPI_INT, MPI_COMM_WORLD, &reqs[o++]));                    /* 13 */
    MPI_CHK(MPI_Ialltoallv(mine, counts, displs, MPI_INT, out[14], counts, displs, MPI_INT, MPI_COMM_WORLD,
                           &reqs[o++]));                                                                          /* 14 */
    MPI_CHK(MPI_Ialltoallw(mine, counts, bytes_displs, types, out[15], counts, bytes_displs, types, MPI_COMM_WORLD,
                           &reqs[o++]));                                                                          /* 15 */
    CHECK_EQ(o, NOPS, "operations started");
    MPI_CHK(MPI_Waitall(NOPS, reqs, MPI_STATUSES_IGNORE));
    CHECK_EQ(blocking_sum, n, "blocking Allreduce among the nonblocking ones");

    for (int j = 0; j < 2 * K; j++) {
        int want = j % 2 == 0 ? 500 + j : (me == root ? 500 + j : -1);
        CHECK(strided[j] == want, "Ibcast (vector) [%d] = %d, want %d", j, strided[j], want);
    }
    for (int j = 0; j < K; j++) {
        int sum = 0, max = 0, scan = 0, exscan = 0, block = 0;
        for (int r = 0; r < n; r++) {
            int v = all[r * K * n + j];
            sum += v;
            max = v > max ? v : max;
            if (r <= me)
                scan += v;
            if (r < me)
                exscan += v;
            block += all[r * K * n + me * K + j];
        }
        if (me == root)
            CHECK(out[1][j] == sum, "Ireduce [%d] = %d, want %d", j, out[1][j], sum);
        CHECK(out[2][j] == max, "Iallreduce in place [%d] = %d, want %d", j, out[2][j], max);
        CHECK(out[3][j] == block, "Ireduce_scatter_block [%d] = %d, want %d", j, out[3][j], block);
        CHECK(out[4][j] == block, "Ireduce_scatter [%d] = %d, want %d", j, out[4][j], block);
        CHECK(out[5][j] == scan, "Iscan [%d] = %d, want %d", j, out[5][j], scan);
        if (me > 0)
            CHECK(out[6][j] == exscan, "Iexscan [%d] = %d, want %d", j, out[6][j], exscan);
        int scattered = all[root * K * n + me * K + j];
        CHECK(out[9][j] == scattered, "Iscatter [%d] = %d, want %d", j, out[9][j], scattered);
        CHECK(out[10][j] == scattered, "Iscatterv [%d] = %d, want %d", j, out[10][j], scattered);
    }
    for (int r = 0; r < n; r++) {
        for (int j = 0; j < K; j++) {
            int gathered = all[r * K * n + j], sent_to_me = all[r * K * n + me * K + j];
            if (me == root) {
                CHECK(out[7][r * K + j] == gathered, "Igather from %d [%d]", r, j);
                CHECK(out[8][r * K + j] == gathered, "Igatherv from %d [%d]", r, j);
            }
            CHECK(out[11][r * K + j] == gathered, "Iallgather from %d [%d]", r, j);
            CHECK(out[12][r * K + j] == gathered, "Iallgatherv from %d [%d]", r, j);
            CHECK(out[13][r * K + j] == sent_to_me, "Ialltoall from %d [%d]", r, j);
            CHECK(out[14][r * K + j] == sent_to_me, "Ialltoallv from %d [%d]", r, j);
            CHECK(out[15][r * K + j] == sent_to_me, "Ialltoallw from %d [%d]", r, j);
        }
    }
    MPI_CHK(MPI_Type_free(&vec));
    for (int i = 0; i < NOPS; i++)
        free(out[i]);
    free(mine);
    free(all);
    free(counts);
    free(displs);
    free(types);
    free(bytes_displs);
    return t_finish();
}
