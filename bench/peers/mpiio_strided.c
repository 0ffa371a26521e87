/* bench/peers/mpiio_strided.c FILE [PIECES] [BYTES] [TRIALS]: independent strided writes. Each
 * rank writes PIECES (16384) pieces of BYTES (64) bytes interleaved with the other ranks' (a vector
 * filetype) in one MPI_File_write_at; the median over TRIALS (9) of the slowest rank's time, as
 * MB/s of the whole file; rank 0 checks every byte (WRONG DATA if a rank's piece was lost).
 * Data sieving (ROMIO's ind_wr_buffer_size) turns the pieces into few block writes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *file = argv[1];
    int K = argc > 2 ? atoi(argv[2]) : 16384, B = argc > 3 ? atoi(argv[3]) : 64, T = argc > 4 ? atoi(argv[4]) : 9;
    char *buf = malloc((size_t)K * B); memset(buf, 'a' + r, (size_t)K * B);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, file, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_Datatype piece, vec;
    MPI_Type_contiguous(B, MPI_BYTE, &piece);
    MPI_Type_vector(K, 1, n, piece, &vec); MPI_Type_commit(&vec);
    MPI_File_set_view(fh, (MPI_Offset)r * B, MPI_BYTE, vec, "native", MPI_INFO_NULL);
    double t[64];
    for (int i = 0; i < T; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_File_write_at(fh, 0, buf, K * B, MPI_BYTE, MPI_STATUS_IGNORE);
        double mine = MPI_Wtime() - t0, all;
        MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t[i] = all;
    }
    qsort(t, T, sizeof t[0], cmp);
    /* check: piece j of rank q holds 'a' + q */
    MPI_File_sync(fh); MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    if (r == 0) {
        FILE *f = fopen(file, "rb"); char *all = malloc((size_t)K * B * n);
        size_t got = fread(all, 1, (size_t)K * B * n, f); fclose(f);
        for (size_t i = 0; i < got; i++) bad += all[i] != 'a' + (int)((i / B) % n);
        bad += got != (size_t)K * B * n;
        printf("strided %d ranks x %d pieces of %d B: %.1f MB/s (median %.4f s)%s\n", n, K, B,
               (double)K * B * n / t[T / 2] / 1e6, t[T / 2], bad ? " WRONG DATA" : "");
    }
    MPI_File_close(&fh);
    if (r == 0) unlink(file);
    MPI_Finalize();
    return 0;
}
