/* The MPI message path's cost in instructions, free of waiting: one rank sends to itself.
 *   path_cost N pair     N rounds of MPI_Send + MPI_Recv of 8 bytes
 *   path_cost N window   N rounds of 64 MPI_Irecv, 64 MPI_Isend of 8 bytes, one MPI_Waitall
 *   path_cost N put_flush    N rounds of an 8 B MPI_Put + MPI_Win_flush (MPI_Win_allocate,
 *                            MPI_Win_lock_all); fetch_op: MPI_Fetch_and_op + MPI_Win_flush;
 *                            cas: MPI_Compare_and_swap + MPI_Win_flush
 * Run under callgrind twice (N and 2N) and divide the difference by N (or by 64 N):
 *   valgrind --tool=callgrind ./path_cost 10000 pair   (LD_LIBRARY_PATH=dist/lib for ours) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    const char *mode = argc > 2 ? argv[2] : "pair";
    double out[WINDOW], in[WINDOW];
    MPI_Request reqs[2 * WINDOW];
    MPI_Init(&argc, &argv);
    for (int i = 0; i < WINDOW; i++) out[i] = i;
    if (strcmp(mode, "put_flush") == 0 || strcmp(mode, "fetch_op") == 0 || strcmp(mode, "cas") == 0) {
        double *mem;
        MPI_Win win;
        MPI_Win_allocate(WINDOW * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        MPI_Win_lock_all(0, win);
        long one = 1, got = 0, cmp = 0;
        for (int r = 0; r < n; r++) {
            if (mode[0] == 'p')
                MPI_Put(&out[1], 1, MPI_DOUBLE, 0, 1, 1, MPI_DOUBLE, win);
            else if (mode[0] == 'f')
                MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, 2, MPI_SUM, win);
            else
                MPI_Compare_and_swap(&one, &cmp, &got, MPI_LONG, 0, 2, win);
            MPI_Win_flush(0, win);
        }
        MPI_Win_unlock_all(win);
        in[0] = mem[1] == out[1] || mode[0] != 'p' ? out[0] : -1;
        MPI_Win_free(&win);
        MPI_Finalize();
        return in[0] == out[0] ? 0 : 1;
    }
    for (int r = 0; r < n; r++) {
        if (strcmp(mode, "window") == 0) {
            for (int i = 0; i < WINDOW; i++) MPI_Irecv(&in[i], 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &reqs[i]);
            for (int i = 0; i < WINDOW; i++)
                MPI_Isend(&out[i], 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &reqs[WINDOW + i]);
            MPI_Waitall(2 * WINDOW, reqs, MPI_STATUSES_IGNORE);
        } else {
            MPI_Send(&out[0], 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
            MPI_Recv(&in[0], 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (in[0] != out[0]) {
        fprintf(stderr, "path_cost: wrong data\n");
        return 1;
    }
    MPI_Finalize();
    return 0;
}
