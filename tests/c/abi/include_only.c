/* Compiles <mpi.h> alone, as C (-std=c99 -pedantic) and as C++ (-x c++ -std=c++11), with every
 * warning an error, and gives gcc's -aux-info a translation unit that declares every MPI
 * function. Used by crates/mpi/tests/abi.rs. */
#include <mpi.h>

int main(void) {
    MPI_Status status;
    status.MPI_ERROR = MPI_SUCCESS;
    return status.MPI_ERROR;
}
