/* Non-contiguous receives of large pieces (a vector of 100-double blocks): small enough to go
 * eagerly, large enough for the rendezvous (single copy), and with "fallback" as argument the
 * pipelined copy (BB_SHM_SINGLE_COPY=0, for Billboard; other libraries ignore it). The data
 * must land in the blocks and the gaps stay untouched. Needs 2 ranks (pairs 0-1, 2-3, ...). */
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define BLOCK 100 /* doubles per block: 800 bytes, well above any scatter threshold */
#define STRIDE 150

static void exchange(int count, int peer, MPI_Datatype vec)
{
    size_t span = (size_t)count * STRIDE;
    double *recv = malloc(span * sizeof(double));
    double *send = malloc((size_t)count * BLOCK * sizeof(double));
    for (size_t i = 0; i < span; i++)
        recv[i] = -1.0;
    for (int i = 0; i < count * BLOCK; i++)
        send[i] = t_rank * 1e7 + i;
    MPI_Request r;
    MPI_Status st;
    /* Receive as the vector, send packed: the receive side is what is under test. */
    MPI_CHK(MPI_Irecv(recv, count, vec, peer, 7, MPI_COMM_WORLD, &r));
    MPI_CHK(MPI_Send(send, count * BLOCK, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD));
    MPI_CHK(MPI_Wait(&r, &st));
    int got = -1;
    MPI_CHK(MPI_Get_count(&st, vec, &got));
    CHECK_EQ(got, count, "MPI_Get_count of the vector");
    for (int b = 0; b < count; b++)
        for (int j = 0; j < STRIDE; j++) {
            double want = j < BLOCK ? peer * 1e7 + b * BLOCK + j : -1.0;
            double have = recv[(size_t)b * STRIDE + j];
            if (have != want)
                FAIL("count %d: element %d of block %d is %g, expected %g", count, j, b, have, want);
        }
    free(recv);
    free(send);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "fallback"))
        setenv("BB_SHM_SINGLE_COPY", "0", 1);
    t_init(&argc, &argv, "datatypes_large", 2);
    MPI_Datatype vec;
    MPI_CHK(MPI_Type_vector(1, BLOCK, STRIDE, MPI_DOUBLE, &vec));
    MPI_Datatype row;
    /* One instance = BLOCK doubles, extent STRIDE doubles: count instances form the pattern. */
    MPI_CHK(MPI_Type_create_resized(vec, 0, STRIDE * sizeof(double), &row));
    MPI_CHK(MPI_Type_commit(&row));
    int peer = t_rank ^ 1;
    if (peer < t_size) {
        exchange(3, peer, row);    /* 2.4 KB: eager */
        exchange(50, peer, row);   /* 40 KB: rendezvous */
        exchange(1000, peer, row); /* 800 KB: rendezvous, several segments */
    }
    MPI_CHK(MPI_Type_free(&row));
    MPI_CHK(MPI_Type_free(&vec));
    return t_finish();
}
