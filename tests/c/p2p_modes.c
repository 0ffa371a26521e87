/* Send modes: Ssend/Issend (synchronous: no completion before the receive is posted), Rsend/Irsend
 * (receive posted first), Bsend/Ibsend with Buffer_attach/Buffer_detach. Ring over any N >= 1. */
#include "common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "p2p_modes", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    enum { BIG = 300000 };
    int *sbig = malloc(BIG * sizeof(int)), *rbig = malloc(BIG * sizeof(int));
    CHECK(sbig && rbig, "malloc");
    for (int i = 0; i < BIG; i++)
        sbig[i] = t_rank * 1000003 + i;

    /* ---- Issend does not complete until the matching receive has been posted. */
    for (int k = 0; k < 2; k++) {
        int n = k == 0 ? 1 : BIG; /* eager-sized and rendezvous-sized */
        MPI_Request sr;
        MPI_CHK(MPI_Issend(sbig, n, MPI_INT, right, 10 + k, MPI_COMM_WORLD, &sr));
        int flag = 1;
        for (int i = 0; i < 20; i++) {
            MPI_CHK(MPI_Test(&sr, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag, "Issend of %d ints completed before the receiver posted its receive", n);
            usleep(1000);
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_Status st;
        memset(rbig, 0, (size_t)n * sizeof(int));
        MPI_Request rr;
        MPI_CHK(MPI_Irecv(rbig, n, MPI_INT, left, 10 + k, MPI_COMM_WORLD, &rr));
        t_wait_bounded(&rr, &st, 20.0, "receive matching Issend");
        t_wait_bounded(&sr, MPI_STATUS_IGNORE, 20.0, "Issend after its receive was posted");
        for (int i = 0; i < n; i++)
            if (rbig[i] != left * 1000003 + i)
                FAIL("Issend payload[%d]: expected %d, got %d", i, left * 1000003 + i, rbig[i]);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }

    /* ---- Blocking Ssend: even ranks Ssend first (N>=2), odd receive first. */
    if (t_size >= 2) {
        int v = 7000 + t_rank, got = -1;
        MPI_Status st;
        if (t_rank % 2 == 0) {
            MPI_CHK(MPI_Ssend(&v, 1, MPI_INT, right, 20, MPI_COMM_WORLD));
            MPI_CHK(MPI_Recv(&got, 1, MPI_INT, left, 20, MPI_COMM_WORLD, &st));
        } else {
            MPI_CHK(MPI_Recv(&got, 1, MPI_INT, left, 20, MPI_COMM_WORLD, &st));
            MPI_CHK(MPI_Ssend(&v, 1, MPI_INT, right, 20, MPI_COMM_WORLD));
        }
        CHECK_EQ(got, 7000 + left, "Ssend payload");
        CHECK_EQ(st.MPI_SOURCE, left, "Ssend status source");
    }

    /* ---- Rsend / Irsend: the receive is posted before a barrier, the ready send after it. */
    for (int k = 0; k < 2; k++) {
        int n = k == 0 ? 3 : BIG;
        MPI_Request rr;
        memset(rbig, 0, (size_t)n * sizeof(int));
        MPI_CHK(MPI_Irecv(rbig, n, MPI_INT, left, 30 + k, MPI_COMM_WORLD, &rr));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        if (k == 0 && t_size > 1) {
            MPI_CHK(MPI_Rsend(sbig, n, MPI_INT, right, 30 + k, MPI_COMM_WORLD));
        } else {
            MPI_Request sr;
            MPI_CHK(MPI_Irsend(sbig, n, MPI_INT, right, 30 + k, MPI_COMM_WORLD, &sr));
            t_wait_bounded(&sr, MPI_STATUS_IGNORE, 20.0, "Irsend");
        }
        MPI_Status st;
        t_wait_bounded(&rr, &st, 20.0, "receive matching Rsend");
        int c = -1;
        MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK_EQ(c, n, "Rsend count");
        for (int i = 0; i < n; i++)
            if (rbig[i] != left * 1000003 + i)
                FAIL("Rsend payload[%d] of %d: expected %d, got %d", i, n, left * 1000003 + i, rbig[i]);
    }

    /* ---- Bsend / Ibsend with an attached buffer; the send buffer may be reused at once. */
    {
        int sizes[] = {0, 1, 100, 5000, BIG};
        int ns = 5;
        int need = 0;
        for (int i = 0; i < ns; i++) {
            int p = 0;
            MPI_CHK(MPI_Pack_size(sizes[i], MPI_INT, MPI_COMM_WORLD, &p));
            CHECK(p >= sizes[i] * (int)sizeof(int), "Pack_size(%d ints) = %d", sizes[i], p);
            need += p + MPI_BSEND_OVERHEAD;
        }
        need *= 2; /* Bsend and Ibsend of each size */
        CHECK(MPI_BSEND_OVERHEAD > 0, "MPI_BSEND_OVERHEAD = %d", MPI_BSEND_OVERHEAD);
        char *buf = malloc(need);
        MPI_CHK(MPI_Buffer_attach(buf, need));
        int *tmp = malloc(BIG * sizeof(int));
        MPI_Request ib[5];
        for (int i = 0; i < ns; i++) {
            memcpy(tmp, sbig, (size_t)sizes[i] * sizeof(int));
            MPI_CHK(MPI_Bsend(tmp, sizes[i], MPI_INT, right, 40 + i, MPI_COMM_WORLD));
            memset(tmp, 0xff, (size_t)sizes[i] * sizeof(int)); /* reuse at once */
        }
        for (int i = 0; i < ns; i++)
            MPI_CHK(MPI_Ibsend(sbig, sizes[i], MPI_INT, right, 50 + i, MPI_COMM_WORLD, &ib[i]));
        MPI_CHK(MPI_Waitall(ns, ib, MPI_STATUSES_IGNORE)); /* local completion */
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));                /* receives posted only now */
        for (int pass = 0; pass < 2; pass++)
            for (int i = ns - 1; i >= 0; i--) {
                MPI_Status st;
                memset(rbig, 0, (size_t)sizes[i] * sizeof(int));
                MPI_CHK(MPI_Recv(rbig, BIG, MPI_INT, left, (pass ? 50 : 40) + i, MPI_COMM_WORLD, &st));
                int c = -1;
                MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
                CHECK_EQ(c, sizes[i], "Bsend count");
                for (int j = 0; j < sizes[i]; j++)
                    if (rbig[j] != left * 1000003 + j)
                        FAIL("%s payload[%d] of %d: expected %d, got %d", pass ? "Ibsend" : "Bsend", j, sizes[i],
                             left * 1000003 + j, rbig[j]);
            }
        void *dbuf = NULL;
        int dsize = -1;
        MPI_CHK(MPI_Buffer_detach(&dbuf, &dsize));
        CHECK(dbuf == buf, "Buffer_detach returned %p, attached %p", dbuf, (void *)buf);
        CHECK_EQ(dsize, need, "Buffer_detach size");
        /* A second attach/detach cycle works; detach waits for pending buffered sends. */
        MPI_CHK(MPI_Buffer_attach(buf, need));
        int v = 99 + t_rank, got = -1;
        MPI_CHK(MPI_Bsend(&v, 1, MPI_INT, right, 60, MPI_COMM_WORLD));
        MPI_Request rr;
        MPI_CHK(MPI_Irecv(&got, 1, MPI_INT, left, 60, MPI_COMM_WORLD, &rr));
        MPI_CHK(MPI_Buffer_detach(&dbuf, &dsize));
        MPI_CHK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
        CHECK_EQ(got, 99 + left, "Bsend after re-attach");
        free(tmp);
        free(buf);
    }

    /* ---- Modes to MPI_PROC_NULL complete at once. */
    {
        int v = 1;
        MPI_Request r;
        MPI_CHK(MPI_Ssend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
        MPI_CHK(MPI_Rsend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
        MPI_CHK(MPI_Issend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
        t_wait_bounded(&r, MPI_STATUS_IGNORE, 5.0, "Issend to PROC_NULL");
    }

    free(sbig);
    free(rbig);
    return t_finish();
}
