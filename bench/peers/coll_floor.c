/* bench/peers/coll_floor.c: the bare floor of a barrier on shared memory, no MPI: N processes
 * (forked) share one mapping, each owning a 128-byte line; each stores its epoch in its line
 * (release) and polls every other line (acquire, a pause between polls) until all hold it.
 * The board's barrier does just this, so the gap to it is the library's. Timed as
 * bench/peers/coll.c times a collective: a trial is a barrier, then 16 back-to-back barriers
 * timed on every process, the slowest process's time / 16; a tenth of the trials warm up, the
 * top and bottom 10% are dropped. It only polls: run it with no more processes than cores.
 *
 *   coll_floor [--ranks N] [--trials T] [--sizes 8,64K,...] [--csv]
 *
 * With --csv prints coll.c's CSV row (`barrier,ranks,size,median,min,mean`, us) once per size
 * of --sizes (a barrier moves no data: coll.c too prints one row per size, all alike), so that
 * bench/peers/coll.sh lays it beside the implementations as "floor". */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

#define LINE 128
#define BATCH 16

struct line {
    volatile uint64_t epoch;
    volatile double time; /* this process's time of the trial, for the slowest-of reduction */
    char pad[LINE - 16];
};

static void wait_for(struct line *l, uint64_t e)
{
    while (__atomic_load_n(&l->epoch, __ATOMIC_ACQUIRE) < e)
        __builtin_ia32_pause();
}

/* Every process's line holds `e` (each stores its own first). */
static void barrier(struct line *lines, int n, int me, uint64_t e)
{
    __atomic_store_n(&lines[me].epoch, e, __ATOMIC_RELEASE);
    for (int r = 0; r < n; r++)
        if (r != me)
            wait_for(&lines[r], e);
}

int main(int argc, char **argv)
{
    int n = 2, trials = 1000, csv = 0;
    char sizes[256] = "8";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--trials") && i + 1 < argc)
            trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            snprintf(sizes, sizeof sizes, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--csv"))
            csv = 1;
    }
    if (n < 2 || trials < 10) {
        fprintf(stderr, "usage: coll_floor [--ranks N>=2] [--trials T>=10] [--csv]\n");
        return 2;
    }
    /* Two areas: the operation's lines, and the lines of the barrier between trials. */
    struct line *op = mmap(0, 2 * n * LINE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (op == MAP_FAILED)
        return 1;
    struct line *sync = op + n;
    int me = 0;
    for (int r = 1; r < n; r++)
        if (fork() == 0) {
            me = r;
            break;
        }
    double *times = malloc(sizeof(double) * trials);
    uint64_t e = 0, s = 0;
    {
        int warm = trials / 10 < 10 ? 10 : trials / 10;
        for (int t = -warm; t < trials; t++) {
            barrier(sync, n, me, ++s);
            double t0 = now();
            for (int b = 0; b < BATCH; b++)
                barrier(op, n, me, ++e);
            sync[me].time = (now() - t0) / BATCH * 1e6;
            /* The slowest process's time: every one has stored its own before this barrier. */
            barrier(sync, n, me, ++s);
            double slowest = 0;
            for (int r = 0; r < n; r++)
                slowest = sync[r].time > slowest ? sync[r].time : slowest;
            if (t >= 0)
                times[t] = slowest;
            /* Nobody rewrites its time before everyone has read them all. */
            barrier(sync, n, me, ++s);
        }
        if (me == 0) {
            qsort(times, trials, sizeof(double), cmp_double);
            int lo = trials / 10, hi = trials - trials / 10;
            double sum = 0;
            for (int i = lo; i < hi; i++)
                sum += times[i];
            double median = times[(lo + hi) / 2], min = times[lo], mean = sum / (hi - lo);
            if (csv)
                for (char *s = strtok(sizes, ","); s; s = strtok(NULL, ","))
                    printf("barrier,%d,%ld,%.3f,%.3f,%.3f\n", n, parse_size(s), median, min, mean);
            else
                printf("barrier floor, %d ranks: median %.3f  min %.3f  mean %.3f us\n", n, median, min, mean);
        }
    }
    if (me != 0)
        _exit(0);
    while (wait(NULL) > 0) {
    }
    return 0;
}
