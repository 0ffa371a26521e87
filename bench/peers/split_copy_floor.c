/* bench/peers/split_copy_floor.c: the floor of a fence put copied by two, no MPI (issue 18,
 * "put + fence 1 MiB+"): what a target waiting in the fence could save by copying part of the
 * origin's put with memcpy, where it maps the origin's buffer (MPI_Alloc_mem's memory file)
 * and its own window part. Two processes (fork) share a source (a memfd, as the arena) and a
 * destination (a shared mapping, as a window part), both touched first. Per size, rounds
 * alternate:
 *   alone   the origin copies all `size` bytes (the helper spins on the go word, as a target
 *           in a fence);
 *   split   the origin stores the go word, copies the front `1 - share` of the bytes, then
 *           waits for the helper's done word; the helper, spinning on the go word, copies the
 *           back `share` and stores done (the handshake a fence's split would pay, no more);
 *   both    each process copies its own `size` bytes at once (rma.c's fence: every rank puts,
 *           so no core waits), timed at the origin.
 * Trials as memcpy_floor.c (a tenth warm up, top and bottom 10 % dropped); prints per size the
 * median us of each and split / alone.
 *
 *   split_copy_floor [--trials T] [--sizes 256K,1M,4M] [--share 0.5] [--rounds R] */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

struct ctl {
    _Alignas(128) atomic_long go;    /* origin: trial number | mode << 48 */
    _Alignas(128) atomic_long done;  /* helper: the trial it finished */
    _Alignas(128) long size, cut, quit;
};

enum { ALONE = 1, SPLIT = 2, BOTH = 3 };

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_trimmed(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmpd);
    int lo = n / 10, hi = n - n / 10;
    return t[(lo + hi) / 2];
}

int main(int argc, char **argv)
{
    const char *sizes = "256K,1M,4M";
    int trials = 200, rounds = 5;
    double share = 0.5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--share") && i + 1 < argc) share = atof(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    }
    if (trials < 10) trials = 10;
    long maxsize = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", sizes);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
        if (parse_size(s) > maxsize) maxsize = parse_size(s);
    long room = (maxsize + 4095) & ~4095L;
    int fd = memfd_create("split_copy_floor", 0);
    if (fd < 0 || ftruncate(fd, room) != 0) { perror("memfd"); return 1; }
    char *src = mmap(NULL, room, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char *dst = mmap(NULL, room, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    /* The helper's own put for BOTH: its source and destination. */
    char *src2 = mmap(NULL, room, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *dst2 = mmap(NULL, room, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct ctl *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (src == MAP_FAILED || dst == MAP_FAILED || src2 == MAP_FAILED || dst2 == MAP_FAILED || c == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(src, 1, room), memset(dst, 0, room), memset(src2, 2, room), memset(dst2, 0, room);
    pid_t helper = fork();
    if (helper == 0) {
        long seen = 0;
        for (;;) {
            long g;
            while ((g = atomic_load_explicit(&c->go, memory_order_acquire)) == seen)
                ;
            seen = g;
            if (c->quit) _exit(0);
            int mode = (int)(g >> 48);
            if (mode == SPLIT)
                memcpy(dst + c->cut, src + c->cut, (size_t)(c->size - c->cut));
            else if (mode == BOTH)
                memcpy(dst2, src2, (size_t)c->size);
            atomic_store_explicit(&c->done, g, memory_order_release);
        }
    }
    double *t[4];
    for (int m = 1; m <= 3; m++) t[m] = malloc(sizeof(double) * (size_t)trials * (size_t)rounds);
    printf("%-8s %10s %10s %10s %12s   (us, median of %d rounds x %d trials, share %.2f)\n", "size", "alone",
           "split", "both", "split/alone", rounds, trials, share);
    long trial = 0;
    snprintf(buf, sizeof buf, "%s", sizes);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
        long size = parse_size(s);
        c->size = size;
        c->cut = ((long)((double)size * (1 - share)) + 63) & ~63L;
        if (c->cut > size) c->cut = size;
        int warm = trials / 10;
        for (int r = 0; r < rounds; r++)
            for (int m = 1; m <= 3; m++)
                for (int k = 0; k < warm + trials; k++) {
                    long g = (++trial) | ((long)m << 48);
                    double t0 = now_us();
                    atomic_store_explicit(&c->go, g, memory_order_release);
                    memcpy(dst, src, (size_t)(m == SPLIT ? c->cut : size));
                    while (atomic_load_explicit(&c->done, memory_order_acquire) != g)
                        ;
                    double dt = now_us() - t0;
                    if (k >= warm) t[m][r * trials + k - warm] = dt;
                }
        double a = median_trimmed(t[ALONE], trials * rounds), sp = median_trimmed(t[SPLIT], trials * rounds),
               b = median_trimmed(t[BOTH], trials * rounds);
        printf("%-8s %10.2f %10.2f %10.2f %12.2f\n", s, a, sp, b, sp / a);
        fflush(stdout);
    }
    c->quit = 1;
    atomic_store_explicit(&c->go, ++trial, memory_order_release);
    waitpid(helper, NULL, 0);
    return 0;
}
