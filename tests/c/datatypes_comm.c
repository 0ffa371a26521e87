/* Non-contiguous data in communication: struct types over MPI_BOTTOM (absolute addresses from
 * MPI_Get_address) in Sendrecv and Bcast; a vector Irecv completed by MPI_Test while its Isend
 * was released by MPI_Request_free; Sendrecv_replace, Gather and Allgather (into a resized type)
 * with vectors; and the datatype errors under MPI_ERRORS_RETURN (freeing a predefined type,
 * sending with an uncommitted one, a negative count). */
#include "common.h"

static int right, left;

static void bottom(void)
{
    int a = 10 + t_rank, ra = -1;
    double d = 0.5 + t_rank, rd = -1;
    MPI_Aint addr[2];
    int bl[2] = {1, 1};
    MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, st, rt;
    MPI_CHK(MPI_Get_address(&a, &addr[0]));
    MPI_CHK(MPI_Get_address(&d, &addr[1]));
    MPI_CHK(MPI_Type_create_struct(2, bl, addr, ty, &st));
    MPI_CHK(MPI_Type_commit(&st));
    MPI_CHK(MPI_Get_address(&ra, &addr[0]));
    MPI_CHK(MPI_Get_address(&rd, &addr[1]));
    MPI_CHK(MPI_Type_create_struct(2, bl, addr, ty, &rt));
    MPI_CHK(MPI_Type_commit(&rt));
    MPI_CHK(MPI_Sendrecv(MPI_BOTTOM, 1, st, right, 1, MPI_BOTTOM, 1, rt, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(ra == 10 + left && rd == 0.5 + left, "MPI_BOTTOM struct: got %d %g", ra, rd);
    MPI_CHK(MPI_Bcast(MPI_BOTTOM, 1, t_rank == 0 ? st : rt, 0, MPI_COMM_WORLD));
    if (t_rank)
        CHECK(ra == 10 && rd == 0.5, "MPI_BOTTOM Bcast: got %d %g", ra, rd);
    MPI_CHK(MPI_Type_free(&st));
    MPI_CHK(MPI_Type_free(&rt));
}

static void vectors(void)
{
    int src[30], dst[30], flag = 0, c = -1;
    MPI_Datatype v, vr;
    MPI_Request r, s;
    MPI_Status st;
    for (int i = 0; i < 30; i++) {
        src[i] = i + 100 * t_rank;
        dst[i] = -1;
    }
    MPI_CHK(MPI_Type_vector(10, 1, 3, MPI_INT, &v));
    MPI_CHK(MPI_Type_commit(&v));
    MPI_CHK(MPI_Irecv(dst, 1, v, left, 2, MPI_COMM_WORLD, &r));
    MPI_CHK(MPI_Isend(src, 1, v, right, 2, MPI_COMM_WORLD, &s));
    MPI_CHK(MPI_Request_free(&s));
    while (!flag)
        MPI_CHK(MPI_Test(&r, &flag, &st));
    for (int i = 0; i < 30; i++)
        CHECK(dst[i] == (i % 3 ? -1 : i + 100 * left), "vector Irecv + Test: [%d] = %d", i, dst[i]);
    MPI_CHK(MPI_Get_count(&st, v, &c));
    CHECK_EQ(c, 1, "Get_count of one vector");
    /* The message of the freed Isend is surely delivered: the neighbours synchronize here. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    MPI_CHK(MPI_Sendrecv_replace(src, 1, v, right, 3, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 30; i++)
        CHECK(src[i] == i + 100 * (i % 3 ? t_rank : left), "Sendrecv_replace of a vector: [%d] = %d", i, src[i]);

    int *all = malloc(sizeof(int) * 30 * t_size);
    for (int i = 0; i < 30; i++)
        src[i] = i + 100 * t_rank;
    MPI_CHK(MPI_Gather(src, 1, v, all, 10, MPI_INT, 0, MPI_COMM_WORLD));
    if (t_rank == 0)
        for (int p = 0; p < t_size; p++)
            for (int k = 0; k < 10; k++)
                CHECK(all[p * 10 + k] == 3 * k + 100 * p, "Gather of vectors [%d][%d] = %d", p, k, all[p * 10 + k]);

    /* The vector resized to one int: rank p's ints land at all[p + 3k] (3 ranks at most). */
    MPI_CHK(MPI_Type_create_resized(v, 0, sizeof(int), &vr));
    MPI_CHK(MPI_Type_commit(&vr));
    if (t_size <= 3) {
        int ten[10];
        for (int k = 0; k < 10; k++)
            ten[k] = k + 100 * t_rank;
        for (int i = 0; i < 30 * t_size; i++)
            all[i] = -1;
        MPI_CHK(MPI_Allgather(ten, 10, MPI_INT, all, 1, vr, MPI_COMM_WORLD));
        for (int p = 0; p < t_size; p++)
            for (int k = 0; k < 10; k++)
                CHECK(all[p + 3 * k] == k + 100 * p, "Allgather into a resized vector [%d][%d] = %d", p, k,
                      all[p + 3 * k]);
    }
    free(all);
    MPI_CHK(MPI_Type_free(&vr));
    MPI_CHK(MPI_Type_free(&v));
}

static void errors(void)
{
    MPI_Datatype t = MPI_INT, u;
    int x[2] = {0, 0}, cls = -1;
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Error_class(MPI_Type_free(&t), &cls);
    CHECK_EQ(cls, MPI_ERR_TYPE, "error class of freeing MPI_INT");
    MPI_CHK(MPI_Type_contiguous(2, MPI_INT, &u));
    MPI_Error_class(MPI_Send(x, 1, u, MPI_PROC_NULL, 0, MPI_COMM_WORLD), &cls);
    CHECK_EQ(cls, MPI_ERR_TYPE, "error class of a send with an uncommitted type");
    MPI_Error_class(MPI_Type_contiguous(-1, MPI_INT, &t), &cls);
    CHECK_EQ(cls, MPI_ERR_COUNT, "error class of a negative count");
    MPI_CHK(MPI_Type_free(&u));
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "datatypes_comm", 1);
    right = (t_rank + 1) % t_size;
    left = (t_rank + t_size - 1) % t_size;
    bottom();
    vectors();
    errors();
    return t_finish();
}
