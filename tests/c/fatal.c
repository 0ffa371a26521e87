/* The default error handler MPI_ERRORS_ARE_FATAL: an MPI_Send to an invalid rank (world size) on
 * MPI_COMM_WORLD ends the job with a non-zero exit status and a message naming MPI_Send. Checked by
 * the driver: non-zero exit, "MPI_Send" in the output, "ABOUT TO FAIL" printed, no PASS/FAIL line.
 * If the erroneous call returns, a FAIL line is printed. Any N >= 1. */
#include "common.h"

int main(int argc, char **argv)
{
    t_name = "fatal";
    t_watchdog();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    if (eh != MPI_ERRORS_ARE_FATAL)
        FAIL("default error handler of MPI_COMM_WORLD is %#x, expected MPI_ERRORS_ARE_FATAL %#x", (unsigned)eh,
             (unsigned)MPI_ERRORS_ARE_FATAL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 0) {
        printf("ABOUT TO FAIL fatal: rank 0 sends to invalid rank %d\n", t_size);
        fflush(stdout);
        usleep(200000); /* let the launcher forward the line before the job is torn down */
        int v = 1;
        int rc = MPI_Send(&v, 1, MPI_INT, t_size, 0, MPI_COMM_WORLD);
        FAIL("MPI_Send to invalid rank %d returned %d under MPI_ERRORS_ARE_FATAL", t_size, rc);
    } else {
        int v;
        MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        FAIL("MPI_Recv returned although rank 0 failed fatally");
    }
    return 1;
}
