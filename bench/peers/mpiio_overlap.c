/* bench/peers/mpiio_overlap.c FILE [MIB] [COMPUTE_S] [TRIALS]: does nonblocking MPI-IO overlap
 * computation? One rank (MPI_COMM_SELF) writes MIB MiB (default 64) at offset 0 of FILE, which a
 * first write made, three ways, TRIALS times each (default 9), interleaved:
 *   write    MPI_File_write_at alone
 *   serial   MPI_File_write_at, then COMPUTE_S seconds of computing (default 0.05)
 *   overlap  MPI_File_iwrite_at, the same computing, MPI_Wait
 * and prints the median seconds of each and overlap's share of the write hidden,
 * (serial - overlap) / write: 1 = the write wholly hidden, 0 = done at the call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void compute(double s)
{
    volatile double x = 0;
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < s)
        x += 1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [MIB] [COMPUTE_S] [TRIALS]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long mib = argc > 2 ? atol(argv[2]) : 64;
    double work = argc > 3 ? atof(argv[3]) : 0.05;
    int trials = argc > 4 ? atoi(argv[4]) : 9;
    int n = (int)(mib << 20);
    char *buf = malloc((size_t)n);
    memset(buf, 7, (size_t)n);
    MPI_File fh;
    MPI_Status st;
    MPI_Request rq;
    MPI_File_open(MPI_COMM_SELF, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, 0, buf, n, MPI_BYTE, &st);
    double *w = malloc(trials * sizeof *w), *s = malloc(trials * sizeof *s), *o = malloc(trials * sizeof *o);
    for (int t = 0; t < trials; t++) {
        double t0 = MPI_Wtime();
        MPI_File_write_at(fh, 0, buf, n, MPI_BYTE, &st);
        w[t] = MPI_Wtime() - t0;
        t0 = MPI_Wtime();
        MPI_File_write_at(fh, 0, buf, n, MPI_BYTE, &st);
        compute(work);
        s[t] = MPI_Wtime() - t0;
        t0 = MPI_Wtime();
        MPI_File_iwrite_at(fh, 0, buf, n, MPI_BYTE, &rq);
        compute(work);
        MPI_Wait(&rq, &st);
        o[t] = MPI_Wtime() - t0;
    }
    double mw = median(w, trials), ms = median(s, trials), mo = median(o, trials);
    printf("write %.4f serial %.4f overlap %.4f hidden %.2f\n", mw, ms, mo, (ms - mo) / mw);
    MPI_File_close(&fh);
    unlink(argv[1]);
    MPI_Finalize();
    return 0;
}
