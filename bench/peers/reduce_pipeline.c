/* bench/peers/reduce_pipeline.c: the bare floor of a 2-rank reduce on shared memory, no MPI:
 * two processes (forked) share one mapping; the poster copies its vector of doubles cell by
 * cell into a ring of cells there and stamps each (release), the root folds each posted cell
 * with its own vector into its result and marks it read (release); the poster runs up to
 * `depth` cells ahead. That is what the board's reduce in cells does (coll/
 * board_reduce_cells.rs), so the gap to it is the library's, and the options take apart where
 * a copy or fold loses its time:
 *
 *   reduce_pipeline [--trials T] [--sizes 64K,1M] [--cell 16K] [--depth 4] [--skew S]
 *                   [--fold fused|copy] [--copy memcpy|pieces|avx] [--csv] [--ops LIST]
 *
 * --skew: where the ring begins past a page (bytes; the board's data areas begin 128 bytes into
 * a page); the vectors are malloc'd (1 MiB ones 16 bytes into a page, as coll.c's). --fold
 * fused: result = mine + cell in one pass; copy: the cell copied into the result, then mine
 * folded into it (fold_in_tree_order's order on 2 ranks). --copy: glibc's memcpy (rep movsb on
 * this EPYC from 2,112 bytes), memcpy in 2 KiB pieces (its vector loop), or an AVX2 loop of
 * non-temporal-free 32-byte loads and stores.
 *
 * Timed as bench/peers/coll.c times a collective: a trial is a barrier, then one reduce, timed
 * on both processes, the slower one's time; a tenth of the trials warm up, the top and bottom
 * 10% are dropped. Both spin: run it with a core for each (chrt -f as coll.sh's 2-rank runs).
 * With --csv prints coll.c's CSV row (`reduce,2,size,median,min,mean`, us), so that
 * bench/peers/coll.sh lays it beside the implementations as the "floor" of a 2-rank reduce;
 * --ops (coll.sh passes its list) prints nothing unless the list names reduce.
 *
 * What it showed (2 ranks, chrt, 1 MiB, load 15-20): the board's cells and this pipeline flip
 * together between two levels, run by run and even within one run (~90-115 us or ~180-280),
 * by where the VM's two cores sit: each cell's lines cross the cores twice (the poster's
 * stores take them back from the root's cache, the root's loads fetch them), and that
 * crossing is what changes. The copy routine, alignment (the ring 0, 16, 128 bytes past a
 * page), cell size (4-64 KiB) and depth moved nothing beyond that noise. */
#define _GNU_SOURCE
#include <immintrin.h>
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

struct flags {
    volatile uint64_t posted; /* poster: cells posted */
    char pad0[LINE - 8];
    volatile uint64_t read; /* root: cells read */
    char pad1[LINE - 8];
    volatile uint64_t arrive[2]; /* barrier words, one line each */
    char pad2[LINE - 16];
    volatile double time[2];
    char pad3[LINE - 16];
};

static void wait_at_least(volatile uint64_t *w, uint64_t v)
{
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) < v)
        __builtin_ia32_pause();
}

enum copy_kind { MEMCPY, PIECES, AVX };
static enum copy_kind copy_kind = MEMCPY;

__attribute__((target("avx2"))) static void copy_avx(char *dst, const char *src, size_t n)
{
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(src + i + 64));
        __m256i d = _mm256_loadu_si256((const __m256i *)(src + i + 96));
        _mm256_storeu_si256((__m256i *)(dst + i), a);
        _mm256_storeu_si256((__m256i *)(dst + i + 32), b);
        _mm256_storeu_si256((__m256i *)(dst + i + 64), c);
        _mm256_storeu_si256((__m256i *)(dst + i + 96), d);
    }
    memcpy(dst + i, src + i, n - i);
}

static void copy(char *dst, const char *src, size_t n)
{
    switch (copy_kind) {
    case MEMCPY: memcpy(dst, src, n); break;
    case PIECES:
        for (size_t at = 0; at < n; at += 2048) memcpy(dst + at, src + at, n - at < 2048 ? n - at : 2048);
        break;
    case AVX: copy_avx(dst, src, n); break;
    }
}

static void fold(double *into, const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++) into[i] = a[i] + b[i];
}

static void fold_in(double *into, const double *a, size_t n)
{
    for (size_t i = 0; i < n; i++) into[i] = a[i] + into[i];
}

int main(int argc, char **argv)
{
    int trials = 200, csv = 0, depth = 4, fused = 1;
    long cell = 16 << 10, skew = 128;
    const char *sizes = "64K,1M";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--cell") && i + 1 < argc) cell = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--depth") && i + 1 < argc) depth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--skew") && i + 1 < argc) skew = atol(argv[++i]);
        else if (!strcmp(argv[i], "--fold") && i + 1 < argc) fused = !strcmp(argv[++i], "fused");
        else if (!strcmp(argv[i], "--copy") && i + 1 < argc) {
            const char *c = argv[++i];
            copy_kind = !strcmp(c, "pieces") ? PIECES : !strcmp(c, "avx") ? AVX : MEMCPY;
        } else if (!strcmp(argv[i], "--csv")) csv = 1;
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
            char ops[256];
            snprintf(ops, sizeof ops, ",%s,", argv[++i]);
            if (!strstr(ops, ",reduce,")) return 0;
        }
        else {
            fprintf(stderr, "usage: %s [--trials T] [--sizes 64K,1M] [--cell 16K] [--depth 4] [--skew S] "
                            "[--fold fused|copy] [--copy memcpy|pieces|avx] [--csv] [--ops LIST]\n", argv[0]);
            return 2;
        }
    }
    cell &= ~7L;
    if (cell <= 0 || depth <= 0 || skew < 0 || skew >= 4096) {
        fprintf(stderr, "reduce_pipeline: bad --cell, --depth or --skew\n");
        return 2;
    }
    size_t ring_bytes = 4096 + (size_t)cell * depth + 4096;
    char *shared = mmap(NULL, 4096 + ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(shared, 0, 4096 + ring_bytes);
    struct flags *f = (struct flags *)shared;
    char *ring = shared + 4096 + skew;
    int warm = trials / 10 < 10 ? 10 : trials / 10;
    double *times = malloc(sizeof(double) * trials);

    pid_t child = fork();
    int me = child == 0 ? 1 : 0;
    uint64_t epoch = 0, cells_done = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t len = (size_t)parse_size(tok) & ~7UL, n = len / 8;
        double *mine = malloc(len + 8), *result = malloc(len + 8);
        for (size_t i = 0; i < n; i++) mine[i] = (double)(i % 1000) + me, result[i] = 0;
        for (int t = 0; t < warm + trials; t++) {
            /* barrier */
            epoch++;
            __atomic_store_n(&f->arrive[me], epoch, __ATOMIC_RELEASE);
            wait_at_least(&f->arrive[1 - me], epoch);
            double start = now();
            for (size_t at = 0; at < len; at += cell) {
                size_t part = len - at < (size_t)cell ? len - at : (size_t)cell;
                char *slot = ring + (cells_done % depth) * cell;
                if (me == 1) {
                    if (cells_done >= (uint64_t)depth) wait_at_least(&f->read, cells_done - depth + 1);
                    copy(slot, (const char *)mine + at, part);
                    __atomic_store_n(&f->posted, cells_done + 1, __ATOMIC_RELEASE);
                } else {
                    wait_at_least(&f->posted, cells_done + 1);
                    double *into = (double *)((char *)result + at);
                    if (fused) fold(into, (const double *)((char *)mine + at), (const double *)slot, part / 8);
                    else {
                        memcpy(into, slot, part);
                        fold_in(into, (const double *)((char *)mine + at), part / 8);
                    }
                    __atomic_store_n(&f->read, cells_done + 1, __ATOMIC_RELEASE);
                }
                cells_done++;
            }
            f->time[me] = now() - start;
            /* both times in: a second barrier */
            epoch++;
            __atomic_store_n(&f->arrive[me], epoch, __ATOMIC_RELEASE);
            wait_at_least(&f->arrive[1 - me], epoch);
            if (t >= warm) times[t - warm] = f->time[0] > f->time[1] ? f->time[0] : f->time[1];
        }
        if (me == 0) {
            for (size_t i = 0; i < n; i++)
                if (result[i] != 2.0 * (double)(i % 1000) + 1) {
                    fprintf(stderr, "reduce_pipeline: wrong result at %zu: %g\n", i, result[i]);
                    return 1;
                }
            qsort(times, trials, sizeof(double), cmp_double);
            int lo = trials / 10, hi = trials - trials / 10;
            double sum = 0;
            for (int i = lo; i < hi; i++) sum += times[i];
            double med = times[(lo + hi) / 2] * 1e6, min = times[lo] * 1e6, mean = sum / (hi - lo) * 1e6;
            if (csv) printf("reduce,2,%zu,%.2f,%.2f,%.2f\n", len, med, min, mean);
            else printf("reduce_pipeline 2 ranks %8zu B: median %9.2f us  min %9.2f  mean %9.2f\n", len, med, min, mean);
            fflush(stdout);
        }
        free(mine);
        free(result);
    }
    if (me == 1) _exit(0);
    waitpid(child, NULL, 0);
    return 0;
}
