/* bench/peers/mpiio_small.c FILE [WRITES] [BYTES] [TRIALS]: many small independent writes, as
 * HDF5's metadata makes them. Each rank writes WRITES (20000) pieces of BYTES (64) bytes, one
 * MPI_File_write_at each, into its own contiguous part of the file (the default view); the
 * median over TRIALS (9) of the slowest rank's time per write, in microseconds; rank 0 checks
 * every byte (WRONG DATA if one is lost). What a library adds to the pwrite itself shows here
 * (a lock per write, say). FLOOR=1 in the environment times the same writes as plain pwrite(2)
 * calls on a descriptor of the rank's own: the floor. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *file = argv[1];
    int W = argc > 2 ? atoi(argv[2]) : 20000, B = argc > 3 ? atoi(argv[3]) : 64, T = argc > 4 ? atoi(argv[4]) : 9;
    char *buf = malloc(B); memset(buf, 'a' + r, B);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, file, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_Offset base = (MPI_Offset)r * W * B;
    int floor_fd = getenv("FLOOR") && atoi(getenv("FLOOR")) ? open(file, O_WRONLY) : -1;
    double t[64];
    for (int i = 0; i < T; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int k = 0; k < W; k++)
            if (floor_fd >= 0) {
                if (pwrite(floor_fd, buf, B, base + (MPI_Offset)k * B) != B) abort();
            } else {
                MPI_File_write_at(fh, base + (MPI_Offset)k * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE);
            }
        double mine = MPI_Wtime() - t0, all;
        MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t[i] = all;
    }
    qsort(t, T, sizeof t[0], cmp);
    MPI_File_sync(fh); MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) {
        FILE *f = fopen(file, "rb"); size_t len = (size_t)W * B * n; char *all = malloc(len);
        size_t got = fread(all, 1, len, f); fclose(f);
        int bad = got != len;
        for (size_t i = 0; i < got; i++) bad += all[i] != 'a' + (int)(i / ((size_t)W * B));
        printf("small writes%s %d ranks x %d of %d B: %.3f us a write (median %.4f s)%s\n", floor_fd >= 0 ? " (pwrite floor)" : "", n, W, B,
               t[T / 2] / W * 1e6, t[T / 2], bad ? " WRONG DATA" : "");
    }
    if (floor_fd >= 0) close(floor_fd);
    MPI_File_close(&fh);
    if (r == 0) unlink(file);
    MPI_Finalize();
    return 0;
}
