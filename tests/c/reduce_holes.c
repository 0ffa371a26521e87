/* Reductions on a type with holes: the result lands in the type's data bytes only; the holes
 * of the receive buffer keep what the program left there (MPICH 4.0.2 does so). Type: a
 * vector of 2 blocks of 1 int, stride 2 (extent 3 ints, hole at [1]), count 3; a user sum
 * (MPICH refuses MPI_SUM on it); MPI_Allreduce, MPI_Iallreduce, MPI_Reduce, MPI_Ireduce, MPI_Scan, MPI_Exscan,
 * MPI_Iscan, MPI_Reduce_scatter_block, MPI_Ireduce_scatter, and MPI_Allreduce in place. */
#include "common.h"

enum { COUNT = 3, INTS = 3 * COUNT, HOLE = -7777 };

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    /* Each instance: ints 0 and 2 are data; int 1 is a hole, not to be touched. */
    (void)t;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        b[3 * i] += a[3 * i];
        b[3 * i + 2] += a[3 * i + 2];
    }
}

static void fill(int *v, int rank)
{
    for (int i = 0; i < INTS; i++)
        v[i] = i % 3 == 1 ? 1000 + rank : 10 * (rank + 1) + i;
}

/* Data int i summed over ranks 0..upto-1; holes must hold HOLE. */
static void check(const int *v, int upto, const char *what)
{
    for (int i = 0; i < INTS; i++) {
        int want = HOLE;
        if (i % 3 != 1) {
            want = 0;
            for (int r = 0; r < upto; r++)
                want += 10 * (r + 1) + i;
        }
        CHECK(v[i] == want, "%s: int %d is %d, want %d%s", what, i, v[i], want, i % 3 == 1 ? " (a hole)" : "");
    }
}

static void holes(int *v)
{
    for (int i = 0; i < INTS; i++)
        v[i] = HOLE;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "reduce_holes", 1);
    MPI_Datatype t;
    MPI_CHK(MPI_Type_vector(2, 1, 2, MPI_INT, &t));
    MPI_Datatype r;
    MPI_CHK(MPI_Type_create_resized(t, 0, 3 * sizeof(int), &r));
    MPI_CHK(MPI_Type_commit(&r));
    MPI_Op mine;
    MPI_CHK(MPI_Op_create(user_sum, 1, &mine));
    int send[INTS], recv[INTS];
    fill(send, t_rank);
    {
        MPI_Op op = mine;
        MPI_Request q;
        holes(recv);
        MPI_CHK(MPI_Allreduce(send, recv, COUNT, r, op, MPI_COMM_WORLD));
        check(recv, t_size, "MPI_Allreduce");
        holes(recv);
        MPI_CHK(MPI_Iallreduce(send, recv, COUNT, r, op, MPI_COMM_WORLD, &q));
        MPI_CHK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        check(recv, t_size, "MPI_Iallreduce");
        holes(recv);
        MPI_CHK(MPI_Reduce(send, recv, COUNT, r, op, 0, MPI_COMM_WORLD));
        if (t_rank == 0)
            check(recv, t_size, "MPI_Reduce");
        holes(recv);
        MPI_CHK(MPI_Ireduce(send, recv, COUNT, r, op, 0, MPI_COMM_WORLD, &q));
        MPI_CHK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        if (t_rank == 0)
            check(recv, t_size, "MPI_Ireduce");
        holes(recv);
        MPI_CHK(MPI_Scan(send, recv, COUNT, r, op, MPI_COMM_WORLD));
        check(recv, t_rank + 1, "MPI_Scan");
        holes(recv);
        MPI_CHK(MPI_Iscan(send, recv, COUNT, r, op, MPI_COMM_WORLD, &q));
        MPI_CHK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        check(recv, t_rank + 1, "MPI_Iscan");
        holes(recv);
        MPI_CHK(MPI_Exscan(send, recv, COUNT, r, op, MPI_COMM_WORLD));
        if (t_rank > 0)
            check(recv, t_rank, "MPI_Exscan");
        /* Reduce-scatter: every rank gets COUNT instances of the sum of COUNT * size. */
        int *big = malloc(sizeof(int) * INTS * t_size), *counts = malloc(sizeof(int) * t_size);
        for (int p = 0; p < t_size; p++) {
            fill(big + p * INTS, t_rank);
            counts[p] = COUNT;
        }
        holes(recv);
        MPI_CHK(MPI_Reduce_scatter_block(big, recv, COUNT, r, op, MPI_COMM_WORLD));
        check(recv, t_size, "MPI_Reduce_scatter_block");
        holes(recv);
        MPI_CHK(MPI_Ireduce_scatter(big, recv, counts, r, op, MPI_COMM_WORLD, &q));
        MPI_CHK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        check(recv, t_size, "MPI_Ireduce_scatter");
        free(big);
        free(counts);
        /* In place: the holes of the one buffer keep the program's values. */
        fill(recv, t_rank);
        for (int i = 1; i < INTS; i += 3)
            recv[i] = HOLE;
        MPI_CHK(MPI_Allreduce(MPI_IN_PLACE, recv, COUNT, r, op, MPI_COMM_WORLD));
        check(recv, t_size, "MPI_Allreduce in place");
    }
    MPI_CHK(MPI_Op_free(&mine));
    MPI_CHK(MPI_Type_free(&r));
    MPI_CHK(MPI_Type_free(&t));
    return t_finish();
}
