/* MPI_Abort from one rank ends the whole job with a non-zero exit status, while the other ranks
 * are blocked in MPI_Recv. Checked by the driver: the job must exit non-zero, quickly, print
 * "ABORTING" (from the aborting rank, before the call) and no PASS/FAIL line. If MPI_Abort returns,
 * or a blocked rank is released, a FAIL line is printed. Any N >= 1 (best at N >= 2). */
#include "common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "abort", 1);
    const int victim = t_size - 1;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (t_rank == victim) {
        usleep(100000); /* let the others block first */
        printf("ABORTING abort: rank %d calls MPI_Abort(MPI_COMM_WORLD, 7)\n", t_rank);
        fflush(stdout);
        usleep(200000); /* let the launcher forward the line before the job is torn down */
        MPI_Abort(MPI_COMM_WORLD, 7);
        FAIL("MPI_Abort returned");
    } else {
        int v;
        MPI_Recv(&v, 1, MPI_INT, victim, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        FAIL("MPI_Recv from a rank that called MPI_Abort returned");
    }
    return 1;
}
