/* bench/peers/floor.h: what the bare floors of coll.sh (coll_floor.c, memcpy_floor.c,
 * reduce_pipeline.c) share with coll.c: its clock, its sort of trial times, and its sizes
 * (a number, then K, M or G). */
#ifndef BB_BENCH_FLOOR_H
#define BB_BENCH_FLOOR_H

#include <stdlib.h>
#include <time.h>

static inline double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline long parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': return v << 10;
    case 'm': case 'M': return v << 20;
    case 'g': case 'G': return v << 30;
    default: return v;
    }
}

#endif
