/* An MPMD job (`bbrun -n 1 ./mpmd first : -n 2 ./mpmd second ...`, or Hydra's and Open MPI's
 * mpiexec with the same line): one MPI_COMM_WORLD spans every program, in the order of the line;
 * MPI_APPNUM tells each rank which program it is (0, 1, ...); each program has its own
 * arguments. argv: the name of this rank's program in the line ("first", "second", ...), then
 * the size of every program in order. Rank 0 prints "PASS mpmd". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *names[] = {"first", "second", "third", "fourth"};

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || argc - 2 > 4) {
        fprintf(stderr, "usage: mpmd NAME SIZE0 SIZE1 ...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Which program this rank must be, from the sizes and its rank. */
    int apps = argc - 2, expect = -1, total = 0;
    for (int k = 0; k < apps; k++) {
        int n = atoi(argv[2 + k]);
        if (rank >= total && rank < total + n) expect = k;
        total += n;
    }
    if (total != size) {
        printf("FAIL mpmd: rank %d: world size %d, the line has %d ranks\n", rank, size, total);
        errors++;
    }
    int *appnum, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    if (!flag || *appnum != expect) {
        printf("FAIL mpmd: rank %d: MPI_APPNUM %d (set: %d), expected %d\n", rank, flag ? *appnum : -1, flag, expect);
        errors++;
    }
    if (expect < 0 || strcmp(argv[1], names[expect]) != 0) {
        printf("FAIL mpmd: rank %d runs '%s', expected program %d\n", rank, argv[1], expect);
        errors++;
    }
    /* Every rank sees every other's program number. */
    int *all = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&expect, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0, k = 0, seen = 0; r < size; r++) {
        while (k < apps && seen == atoi(argv[2 + k])) k++, seen = 0;
        if (all[r] != k) {
            printf("FAIL mpmd: rank %d says rank %d runs program %d, expected %d\n", rank, r, all[r], k);
            errors++;
        }
        seen++;
    }
    free(all);
    int total_errors = 0;
    MPI_Allreduce(&errors, &total_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total_errors == 0) printf("PASS mpmd\n");
    MPI_Finalize();
    return total_errors != 0;
}
