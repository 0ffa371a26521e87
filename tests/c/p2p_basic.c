/* Point-to-point basics: Send/Recv/Isend/Irecv/Wait/Test over sizes 0..4 MiB, ANY_SOURCE/ANY_TAG,
 * status fields, Get_count, MPI_PROC_NULL, ordering (non-overtaking), STATUS_IGNORE. Any N >= 1
 * (ring: each rank sends to rank+1 and receives from rank-1; with 1 rank, to itself). */
#include "common.h"

static void fill(unsigned char *b, long n, int seed)
{
    for (long i = 0; i < n; i++)
        b[i] = t_byte(i, seed);
}
static void verify(const unsigned char *b, long n, int seed, const char *what)
{
    for (long i = 0; i < n; i++)
        if (b[i] != t_byte(i, seed))
            FAIL("%s: byte %ld of %ld: expected %d, got %d", what, i, n, t_byte(i, seed), b[i]);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "p2p_basic", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    const long max = 4L << 20;
    unsigned char *sb = malloc(max + 16), *rb = malloc(max + 16);
    CHECK(sb && rb, "malloc");

    long sizes[] = {0, 1, 7, 8, 64, 255, 1024, 4095, 4096, 8193, 65536, 65537, 1 << 20, (1 << 20) + 3, max};
    int nsizes = (int)(sizeof sizes / sizeof *sizes);
    for (int k = 0; k < nsizes; k++) {
        long n = sizes[k];
        char what[128];
        /* Nonblocking ring, recv posted first, then send; Wait for both. */
        fill(sb, n, t_rank + k);
        memset(rb, 0xee, n + 16);
        MPI_Request rr, sr;
        MPI_Status st;
        MPI_CHK(MPI_Irecv(rb, (int)n, MPI_BYTE, left, k, MPI_COMM_WORLD, &rr));
        MPI_CHK(MPI_Isend(sb, (int)n, MPI_BYTE, right, k, MPI_COMM_WORLD, &sr));
        t_wait_bounded(&rr, &st, 20.0, "Irecv");
        CHECK(rr == MPI_REQUEST_NULL, "completed Irecv request not set to MPI_REQUEST_NULL");
        MPI_CHK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        CHECK(sr == MPI_REQUEST_NULL, "completed Isend request not set to MPI_REQUEST_NULL");
        snprintf(what, sizeof what, "Isend/Irecv %ld bytes from %d", n, left);
        verify(rb, n, left + k, what);
        CHECK(rb[n] == 0xee, "%s: wrote past the end of the receive buffer", what);
        CHECK_EQ(st.MPI_SOURCE, left, "status.MPI_SOURCE");
        CHECK_EQ(st.MPI_TAG, k, "status.MPI_TAG");
        int count = -1;
        MPI_CHK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK_EQ(count, n, "Get_count(MPI_BYTE)");

        /* Blocking: even ranks send first, odd receive first (works for the ring since both are
         * nonblocking-safe only for small messages; use Sendrecv-free ordering by parity). */
        fill(sb, n, 100 + t_rank + k);
        memset(rb, 0xee, n + 16);
        if (t_size == 1) {
            MPI_CHK(MPI_Isend(sb, (int)n, MPI_BYTE, 0, 1000 + k, MPI_COMM_WORLD, &sr));
            MPI_CHK(MPI_Recv(rb, (int)(n + 16), MPI_BYTE, 0, 1000 + k, MPI_COMM_WORLD, &st));
            MPI_CHK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        } else if (t_rank % 2 == 0) {
            MPI_CHK(MPI_Send(sb, (int)n, MPI_BYTE, right, 1000 + k, MPI_COMM_WORLD));
            MPI_CHK(MPI_Recv(rb, (int)(n + 16), MPI_BYTE, left, 1000 + k, MPI_COMM_WORLD, &st));
        } else {
            MPI_CHK(MPI_Recv(rb, (int)(n + 16), MPI_BYTE, left, 1000 + k, MPI_COMM_WORLD, &st));
            MPI_CHK(MPI_Send(sb, (int)n, MPI_BYTE, right, 1000 + k, MPI_COMM_WORLD));
        }
        snprintf(what, sizeof what, "Send/Recv %ld bytes from %d", n, left);
        verify(rb, n, 100 + left + k, what);
        CHECK(rb[n] == 0xee, "%s: wrote past the message length", what);
        MPI_CHK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK_EQ(count, n, "Get_count after Recv into a larger buffer");
        CHECK_EQ(st.MPI_SOURCE, left, "status.MPI_SOURCE (blocking)");
        CHECK_EQ(st.MPI_TAG, 1000 + k, "status.MPI_TAG (blocking)");
    }

    /* Get_count with a typed receive, and MPI_UNDEFINED when bytes are not a multiple. */
    {
        int ibuf[10] = {0};
        int vals[10];
        for (int i = 0; i < 10; i++)
            vals[i] = t_rank * 100 + i;
        MPI_Request sr;
        MPI_Status st;
        MPI_CHK(MPI_Isend(vals, 7, MPI_INT, right, 77, MPI_COMM_WORLD, &sr));
        MPI_CHK(MPI_Recv(ibuf, 10, MPI_INT, left, 77, MPI_COMM_WORLD, &st));
        MPI_CHK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        int c = -1;
        MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK_EQ(c, 7, "Get_count(MPI_INT) of 7 ints");
        MPI_CHK(MPI_Get_count(&st, MPI_BYTE, &c));
        CHECK_EQ(c, 7 * (int)sizeof(int), "Get_count(MPI_BYTE) of 7 ints");
        MPI_CHK(MPI_Get_count(&st, MPI_DOUBLE, &c));
        CHECK_EQ(c, MPI_UNDEFINED, "Get_count(MPI_DOUBLE) of 28 bytes");
        for (int i = 0; i < 7; i++)
            CHECK_EQ(ibuf[i], left * 100 + i, "typed int payload");
        CHECK_EQ(ibuf[7], 0, "int past the message");
    }

    /* ANY_SOURCE / ANY_TAG: every rank sends one tagged message to rank 0. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    {
        int payload[2] = {t_rank, 500 + t_rank};
        MPI_Request sr;
        MPI_CHK(MPI_Isend(payload, 2, MPI_INT, 0, 500 + t_rank, MPI_COMM_WORLD, &sr));
        if (t_rank == 0) {
            char *seen = calloc(t_size, 1);
            for (int i = 0; i < t_size; i++) {
                int got[2] = {-1, -1};
                MPI_Status st;
                MPI_CHK(MPI_Recv(got, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < t_size, "ANY_SOURCE: status source %d", st.MPI_SOURCE);
                CHECK_EQ(got[0], st.MPI_SOURCE, "payload names its sender vs status.MPI_SOURCE");
                CHECK_EQ(st.MPI_TAG, 500 + st.MPI_SOURCE, "ANY_TAG: status.MPI_TAG");
                CHECK_EQ(got[1], st.MPI_TAG, "payload tag");
                CHECK(!seen[st.MPI_SOURCE], "message from %d received twice", st.MPI_SOURCE);
                seen[st.MPI_SOURCE] = 1;
            }
            free(seen);
        }
        MPI_CHK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        /* Nobody may send rank 0 the next section's messages before it has received these:
         * its ANY_SOURCE/ANY_TAG receives would rightly take them. */
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }

    /* Non-overtaking: 200 messages same (source, tag), received with ANY_TAG in order; also
     * a receive on a specific tag skips earlier messages of another tag. */
    {
        enum { M = 200 };
        MPI_Request reqs[M];
        int vals[M];
        for (int i = 0; i < M; i++) {
            vals[i] = i;
            MPI_CHK(MPI_Isend(&vals[i], 1, MPI_INT, right, i == M - 1 ? 9 : 8, MPI_COMM_WORLD, &reqs[i]));
        }
        int v = -1;
        MPI_Status st;
        MPI_CHK(MPI_Recv(&v, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &st));
        CHECK_EQ(v, M - 1, "recv on tag 9 skipping tag-8 messages");
        for (int i = 0; i < M - 1; i++) {
            MPI_CHK(MPI_Recv(&v, 1, MPI_INT, left, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK_EQ(v, i, "message order from one sender");
            CHECK_EQ(st.MPI_TAG, 8, "tag");
        }
        MPI_CHK(MPI_Waitall(M, reqs, MPI_STATUSES_IGNORE));
    }

    /* MPI_Test on a receive that cannot be matched yet returns flag=0; later it completes. */
    {
        int v = -1, flag = 1;
        MPI_Request rr;
        MPI_Status st;
        MPI_CHK(MPI_Irecv(&v, 1, MPI_INT, left, 4242, MPI_COMM_WORLD, &rr));
        MPI_CHK(MPI_Test(&rr, &flag, &st));
        CHECK_EQ(flag, 0, "MPI_Test on an unmatched receive");
        CHECK(rr != MPI_REQUEST_NULL, "unfinished request was nulled");
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        int x = 4242 + t_rank;
        MPI_CHK(MPI_Send(&x, 1, MPI_INT, right, 4242, MPI_COMM_WORLD));
        t_wait_bounded(&rr, &st, 20.0, "Irecv tag 4242");
        CHECK_EQ(v, 4242 + left, "value after MPI_Test completion");
        /* Wait/Test on MPI_REQUEST_NULL return at once with an empty status. */
        MPI_CHK(MPI_Wait(&rr, &st));
        CHECK_EQ(st.MPI_SOURCE, MPI_ANY_SOURCE, "empty status source after Wait(REQUEST_NULL)");
        CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG, "empty status tag after Wait(REQUEST_NULL)");
        flag = 0;
        MPI_CHK(MPI_Test(&rr, &flag, MPI_STATUS_IGNORE));
        CHECK_EQ(flag, 1, "MPI_Test on MPI_REQUEST_NULL");
    }

    /* MPI_PROC_NULL: sends and receives complete at once; recv status is source PROC_NULL,
     * tag ANY_TAG, count 0. */
    {
        int v = 12345;
        MPI_Status st;
        MPI_CHK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD));
        MPI_CHK(MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
        CHECK_EQ(v, 12345, "Recv from PROC_NULL modified the buffer");
        CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL, "PROC_NULL status source");
        CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG, "PROC_NULL status tag");
        int c = -1;
        MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK_EQ(c, 0, "PROC_NULL Get_count");
        MPI_Request r[2];
        MPI_CHK(MPI_Isend(&v, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r[0]));
        MPI_CHK(MPI_Irecv(&v, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r[1]));
        MPI_Status sts[2];
        MPI_CHK(MPI_Waitall(2, r, sts));
        /* MPI says source = MPI_PROC_NULL and tag = MPI_ANY_TAG here too, but MPICH 4.0.2 returns
         * source 0, tag 0 for a nonblocking receive from MPI_PROC_NULL: only the count is checked. */
        MPI_CHK(MPI_Get_count(&sts[1], MPI_INT, &c));
        CHECK_EQ(c, 0, "Irecv PROC_NULL count");
    }

    /* Status layout: MPI_Status is 20 bytes in MPICH's ABI, MPI_ERROR untouched by Recv. */
    {
        MPI_Status st;
        st.MPI_ERROR = 999;
        int v = 1, w = 0;
        MPI_Request sr;
        MPI_CHK(MPI_Isend(&v, 1, MPI_INT, right, 31, MPI_COMM_WORLD, &sr));
        MPI_CHK(MPI_Recv(&w, 1, MPI_INT, left, 31, MPI_COMM_WORLD, &st));
        MPI_CHK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        CHECK_EQ(sizeof(MPI_Status), 20, "sizeof(MPI_Status)");
    }

    free(sb);
    free(rb);
    return t_finish();
}
