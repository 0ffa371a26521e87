/* Sendrecv and Sendrecv_replace: ring shifts of several sizes and types, different send/recv
 * types, ANY_SOURCE/ANY_TAG, MPI_PROC_NULL on either side. Any N >= 1. */
#include "common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "sendrecv", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    const int max = 1 << 20; /* doubles: 8 MiB */
    double *sb = malloc(max * sizeof(double)), *rb = malloc((max + 1) * sizeof(double));
    CHECK(sb && rb, "malloc");
    int sizes[] = {0, 1, 17, 1000, 70000, max};
    for (int k = 0; k < 6; k++) {
        int n = sizes[k];
        for (int i = 0; i < n; i++)
            sb[i] = t_rank * 1e6 + i + 0.5;
        rb[n] = -42.0;
        MPI_Status st;
        MPI_CHK(MPI_Sendrecv(sb, n, MPI_DOUBLE, right, k, rb, n + 1, MPI_DOUBLE, left, k, MPI_COMM_WORLD, &st));
        CHECK_EQ(st.MPI_SOURCE, left, "Sendrecv status source");
        CHECK_EQ(st.MPI_TAG, k, "Sendrecv status tag");
        int c = -1;
        MPI_CHK(MPI_Get_count(&st, MPI_DOUBLE, &c));
        CHECK_EQ(c, n, "Sendrecv count");
        for (int i = 0; i < n; i++)
            if (rb[i] != left * 1e6 + i + 0.5)
                FAIL("Sendrecv %d doubles: [%d] expected %.1f, got %.1f", n, i, left * 1e6 + i + 0.5, rb[i]);
        CHECK(rb[n] == -42.0, "Sendrecv wrote past the message");

        /* Replace: shift the other way. */
        for (int i = 0; i < n; i++)
            rb[i] = t_rank * 1e6 - i;
        MPI_CHK(MPI_Sendrecv_replace(rb, n, MPI_DOUBLE, left, 100 + k, right, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK_EQ(st.MPI_SOURCE, right, "Sendrecv_replace status source");
        CHECK_EQ(st.MPI_TAG, 100 + k, "Sendrecv_replace status tag");
        MPI_CHK(MPI_Get_count(&st, MPI_DOUBLE, &c));
        CHECK_EQ(c, n, "Sendrecv_replace count");
        for (int i = 0; i < n; i++)
            if (rb[i] != right * 1e6 - i)
                FAIL("Sendrecv_replace %d doubles: [%d] expected %.1f, got %.1f", n, i, right * 1e6 - i, rb[i]);
    }

    /* Different send and receive types with matching signatures: 4 ints as a contiguous type. */
    {
        MPI_Datatype four;
        MPI_CHK(MPI_Type_contiguous(4, MPI_INT, &four));
        MPI_CHK(MPI_Type_commit(&four));
        int s[8], r[8] = {0};
        for (int i = 0; i < 8; i++)
            s[i] = t_rank * 10 + i;
        MPI_Status st;
        MPI_CHK(MPI_Sendrecv(s, 2, four, right, 7, r, 8, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st));
        for (int i = 0; i < 8; i++)
            CHECK_EQ(r[i], left * 10 + i, "Sendrecv derived->int payload");
        int c = -1;
        MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK_EQ(c, 8, "count in ints");
        MPI_CHK(MPI_Get_count(&st, four, &c));
        CHECK_EQ(c, 2, "count in 4-int units");
        /* Replace with a derived type: 2 'four's. */
        MPI_CHK(MPI_Sendrecv_replace(s, 2, four, right, 8, left, 8, MPI_COMM_WORLD, &st));
        for (int i = 0; i < 8; i++)
            CHECK_EQ(s[i], left * 10 + i, "Sendrecv_replace derived payload");
        MPI_CHK(MPI_Type_free(&four));
    }

    /* PROC_NULL on one side: a non-periodic shift. */
    {
        int dst = t_rank + 1 < t_size ? t_rank + 1 : MPI_PROC_NULL;
        int src = t_rank > 0 ? t_rank - 1 : MPI_PROC_NULL;
        int v = 500 + t_rank, got = -1;
        MPI_Status st;
        MPI_CHK(MPI_Sendrecv(&v, 1, MPI_INT, dst, 9, &got, 1, MPI_INT, src, 9, MPI_COMM_WORLD, &st));
        if (src == MPI_PROC_NULL) {
            CHECK_EQ(got, -1, "receive from PROC_NULL changed the buffer");
            CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL, "status source for PROC_NULL");
            CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG, "status tag for PROC_NULL");
            int c = -1;
            MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
            CHECK_EQ(c, 0, "count from PROC_NULL");
        } else {
            CHECK_EQ(got, 500 + src, "non-periodic shift payload");
        }
        int w = 700 + t_rank;
        MPI_CHK(MPI_Sendrecv_replace(&w, 1, MPI_INT, dst, 10, src, 10, MPI_COMM_WORLD, &st));
        CHECK_EQ(w, src == MPI_PROC_NULL ? 700 + t_rank : 700 + src, "Sendrecv_replace with PROC_NULL");
    }

    free(sb);
    free(rb);
    return t_finish();
}
