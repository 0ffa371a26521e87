/* bench/peers/memcpy_floor.c: the floor of a large collective on one host, no MPI: one process
 * copies a buffer of each size into another with memcpy (both touched first, so no page fault
 * is timed). At 1 MiB on this machine a collective's cost is the bytes each rank reads and
 * writes, so a reduction or broadcast is best put as a count of such copies. Timed as
 * bench/peers/coll.c times a collective: a trial is `batch` back-to-back copies (min(16,
 * 64 KiB / size), at least one) / batch; a tenth of the trials warm up, the top and bottom 10%
 * are dropped.
 *
 *   memcpy_floor [--trials T] [--sizes 8K,64K,1M] [--csv]
 *
 * With --csv prints coll.c's CSV row (`memcpy,1,size,median,min,mean`, us) once per size, so
 * that bench/peers/coll.sh lays it beside the implementations of the same round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor.h"

int main(int argc, char **argv)
{
    const char *sizes = "1M";
    int trials = 200, csv = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv")) csv = 1;
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) i++; /* coll.sh passes coll.c's options */
    }
    if (trials < 10) trials = 10;
    if (csv) printf("op,ranks,size_bytes,us_median,us_min,us_mean\n");
    double *times = malloc(sizeof(double) * trials);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", sizes);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
        long bytes = parse_size(s);
        if (bytes < 1) bytes = 1;
        /* Page-aligned: two heap blocks a few bytes apart modulo 4 KiB make AMD's `rep movsb`
         * (glibc's memcpy here) several times slower, which is no floor. */
        long room = (bytes + 4095) & ~4095L;
        char *from = aligned_alloc(4096, room), *to = aligned_alloc(4096, room);
        memset(from, 1, bytes);
        memset(to, 2, bytes);
        long batch = bytes >= (64 << 10) ? 1 : (64 << 10) / bytes;
        if (batch > 16) batch = 16;
        int warm = trials / 10 < 10 ? 10 : trials / 10;
        for (int t = -warm; t < trials; t++) {
            double t0 = now();
            for (long b = 0; b < batch; b++) {
                memcpy(to, from, bytes);
                __asm__ volatile("" ::"r"(to) : "memory");
            }
            if (t >= 0) times[t] = (now() - t0) / batch * 1e6;
        }
        qsort(times, trials, sizeof(double), cmp_double);
        int lo = trials / 10, hi = trials - trials / 10;
        double sum = 0;
        for (int i = lo; i < hi; i++) sum += times[i];
        double median = times[(lo + hi) / 2], min = times[lo], mean = sum / (hi - lo);
        if (csv) printf("memcpy,1,%ld,%.3f,%.3f,%.3f\n", bytes, median, min, mean);
        else printf("memcpy %10ld B: median %.3f us, min %.3f, mean %.3f\n", bytes, median, min, mean);
        free(from);
        free(to);
    }
    free(times);
    return 0;
}
