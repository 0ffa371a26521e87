/* The MPI 4.0 large-count (_c) functions, with counts below 2^31 (the over-2^31 message is
 * large_count_huge.c): point-to-point in every mode, persistent and matched receives, buffered
 * sends, collectives (blocking and nonblocking, MPI_Count counts and MPI_Aint displacements),
 * derived datatypes whose envelope and contents hold large counts, status counts beyond
 * INT_MAX, packing, a large-count user operator, and collectives on an intercommunicator of
 * the even and odd world ranks (2 ranks or more). A negative count is MPI_ERR_COUNT.
 * Any number of ranks (point-to-point pairs 0-1, 2-3, ...). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define N 1000

static void p2p(void)
{
    int peer = t_rank ^ 1;
    if (peer >= t_size)
        return;
    int *send = malloc(N * sizeof(int)), *recv = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
        send[i] = t_rank * 100000 + i;
    MPI_Status st;
    MPI_Count n = -1;
    MPI_Request r[2];
    MPI_CHK(MPI_Irecv_c(recv, N, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[0]));
    MPI_CHK(MPI_Isend_c(send, N, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[1]));
    MPI_CHK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    CHECK_EQ(recv[N - 1], peer * 100000 + N - 1, "MPI_Isend_c/MPI_Irecv_c data");
    MPI_CHK(MPI_Sendrecv_c(send, N, MPI_INT, peer, 2, recv, N, MPI_INT, peer, 2, MPI_COMM_WORLD, &st));
    MPI_CHK(MPI_Get_count_c(&st, MPI_INT, &n));
    CHECK_EQ(n, N, "MPI_Get_count_c after MPI_Sendrecv_c");
    if (t_rank < peer) {
        MPI_CHK(MPI_Send_c(send, N, MPI_INT, peer, 3, MPI_COMM_WORLD));
        MPI_CHK(MPI_Ssend_c(send, N / 2, MPI_INT, peer, 4, MPI_COMM_WORLD));
        MPI_CHK(MPI_Recv_c(recv, N, MPI_INT, peer, 5, MPI_COMM_WORLD, &st));
        MPI_CHK(MPI_Send_init_c(send, 7, MPI_INT, peer, 6, MPI_COMM_WORLD, &r[0]));
        for (int k = 0; k < 3; k++) {
            MPI_CHK(MPI_Start(&r[0]));
            MPI_CHK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        }
        MPI_CHK(MPI_Request_free(&r[0]));
        int bufsize = N * sizeof(int) + MPI_BSEND_OVERHEAD;
        void *buf = malloc(bufsize);
        MPI_CHK(MPI_Buffer_attach_c(buf, bufsize));
        MPI_CHK(MPI_Bsend_c(send, N, MPI_INT, peer, 7, MPI_COMM_WORLD));
        void *back = NULL;
        MPI_Count size = 0;
        MPI_CHK(MPI_Buffer_detach_c(&back, &size));
        CHECK(back == buf, "MPI_Buffer_detach_c gives the buffer back");
        CHECK_EQ(size, bufsize, "MPI_Buffer_detach_c size");
        free(buf);
    } else {
        MPI_CHK(MPI_Recv_c(recv, N, MPI_INT, peer, 3, MPI_COMM_WORLD, &st));
        MPI_CHK(MPI_Get_count_c(&st, MPI_INT, &n));
        CHECK_EQ(n, N, "MPI_Get_count_c after MPI_Recv_c");
        MPI_Message msg;
        MPI_CHK(MPI_Mprobe(peer, 4, MPI_COMM_WORLD, &msg, &st));
        MPI_CHK(MPI_Mrecv_c(recv, N, MPI_INT, &msg, &st));
        MPI_CHK(MPI_Get_elements_c(&st, MPI_INT, &n));
        CHECK_EQ(n, N / 2, "MPI_Get_elements_c after MPI_Mrecv_c");
        MPI_CHK(MPI_Rsend_c(send, N, MPI_INT, peer, 5, MPI_COMM_WORLD));
        MPI_CHK(MPI_Recv_init_c(recv, 7, MPI_INT, peer, 6, MPI_COMM_WORLD, &r[0]));
        for (int k = 0; k < 3; k++) {
            MPI_CHK(MPI_Start(&r[0]));
            MPI_CHK(MPI_Wait(&r[0], &st));
            MPI_CHK(MPI_Get_count_c(&st, MPI_INT, &n));
            CHECK_EQ(n, 7, "MPI_Recv_init_c count");
        }
        MPI_CHK(MPI_Request_free(&r[0]));
        MPI_CHK(MPI_Recv_c(recv, N, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(recv[5], peer * 100000 + 5, "MPI_Bsend_c data");
    }
    /* A negative count names the count. */
    int rc = MPI_Send_c(send, -1, MPI_INT, peer, 9, MPI_COMM_WORLD);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_COUNT, "error class of MPI_Send_c with count -1");
    rc = MPI_Irecv_c(recv, -5, MPI_INT, peer, 9, MPI_COMM_WORLD, &r[0]);
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_COUNT, "error class of MPI_Irecv_c with count -5");
    free(send);
    free(recv);
}

static void collectives(void)
{
    int p = t_size;
    long long v = t_rank + 1, sum = 0;
    MPI_CHK(MPI_Allreduce_c(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(sum, (long long)p * (p + 1) / 2, "MPI_Allreduce_c");
    MPI_CHK(MPI_Scan_c(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(sum, (long long)(t_rank + 1) * (t_rank + 2) / 2, "MPI_Scan_c");
    int b[4] = {0, 0, 0, 0};
    if (t_rank == 0)
        b[0] = 11, b[3] = 44;
    MPI_CHK(MPI_Bcast_c(b, 4, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK_EQ(b[3], 44, "MPI_Bcast_c");
    /* Allgatherv_c: rank r gives r+1 ints, placed backwards. */
    MPI_Count *counts = malloc(p * sizeof(MPI_Count));
    MPI_Aint *displs = malloc(p * sizeof(MPI_Aint));
    MPI_Aint total = 0;
    for (int r = p - 1; r >= 0; r--) {
        counts[r] = r + 1;
        displs[r] = total;
        total += r + 1;
    }
    int *mine = malloc((t_rank + 1) * sizeof(int)), *all = malloc(total * sizeof(int));
    for (int i = 0; i <= t_rank; i++)
        mine[i] = t_rank * 10 + i;
    MPI_CHK(MPI_Allgatherv_c(mine, t_rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < p; r++)
        for (int i = 0; i <= r; i++)
            CHECK_EQ(all[displs[r] + i], r * 10 + i, "MPI_Allgatherv_c element");
    MPI_Request req;
    memset(all, 0, total * sizeof(int));
    MPI_CHK(MPI_Iallgatherv_c(mine, t_rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, &req));
    MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_EQ(all[displs[p - 1] + p - 1], (p - 1) * 10 + p - 1, "MPI_Iallgatherv_c last element");
    /* Alltoallw_c: one int to each rank, byte displacements as MPI_Aint. */
    int *sb = malloc(p * sizeof(int)), *rb = malloc(p * sizeof(int));
    MPI_Count *ones = malloc(p * sizeof(MPI_Count));
    MPI_Aint *bytes = malloc(p * sizeof(MPI_Aint));
    MPI_Datatype *types = malloc(p * sizeof(MPI_Datatype));
    for (int r = 0; r < p; r++) {
        sb[r] = t_rank * 100 + r;
        ones[r] = 1;
        bytes[r] = r * sizeof(int);
        types[r] = MPI_INT;
    }
    MPI_CHK(MPI_Alltoallw_c(sb, ones, bytes, types, rb, ones, bytes, types, MPI_COMM_WORLD));
    for (int r = 0; r < p; r++)
        CHECK_EQ(rb[r], r * 100 + t_rank, "MPI_Alltoallw_c element");
    /* Reduce_scatter_c with MPI_Count counts: rank r gets r+1 sums. */
    long long *in = malloc(total * sizeof(long long)), *out = malloc((t_rank + 1) * sizeof(long long));
    for (MPI_Aint i = 0; i < total; i++)
        in[i] = i;
    MPI_Count *rcounts = malloc(p * sizeof(MPI_Count));
    for (int r = 0; r < p; r++)
        rcounts[r] = r + 1;
    MPI_CHK(MPI_Reduce_scatter_c(in, out, rcounts, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    MPI_Aint first = (MPI_Aint)t_rank * (t_rank + 1) / 2;
    CHECK_EQ(out[t_rank], (first + t_rank) * p, "MPI_Reduce_scatter_c last element");
    int g[2] = {t_rank, -t_rank}, *gat = malloc(2 * p * sizeof(int));
    MPI_CHK(MPI_Gather_c(g, 2, MPI_INT, gat, 2, MPI_INT, 0, MPI_COMM_WORLD));
    if (t_rank == 0)
        CHECK_EQ(gat[2 * (p - 1) + 1], -(p - 1), "MPI_Gather_c");
    int rc = MPI_Bcast_c(b, -3, MPI_INT, 0, MPI_COMM_WORLD), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_COUNT, "error class of MPI_Bcast_c with count -3");
    free(counts), free(displs), free(mine), free(all), free(sb), free(rb), free(ones), free(bytes);
    free(types), free(in), free(out), free(rcounts), free(gat);
}

static void datatypes(void)
{
    MPI_Datatype t;
    MPI_Count ni, na, nc, nd, size, lb, extent;
    int combiner;
    MPI_CHK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &t));
    MPI_CHK(MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner));
    CHECK(ni == 0 && na == 0 && nc == 3 && nd == 1 && combiner == MPI_COMBINER_VECTOR,
          "MPI_Type_get_envelope_c of a vector_c: %lld ints, %lld addresses, %lld counts, %lld types, combiner %d",
          (long long)ni, (long long)na, (long long)nc, (long long)nd, combiner);
    MPI_Count c[3];
    MPI_Datatype old;
    MPI_CHK(MPI_Type_get_contents_c(t, 0, 0, 3, 1, NULL, NULL, c, &old));
    CHECK(c[0] == 3 && c[1] == 2 && c[2] == 4 && old == MPI_INT, "MPI_Type_get_contents_c of a vector_c");
    int i1, i2, i3;
    CHECK(MPI_Type_get_envelope(t, &i1, &i2, &i3, &combiner) != MPI_SUCCESS,
          "MPI_Type_get_envelope of a type with large counts fails");
    MPI_CHK(MPI_Type_free(&t));

    MPI_Count big = (MPI_Count)INT_MAX + 7;
    MPI_CHK(MPI_Type_contiguous_c(big, MPI_BYTE, &t));
    MPI_CHK(MPI_Type_size_c(t, &size));
    CHECK_EQ(size, big, "MPI_Type_size_c of contiguous_c(INT_MAX+7)");
    int isize = 0;
    MPI_CHK(MPI_Type_size(t, &isize));
    CHECK_EQ(isize, MPI_UNDEFINED, "MPI_Type_size of contiguous_c(INT_MAX+7)");
    MPI_CHK(MPI_Type_get_contents_c(t, 0, 0, 1, 1, NULL, NULL, c, &old));
    CHECK_EQ(c[0], big, "MPI_Type_get_contents_c count of contiguous_c");
    MPI_CHK(MPI_Type_free(&t));

    MPI_Count stride = (MPI_Count)1 << 40;
    MPI_CHK(MPI_Type_create_hvector_c(2, 1, stride, MPI_CHAR, &t));
    MPI_CHK(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK(lb == 0 && extent == stride + 1, "MPI_Type_get_extent_c of hvector_c: lb %lld extent %lld", (long long)lb,
          (long long)extent);
    MPI_CHK(MPI_Type_get_true_extent_c(t, &lb, &extent));
    CHECK_EQ(extent, stride + 1, "MPI_Type_get_true_extent_c of hvector_c");
    MPI_CHK(MPI_Type_free(&t));

    MPI_Count lens[2] = {1, 2}, disps[2] = {0, (MPI_Count)3 << 32};
    MPI_Datatype tys[2] = {MPI_INT, MPI_DOUBLE};
    MPI_CHK(MPI_Type_create_struct_c(2, lens, disps, tys, &t));
    MPI_CHK(MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner));
    CHECK(ni == 0 && na == 0 && nc == 5 && nd == 2 && combiner == MPI_COMBINER_STRUCT, "envelope of struct_c");
    MPI_CHK(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK_EQ(extent, disps[1] + 16, "MPI_Type_get_extent_c of struct_c");
    MPI_CHK(MPI_Type_free(&t));

    MPI_Count sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_CHK(MPI_Type_create_subarray_c(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
    MPI_CHK(MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner));
    CHECK(ni == 2 && nc == 6 && combiner == MPI_COMBINER_SUBARRAY, "envelope of subarray_c: %lld ints %lld counts",
          (long long)ni, (long long)nc);
    MPI_CHK(MPI_Type_size_c(t, &size));
    CHECK_EQ(size, 6 * sizeof(int), "MPI_Type_size_c of subarray_c");
    MPI_CHK(MPI_Type_free(&t));

    MPI_Count bl[3] = {1, 2, 1}, ds[3] = {5, 0, 9};
    MPI_CHK(MPI_Type_indexed_c(3, bl, ds, MPI_INT, &t));
    MPI_CHK(MPI_Type_size_c(t, &size));
    CHECK_EQ(size, 4 * sizeof(int), "MPI_Type_size_c of indexed_c");
    MPI_CHK(MPI_Type_free(&t));
    MPI_CHK(MPI_Type_create_indexed_block_c(3, 2, ds, MPI_INT, &t));
    MPI_CHK(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK_EQ(extent, 11 * sizeof(int), "MPI_Type_get_extent_c of indexed_block_c");
    MPI_CHK(MPI_Type_free(&t));
    MPI_CHK(MPI_Type_create_resized_c(MPI_INT, 0, (MPI_Count)1 << 33, &t));
    MPI_CHK(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK_EQ(extent, (MPI_Count)1 << 33, "MPI_Type_get_extent_c of resized_c");
    MPI_CHK(MPI_Type_free(&t));

    int rc = MPI_Type_contiguous_c(-2, MPI_INT, &t), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_COUNT, "error class of MPI_Type_contiguous_c with count -2");

    /* A status beyond INT_MAX elements. */
    MPI_Status st;
    MPI_Count n = 0;
    MPI_CHK(MPI_Status_set_elements_x(&st, MPI_CHAR, big));
    MPI_CHK(MPI_Get_count_c(&st, MPI_CHAR, &n));
    CHECK_EQ(n, big, "MPI_Get_count_c beyond INT_MAX");
    MPI_CHK(MPI_Get_elements_c(&st, MPI_CHAR, &n));
    CHECK_EQ(n, big, "MPI_Get_elements_c beyond INT_MAX");
    int in = 0;
    MPI_CHK(MPI_Get_count(&st, MPI_CHAR, &in));
    CHECK_EQ(in, MPI_UNDEFINED, "MPI_Get_count beyond INT_MAX");
}

static void packing(void)
{
    int data[5] = {1, 2, 3, 4, 5}, back[5] = {0};
    char buf[64];
    MPI_Count pos = 0, size = 0;
    MPI_CHK(MPI_Pack_size_c(5, MPI_INT, MPI_COMM_WORLD, &size));
    CHECK(size >= 20, "MPI_Pack_size_c of 5 ints: %lld", (long long)size);
    MPI_CHK(MPI_Pack_c(data, 5, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, 20, "MPI_Pack_c position");
    pos = 0;
    MPI_CHK(MPI_Unpack_c(buf, sizeof buf, &pos, back, 5, MPI_INT, MPI_COMM_WORLD));
    CHECK_EQ(back[4], 5, "MPI_Unpack_c data");
    MPI_CHK(MPI_Pack_external_size_c("external32", 5, MPI_INT, &size));
    CHECK_EQ(size, 20, "MPI_Pack_external_size_c");
    pos = 0;
    MPI_CHK(MPI_Pack_external_c("external32", data, 5, MPI_INT, buf, sizeof buf, &pos));
    CHECK_EQ((unsigned char)buf[3], 1, "external32 is big-endian");
    memset(back, 0, sizeof back);
    pos = 0;
    MPI_CHK(MPI_Unpack_external_c("external32", buf, sizeof buf, &pos, back, 5, MPI_INT));
    CHECK_EQ(back[2], 3, "MPI_Unpack_external_c data");
}

static MPI_Count seen_len = -1;

static void big_max(void *in, void *inout, MPI_Count *len, MPI_Datatype *type)
{
    (void)type;
    seen_len = *len;
    for (MPI_Count i = 0; i < *len; i++)
        if (((int *)in)[i] > ((int *)inout)[i])
            ((int *)inout)[i] = ((int *)in)[i];
}

static void user_op(void)
{
    MPI_Op op;
    MPI_CHK(MPI_Op_create_c(big_max, 1, &op));
    int a[3] = {5, 1, 9}, b[3] = {2, 7, 3};
    MPI_CHK(MPI_Reduce_local_c(a, b, 3, MPI_INT, op));
    CHECK(b[0] == 5 && b[1] == 7 && b[2] == 9, "MPI_Reduce_local_c with a large-count operator");
    CHECK_EQ(seen_len, 3, "length the MPI_User_function_c saw");
    int v[2] = {t_rank, -t_rank}, m[2];
    MPI_CHK(MPI_Allreduce_c(v, m, 2, MPI_INT, op, MPI_COMM_WORLD));
    CHECK(m[0] == t_size - 1 && m[1] == 0, "MPI_Allreduce_c with a large-count operator");
    MPI_CHK(MPI_Op_free(&op));
}

/* The _c collectives on an intercommunicator (even world ranks against odd): rooted ones take
 * MPI_ROOT / MPI_PROC_NULL / a remote rank, results come from the remote group, MPI_IN_PLACE is
 * MPI_ERR_BUFFER and scans are MPI_ERR_COMM. */
static void intercomm(void)
{
    if (t_size < 2)
        return;
    int color = t_rank % 2, lr, rs, v = t_rank, out = -1, buf[5], ec;
    MPI_Comm local, inter;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, color, t_rank, &local));
    MPI_CHK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 7, &inter));
    MPI_CHK(MPI_Comm_rank(inter, &lr));
    MPI_CHK(MPI_Comm_remote_size(inter, &rs));
    /* The root of group `g`'s side: MPI_ROOT at its rank 0, MPI_PROC_NULL elsewhere; 0 remotely. */
#define ROOT_IN(g) (color == (g) ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0)
    for (int i = 0; i < 5; i++)
        buf[i] = color == 0 ? 100 + i : -1;
    MPI_CHK(MPI_Bcast_c(buf, (MPI_Count)5, MPI_INT, ROOT_IN(0), inter));
    for (int i = 0; color == 1 && i < 5; i++)
        CHECK(buf[i] == 100 + i, "MPI_Bcast_c on an intercommunicator: buf[%d] = %d", i, buf[i]);
    for (int i = 0; i < 5; i++)
        buf[i] = color == 1 ? 200 + i : -1;
    MPI_Request rq;
    MPI_CHK(MPI_Ibcast_c(buf, (MPI_Count)5, MPI_INT, ROOT_IN(1), inter, &rq));
    MPI_CHK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; color == 0 && i < 5; i++)
        CHECK(buf[i] == 200 + i, "MPI_Ibcast_c on an intercommunicator: buf[%d] = %d", i, buf[i]);
    int odd = 0, even = 0;
    for (int r = 0; r < t_size; r++)
        *(r % 2 ? &odd : &even) += r;
    /* A non-root of the root's group passes nothing significant. */
    if (color == 0 && lr != 0)
        MPI_CHK(MPI_Reduce_c(NULL, NULL, 0, MPI_DATATYPE_NULL, MPI_OP_NULL, MPI_PROC_NULL, inter));
    else
        MPI_CHK(MPI_Reduce_c(&v, &out, 1, MPI_INT, MPI_SUM, ROOT_IN(0), inter));
    CHECK(color || lr || out == odd, "MPI_Reduce_c on an intercommunicator: %d, want %d", out, odd);
    MPI_CHK(MPI_Allreduce_c(&v, &out, 1, MPI_INT, MPI_SUM, inter));
    CHECK(out == (color ? even : odd), "MPI_Allreduce_c on an intercommunicator: %d", out);
    MPI_Count *counts = malloc(rs * sizeof *counts);
    MPI_Aint *displs = malloc(rs * sizeof *displs);
    int *all = malloc(rs * sizeof *all);
    for (int i = 0; i < rs; i++)
        counts[i] = 1, displs[i] = rs - 1 - i, all[i] = -1;
    MPI_CHK(MPI_Allgatherv_c(&v, 1, MPI_INT, all, counts, displs, MPI_INT, inter));
    for (int i = 0; i < rs; i++)
        CHECK(all[rs - 1 - i] == 2 * i + 1 - color, "MPI_Allgatherv_c on an intercommunicator: part %d = %d", i,
              all[rs - 1 - i]);
    for (int i = 0; i < rs; i++)
        all[i] = -1;
    MPI_CHK(MPI_Gather_c(&v, 1, MPI_INT, all, 1, MPI_INT, ROOT_IN(1), inter));
    for (int i = 0; color == 1 && lr == 0 && i < rs; i++)
        CHECK(all[i] == 2 * i, "MPI_Gather_c on an intercommunicator: part %d = %d", i, all[i]);
#undef ROOT_IN
    MPI_Error_class(MPI_Allreduce_c(MPI_IN_PLACE, &out, 1, MPI_INT, MPI_SUM, inter), &ec);
    CHECK(ec == MPI_ERR_BUFFER, "MPI_Allreduce_c in place on an intercommunicator: class %d", ec);
    MPI_Error_class(MPI_Scan_c(&v, &out, 1, MPI_INT, MPI_SUM, inter), &ec);
    CHECK(ec == MPI_ERR_COMM, "MPI_Scan_c on an intercommunicator: class %d", ec);
    MPI_Error_class(MPI_Iexscan_c(&v, &out, 1, MPI_INT, MPI_SUM, inter, &rq), &ec);
    CHECK(ec == MPI_ERR_COMM, "MPI_Iexscan_c on an intercommunicator: class %d", ec);
    free(counts), free(displs), free(all);
    MPI_CHK(MPI_Comm_free(&inter));
    MPI_CHK(MPI_Comm_free(&local));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "large_count", 1);
    p2p();
    collectives();
    datatypes();
    packing();
    user_op();
    intercomm();
    return t_finish();
}
