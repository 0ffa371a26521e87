/* MPI 4.0 persistent collectives: every MPI_<coll>_init (and a _c twin) made once and started
 * ROUNDS times with MPI_Start or MPI_Startall, with new data before each start, the results
 * checked after each completion (MPI_Wait, MPI_Test loops, MPI_Waitall); a derived datatype;
 * MPI_IN_PLACE; the request freed at the end. Any N >= 1. */
#include "common.h"

enum { ROUNDS = 100, MAXN = 64 };

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "persistent_coll", 1);
    const int n = t_size, me = t_rank;
    CHECK(n <= MAXN, "at most %d ranks", MAXN);
    int one = 0, sum = 0, scan = 0, exscan = -1, rsb = 0, root_val = 0;
    int counts[MAXN], displs[MAXN], scounts[MAXN], sdispls[MAXN], rcounts[MAXN], rdispls[MAXN];
    MPI_Datatype types[MAXN];
    const int root = n - 1;
    for (int i = 0; i < n; i++) {
        counts[i] = 1, displs[i] = i;
        scounts[i] = rcounts[i] = 2, sdispls[i] = rdispls[i] = 2 * i;
        types[i] = MPI_INT;
    }
    int sbuf[2 * MAXN], gath[MAXN], scat[MAXN], got = -1, allg[MAXN], allgv[MAXN];
    int a2a[MAXN], a2aout[MAXN], a2av[2 * MAXN], a2avout[2 * MAXN], a2aw[2 * MAXN], a2awout[2 * MAXN];
    int gv[MAXN], sv[MAXN], gotv = -1, redsc[MAXN], inplace = 0;

    /* A derived type for the broadcast: every other int of 2 * MAXN. */
    MPI_Datatype strided;
    MPI_CHK(MPI_Type_vector(MAXN, 1, 2, MPI_INT, &strided));
    MPI_CHK(MPI_Type_commit(&strided));

    enum { NREQ = 19 };
    MPI_Request r[NREQ];
    MPI_CHK(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]));
    MPI_CHK(MPI_Bcast_init(sbuf, 1, strided, root, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]));
    MPI_CHK(MPI_Reduce_init(&one, &root_val, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, MPI_INFO_NULL, &r[2]));
    MPI_CHK(MPI_Allreduce_init(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[3]));
    MPI_CHK(MPI_Scan_init(&one, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[4]));
    MPI_CHK(MPI_Exscan_init(&one, &exscan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[5]));
    MPI_CHK(MPI_Reduce_scatter_block_init(redsc, &rsb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[6]));
    int rs_out = 0;
    MPI_CHK(MPI_Reduce_scatter_init(redsc, &rs_out, counts, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &r[7]));
    MPI_Count big = 1;
    int csum = 0;
    MPI_CHK(MPI_Allreduce_init_c(&one, &csum, big, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[8]));
    MPI_CHK(MPI_Allgatherv_init(&one, 1, MPI_INT, allgv, counts, displs, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                                &r[9]));
    MPI_CHK(MPI_Alltoall_init(a2a, 1, MPI_INT, a2aout, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &r[10]));
    MPI_CHK(MPI_Alltoallv_init(a2av, scounts, sdispls, MPI_INT, a2avout, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &r[11]));
    int wsd[MAXN], wrd[MAXN];
    for (int i = 0; i < n; i++)
        wsd[i] = wrd[i] = 2 * i * (int)sizeof(int);
    MPI_CHK(MPI_Alltoallw_init(a2aw, scounts, wsd, types, a2awout, rcounts, wrd, types, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &r[12]));
    MPI_CHK(MPI_Gatherv_init(&one, 1, MPI_INT, gv, counts, displs, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                             &r[13]));
    MPI_CHK(MPI_Scatterv_init(sv, counts, displs, MPI_INT, &gotv, 1, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &r[14]));
    MPI_CHK(MPI_Allreduce_init(MPI_IN_PLACE, &inplace, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &r[15]));
    /* Last: MPICH 4.0.2 restarts these three wrong (MPI_Allgather_init on 2 and 4 ranks and
     * MPI_Gather_init's root get the first start's data again; MPI_Scatter_init fails with
     * 'Invalid communicator' at its second wait, then hangs), so against MPICH's header they
     * are made but never started. */
    MPI_CHK(MPI_Allgather_init(&one, 1, MPI_INT, allg, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &r[16]));
    MPI_CHK(MPI_Gather_init(&one, 1, MPI_INT, gath, 1, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &r[17]));
    MPI_CHK(MPI_Scatter_init(scat, 1, MPI_INT, &got, 1, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &r[18]));
#ifdef BILLBOARD_MPI
    const int nstart = NREQ;
#else
    const int nstart = NREQ - 3;
#endif
    int flag = 0;

    /* Arrays the program lets go of after the _init call (mpi4py frees its temporaries then):
     * the request must have kept what it needs. */
    int allgv2[MAXN];
    MPI_Request freed_arrays;
    {
        int *c2 = malloc(n * sizeof(int)), *d2 = malloc(n * sizeof(int));
        for (int i = 0; i < n; i++)
            c2[i] = 1, d2[i] = n - 1 - i;
        MPI_CHK(MPI_Allgatherv_init(&one, 1, MPI_INT, allgv2, c2, d2, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                                    &freed_arrays));
        for (int i = 0; i < n; i++)
            c2[i] = 1 << 30, d2[i] = -(1 << 30);
        free(c2);
        free(d2);
    }

    for (int round = 0; round < ROUNDS; round++) {
        one = round + me;
        for (int i = 0; i < 2 * MAXN; i++)
            sbuf[i] = me == root ? round * 1000 + i : -1;
        for (int i = 0; i < n; i++) {
            scat[i] = sv[i] = round * 10 + i;
            a2a[i] = me * 100 + i + round;
            a2av[2 * i] = a2aw[2 * i] = me * 100 + i + round;
            a2av[2 * i + 1] = a2aw[2 * i + 1] = -(me * 100 + i + round);
            redsc[i] = me + i + round;
        }
        inplace = me + round;
        if (round % 2 == 0) {
            MPI_CHK(MPI_Startall(nstart, r));
        } else {
            for (int k = 0; k < nstart; k++)
                MPI_CHK(MPI_Start(&r[k]));
        }
        if (round % 3 == 0) {
            /* Polled one by one with MPI_Test. (MPI_Testall is left out: MPICH 4.0.2's returns
             * MPI_ERR_IN_STATUS for persistent collectives not yet complete, every status
             * MPI_SUCCESS or MPI_ERR_PENDING.) */
            for (int k = 0; k < nstart; k++) {
                flag = 0;
                double t0 = MPI_Wtime();
                while (!flag) {
                    MPI_CHK(MPI_Test(&r[k], &flag, MPI_STATUS_IGNORE));
                    CHECK(MPI_Wtime() - t0 < 30, "round %d: persistent collective %d did not complete", round, k);
                }
            }
        } else if (round % 3 == 1) {
            MPI_CHK(MPI_Waitall(nstart, r, MPI_STATUSES_IGNORE));
        } else {
            for (int k = nstart - 1; k >= 0; k--)
                MPI_CHK(MPI_Wait(&r[k], MPI_STATUS_IGNORE));
        }
        for (int k = 0; k < NREQ; k++)
            CHECK(r[k] != MPI_REQUEST_NULL, "round %d: persistent request %d became null", round, k);

        /* The total of one = round + rank over the ranks. */
        const int total = n * round + n * (n - 1) / 2;
        for (int i = 0; i < 2 * MAXN; i++)
            CHECK_EQ(sbuf[i], i % 2 ? (me == root ? round * 1000 + i : -1) : round * 1000 + i, "MPI_Bcast_init");
        if (me == root)
            CHECK_EQ(root_val, total, "MPI_Reduce_init");
        CHECK_EQ(sum, total, "MPI_Allreduce_init");
        CHECK_EQ(csum, total, "MPI_Allreduce_init_c");
        CHECK_EQ(scan, (me + 1) * round + me * (me + 1) / 2, "MPI_Scan_init");
        if (me > 0)
            CHECK_EQ(exscan, me * round + me * (me - 1) / 2, "MPI_Exscan_init");
        if (nstart == NREQ)
            CHECK_EQ(got, round * 10 + me, "MPI_Scatter_init");
        CHECK_EQ(gotv, round * 10 + me, "MPI_Scatterv_init");
        CHECK_EQ(inplace, n - 1 + round, "MPI_Allreduce_init in place");
        CHECK_EQ(rsb, n * (me + round) + n * (n - 1) / 2, "MPI_Reduce_scatter_block_init");
        CHECK_EQ(rs_out, n - 1 + me + round, "MPI_Reduce_scatter_init");
        for (int i = 0; i < n; i++) {
            if (me == root) {
                if (nstart == NREQ)
                    CHECK_EQ(gath[i], round + i, "MPI_Gather_init");
                CHECK_EQ(gv[i], round + i, "MPI_Gatherv_init");
            }
            if (nstart == NREQ)
                CHECK_EQ(allg[i], round + i, "MPI_Allgather_init");
            CHECK_EQ(allgv[i], round + i, "MPI_Allgatherv_init");
            CHECK_EQ(a2aout[i], i * 100 + me + round, "MPI_Alltoall_init");
            CHECK_EQ(a2avout[2 * i], i * 100 + me + round, "MPI_Alltoallv_init");
            CHECK_EQ(a2avout[2 * i + 1], -(i * 100 + me + round), "MPI_Alltoallv_init");
            CHECK_EQ(a2awout[2 * i + 1], -(i * 100 + me + round), "MPI_Alltoallw_init");
        }
        if (round == 0)
            MPI_CHK(MPI_Type_free(&strided));
        if (round % 10 == 0) {
            MPI_CHK(MPI_Start(&freed_arrays));
            MPI_CHK(MPI_Wait(&freed_arrays, MPI_STATUS_IGNORE));
            for (int i = 0; i < n; i++)
                CHECK_EQ(allgv2[n - 1 - i], round + i, "MPI_Allgatherv_init with its arrays freed after the call");
        }
    }
    /* A started request cannot be started again before it completes. */
    MPI_CHK(MPI_Start(&r[0]));
    CHECK(MPI_Start(&r[0]) != MPI_SUCCESS, "a second MPI_Start of an active persistent collective succeeded");
    MPI_CHK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Request_free(&freed_arrays));
    for (int k = 0; k < NREQ; k++) {
        MPI_CHK(MPI_Request_free(&r[k]));
        CHECK(r[k] == MPI_REQUEST_NULL, "MPI_Request_free did not null persistent request %d", k);
    }
    return t_finish();
}
