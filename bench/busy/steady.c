/*
 * steady.c: a 2-rank MPI_Send/MPI_Recv ping-pong for a fixed time, every round trip timed, to
 * measure waiting under load (bench/busy/run.sh runs it beside busy loops). Ranks 0 and 1 ping;
 * any others only join the periodic MPI_Bcast that says whether to go on (they stand for more
 * ranks than cores). Rank 0 prints the count of round trips and the mean, median, p90, p99 and
 * max of the one-way times (round trip / 2) in us: a rank that yields its core to strangers or
 * sleeps too early shows in the mean and the tail, not in the median.
 * Usage: steady [SECONDS (3)] [BYTES (0)]
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { MAX_SAMPLES = 2000000, CHECK_EVERY = 1024 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double seconds = argc > 1 ? atof(argv[1]) : 3;
    int size = argc > 2 ? atoi(argv[2]) : 0;
    char *buf = calloc((size_t)size + 1, 1);
    double *samples = malloc(sizeof(double) * MAX_SAMPLES);
    if (!buf || !samples) {
        fprintf(stderr, "steady: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int n = 0, go = 1;
    double start = now_s();
    while (go) {
        double t0 = now_s();
        if (rank == 0) {
            MPI_Send(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
        double t1 = now_s();
        samples[n++] = (t1 - t0) / 2 * 1e6;
        if (n % CHECK_EVERY == 0) {
            if (rank == 0)
                go = t1 - start < seconds && n + CHECK_EVERY < MAX_SAMPLES;
            MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) {
        qsort(samples, (size_t)n, sizeof(double), cmp_double);
        double total = 0;
        for (int i = 0; i < n; i++)
            total += samples[i];
        printf("n=%d mean=%.2f p50=%.2f p90=%.2f p99=%.1f max=%.0f us\n", n, total / n, samples[n / 2],
               samples[n * 9 / 10], samples[n * 99 / 100], samples[n - 1]);
    }
    free(buf);
    free(samples);
    MPI_Finalize();
    return 0;
}
