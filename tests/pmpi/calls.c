/* The calls tool.c counts, each made a known number of times (2 ranks), beside calls built on
 * the counted ones in a naive library (MPI_Allgather, MPI_Comm_free, MPI_Ssend). */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, x = 1, y = 0, all[2];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Sendrecv(&x, 1, MPI_INT, next, 0, &y, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request q[2];
    MPI_Isend(&x, 1, MPI_INT, next, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(&y, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allgather(&x, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Bcast(&x, 1, MPI_INT, 0, dup);
    MPI_Comm_free(&dup);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) MPI_Ssend(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
    if (rank == 1) MPI_Recv(&y, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) MPI_Send(&x, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
    if (rank == 1) MPI_Recv(&y, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
