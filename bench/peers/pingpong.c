/*
 * pingpong.c: the MPI peers of bb-bench (MPICH, Open MPI), with bb-bench's methodology so
 * the figures can sit in one table (ARCHITECTURE.md, "How we measure"):
 *
 *   - warm-up trials first (a tenth of the trials, at least 10), untimed;
 *   - at least 100 timed trials per size (default 200), clock_gettime(CLOCK_MONOTONIC);
 *   - drop the top and bottom 10%, report median, min (best for rates) and mean;
 *   - latency: MPI_Send/MPI_Recv ping-pong between ranks 0 and 1, one-way = round trip / 2,
 *     sizes 0 B and 1 B..4 MiB, min(16, 64 KiB / size) round trips per trial (at least 1);
 *   - bandwidth: rank 0 starts a window of 64 MPI_Isend and waits for them, rank 1 has posted
 *     64 MPI_Irecv into 64 distinct buffers (as bb-bench must in Rust) and answers with one
 *     empty ack; GB/s = window x size / trial time / 1e9; sizes 1 B..4 MiB.
 *   - threads (MPI_THREAD_MULTIPLE): rank 0 pings from one thread, two threads of rank 1 each
 *     receive their own tag and answer; one-way = round trip / 2, reported like latency. Three
 *     threads wait on two engines: this measures whether waiting threads hand over the core
 *     and the engine, or spin against each other.
 *
 * Usage: pingpong latency|bandwidth|threads [--trials N] [--max-size BYTES] [--sizes a,b,c]
 *                                   [--window W] [--csv]
 * CSV: size_bytes,oneway_us_median,oneway_us_min,oneway_us_mean
 *   or size_bytes,gbps_median,gbps_best,gbps_mean
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { DATA_TAG = 1, ACK_TAG = 2, MAX_SIZES = 64, MIN_TRIALS = 100 };
static const unsigned char PAYLOAD_BYTE = 0xa5;

struct options {
    int bandwidth; /* 0: latency, 1: bandwidth */
    int threads;   /* latency with two answering threads on rank 1 */
    int trials;
    long max_size;
    long sizes[MAX_SIZES];
    int nsizes; /* 0: default list */
    int window;
    int csv;
};

struct summary {
    double median, min, mean;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Same as bb-bench's stats::trimmed: sort, drop floor(n / 10) at each end, summarise the rest. */
static struct summary trimmed(double *samples, int n) {
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    int cut = n / 10, kept = n - 2 * cut, mid = kept / 2;
    double *k = samples + cut, sum = 0;
    for (int i = 0; i < kept; i++) sum += k[i];
    struct summary s;
    s.median = kept % 2 ? k[mid] : (k[mid - 1] + k[mid]) / 2;
    s.min = k[0];
    s.mean = sum / kept;
    return s;
}

/* 4 significant digits without exponent, like bb-bench's table::significant. */
static void print_sig(double x) {
    if (x == 0 || !isfinite(x)) {
        printf("%g", x);
        return;
    }
    int decimals = 3 - (int)floor(log10(fabs(x)));
    if (decimals < 0) decimals = 0;
    if (decimals > 12) decimals = 12;
    printf("%.*f", decimals, x);
}

static void print_human_size(long n) {
    char text[32];
    if (n >= 1 << 20 && n % (1 << 20) == 0) snprintf(text, sizeof text, "%ld MiB", n >> 20);
    else if (n >= 1 << 10 && n % (1 << 10) == 0) snprintf(text, sizeof text, "%ld KiB", n >> 10);
    else snprintf(text, sizeof text, "%ld B", n);
    printf("%11s", text);
}

static void die(const char *msg) {
    fprintf(stderr, "pingpong: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* A size as bb-bench takes it: bytes, or with a K, M or G suffix (binary). "1M" read by atol
 * was 1 byte, which silently cut the peers' tables down to sizes 0 and 1. */
static long parse_size(const char *text) {
    char *end = NULL;
    long value = strtol(text, &end, 10);
    int shift = 0;
    if (end && (*end == 'K' || *end == 'k')) shift = 10, end++;
    else if (end && (*end == 'M' || *end == 'm')) shift = 20, end++;
    else if (end && (*end == 'G' || *end == 'g')) shift = 30, end++;
    if (end == text || (end && *end != '\0') || value < 0) die("a size is bytes, or a number with K, M or G");
    return value << shift;
}

static void parse(int argc, char **argv, struct options *o) {
    memset(o, 0, sizeof *o);
    o->trials = 200;
    o->max_size = 4L << 20;
    o->window = 64;
    if (argc < 2)
        die("usage: pingpong latency|bandwidth|threads [--trials N] [--max-size B] [--sizes a,b] [--window W] [--csv]");
    if (strcmp(argv[1], "bandwidth") == 0) o->bandwidth = 1;
    else if (strcmp(argv[1], "threads") == 0) o->threads = 1;
    else if (strcmp(argv[1], "latency") != 0) die("first argument must be latency, bandwidth or threads");
    for (int i = 2; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--csv") == 0) o->csv = 1;
        else if (strcmp(argv[i], "--trials") == 0 && next) o->trials = atoi(argv[++i]);
        else if (strcmp(argv[i], "--max-size") == 0 && next) o->max_size = parse_size(argv[++i]);
        else if (strcmp(argv[i], "--window") == 0 && next) o->window = atoi(argv[++i]);
        else if (strcmp(argv[i], "--sizes") == 0 && next) {
            char *copy = strdup(argv[++i]), *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t && o->nsizes < MAX_SIZES; t = strtok_r(NULL, ",", &save))
                o->sizes[o->nsizes++] = parse_size(t);
            free(copy);
        } else die("unknown or incomplete option");
    }
    if (o->trials < MIN_TRIALS) die("at least 100 trials (the 10% trim needs them)");
    if (o->window < 1) die("--window must be at least 1");
}

/* The size list: explicit, or 0 (latency only) and powers of two; all capped at max_size. */
static int plan_sizes(const struct options *o, long *out) {
    int n = 0;
    if (o->nsizes) {
        for (int i = 0; i < o->nsizes; i++)
            if (o->sizes[i] >= 0 && o->sizes[i] <= o->max_size) out[n++] = o->sizes[i];
        return n;
    }
    if (!o->bandwidth) out[n++] = 0;
    for (long s = 1; s <= o->max_size && n < MAX_SIZES; s *= 2) out[n++] = s;
    return n;
}

static int latency_iters(long size) {
    long it = (64L << 10) / (size > 0 ? size : 1);
    return it < 1 ? 1 : it > 16 ? 16 : (int)it;
}

static void check_payload(const unsigned char *buf, long size, long at) {
    if (size > 0 && (buf[0] != PAYLOAD_BYTE || buf[size - 1] != PAYLOAD_BYTE)) {
        fprintf(stderr, "pingpong: payload of %ld B arrived corrupted\n", at);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* One latency size; returns one-way microseconds (rank 0's figures are the ones reported). */
static struct summary latency_size(int rank, long size, int trials, int warmup, unsigned char *sbuf,
                                   unsigned char *rbuf, double *samples) {
    int iters = latency_iters(size), peer = 1 - rank;
    for (int t = 0; t < warmup + trials; t++) {
        double start = now_s();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(sbuf, (int)size, MPI_BYTE, peer, DATA_TAG, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, DATA_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, DATA_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_BYTE, peer, DATA_TAG, MPI_COMM_WORLD);
            }
        }
        double elapsed = now_s() - start;
        if (t >= warmup) samples[t - warmup] = elapsed / iters / 2 * 1e6;
    }
    check_payload(rbuf, size, size);
    return trimmed(samples, trials);
}

/* threads: rank 1's answering thread for tag `arg` (0 or 1); it answers `rounds` pings. */
struct answerer {
    int tag;
    long size, rounds;
    unsigned char *buf;
};

static void *answer(void *arg) {
    struct answerer *a = arg;
    for (long r = 0; r < a->rounds; r++) {
        MPI_Recv(a->buf, (int)a->size, MPI_BYTE, 0, a->tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(a->buf, (int)a->size, MPI_BYTE, 0, a->tag, MPI_COMM_WORLD);
    }
    return NULL;
}

/* One threads size: rank 0 pings tags 0 and 1 in turn from one thread; rank 1 answers each
 * tag from a thread of its own. Returns one-way microseconds. */
static struct summary threads_size(int rank, long size, int trials, int warmup, unsigned char *sbuf,
                                   unsigned char *rbuf, double *samples) {
    int iters = latency_iters(size);
    long rounds = (long)(warmup + trials) * iters; /* pings per tag */
    if (rank == 1) {
        struct answerer a[2];
        pthread_t t[2];
        for (int i = 0; i < 2; i++) {
            a[i] = (struct answerer){i, size, rounds, malloc((size_t)(size > 0 ? size : 1))};
            if (!a[i].buf || pthread_create(&t[i], NULL, answer, &a[i])) die("cannot start answering threads");
        }
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL), free(a[i].buf);
        struct summary none = {0, 0, 0};
        return none;
    }
    for (int t = 0; t < warmup + trials; t++) {
        double start = now_s();
        for (int i = 0; i < iters; i++) {
            for (int tag = 0; tag < 2; tag++) {
                MPI_Send(sbuf, (int)size, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        double elapsed = now_s() - start;
        if (t >= warmup) samples[t - warmup] = elapsed / iters / 4 * 1e6;
    }
    check_payload(rbuf, size, size);
    return trimmed(samples, trials);
}

/* One bandwidth size; returns GB/s computed from the trimmed trial times. */
static struct summary bandwidth_size(int rank, long size, int trials, int warmup, int window, unsigned char *sbuf,
                                     unsigned char *rbufs, MPI_Request *reqs, double *samples) {
    long stride = size > 0 ? size : 1;
    for (int t = 0; t < warmup + trials; t++) {
        double start = now_s();
        if (rank == 0) {
            for (int w = 0; w < window; w++)
                MPI_Isend(sbuf, (int)size, MPI_BYTE, 1, DATA_TAG, MPI_COMM_WORLD, &reqs[w]);
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++)
                MPI_Irecv(rbufs + w * stride, (int)size, MPI_BYTE, 0, DATA_TAG, MPI_COMM_WORLD, &reqs[w]);
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD);
        }
        double elapsed = now_s() - start;
        if (t >= warmup) samples[t - warmup] = elapsed;
    }
    if (rank == 1) check_payload(rbufs + (window - 1) * stride, size, size);
    struct summary times = trimmed(samples, trials), rate;
    double bytes = (double)window * (double)size;
    rate.median = bytes / times.median / 1e9;
    rate.min = bytes / times.min / 1e9; /* shortest time: best rate */
    rate.mean = bytes / times.mean / 1e9;
    return rate;
}

int main(int argc, char **argv) {
    int provided, threads = argc > 1 && strcmp(argv[1], "threads") == 0;
    MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    if (threads && provided < MPI_THREAD_MULTIPLE) die("threads needs MPI_THREAD_MULTIPLE");
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    struct options o;
    parse(argc, argv, &o);
    if (ranks < 2) die("needs 2 ranks");

    long sizes[MAX_SIZES], max = 1;
    int nsizes = plan_sizes(&o, sizes);
    for (int i = 0; i < nsizes; i++) max = sizes[i] > max ? sizes[i] : max;
    int warmup = o.trials / 10 > 10 ? o.trials / 10 : 10;
    long rwidth = o.bandwidth ? o.window : 1;
    unsigned char *sbuf = malloc((size_t)max), *rbuf = calloc((size_t)rwidth, (size_t)max);
    double *samples = malloc(sizeof(double) * (size_t)o.trials);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)o.window);
    if (!sbuf || !rbuf || !samples || !reqs) die("out of memory");
    memset(sbuf, PAYLOAD_BYTE, (size_t)max);

    const char *unit = o.bandwidth ? "gbps" : "oneway_us", *best = o.bandwidth ? "best" : "min";
    if (rank == 0) {
        if (o.csv) printf("size_bytes,%s_median,%s_%s,%s_mean\n", unit, unit, best, unit);
        else printf("%11s  %12s  %12s  %12s\n", "size", o.bandwidth ? "median GB/s" : "median us",
                    o.bandwidth ? "best GB/s" : "min us", o.bandwidth ? "mean GB/s" : "mean us");
    }
    for (int i = 0; i < nsizes && rank < 2; i++) {
        struct summary s = o.bandwidth ? bandwidth_size(rank, sizes[i], o.trials, warmup, o.window, sbuf, rbuf, reqs, samples)
                            : o.threads ? threads_size(rank, sizes[i], o.trials, warmup, sbuf, rbuf, samples)
                                        : latency_size(rank, sizes[i], o.trials, warmup, sbuf, rbuf, samples);
        if (rank != 0) continue;
        if (o.csv) {
            printf("%ld,", sizes[i]);
            print_sig(s.median), printf(","), print_sig(s.min), printf(","), print_sig(s.mean), printf("\n");
        } else {
            print_human_size(sizes[i]);
            printf("  %12.4g  %12.4g  %12.4g\n", s.median, s.min, s.mean);
        }
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(sbuf), free(rbuf), free(samples), free(reqs);
    MPI_Finalize();
    return 0;
}
