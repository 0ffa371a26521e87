/* bench/peers/ring_floor.c: the bare floors of issue 20's ring target (4 ranks on 2 cores,
 * shared memory), with no library at all.
 *
 *   ring_floor flag ROUNDS          two processes pinned to CPUs 0 and 1 bounce one counter each
 *                                   (own 128-byte line, Release store, Acquire spin): the one-way
 *                                   time of a cache line between the two vCPUs, which says where
 *                                   the hypervisor placed them (~0.05 or ~0.19 us on this VM)
 *   ring_floor ring N ROUNDS SPIN [futex]
 *                                   N processes, not pinned, a token round the ring: rank r
 *                                   waits for r-1's counter to reach the round, then bumps its
 *                                   own; a waiter spins SPIN pauses, then sched_yield()s between
 *                                   looks (SPIN 0: yields at once), or with `futex` sleeps on a
 *                                   futex beside the counter that the writer wakes when the
 *                                   waiter said it sleeps (the billboard's sleep word, bare).
 *                                   Per-hop us = round / N.
 *
 * Prints "flag_oneway_us X" or "ring_hop_us X" (median of 11 trials after 2 warm-ups).
 * Build: cc -O2 -o /tmp/ring_floor bench/peers/ring_floor.c */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINE 128
#define TRIALS 11
#define WARMUP 2
#define MAXN 64

struct word {
    _Alignas(LINE) _Atomic uint64_t v;
    _Atomic uint32_t sleeping; /* the waiter on v sleeps on this futex word */
    char pad[LINE - sizeof(uint64_t) - sizeof(uint32_t)];
};

static int use_futex;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) {
        perror("sched_setaffinity");
        exit(1);
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Waits until w->v >= want: SPIN pauses between yields or futex sleeps (spin < 0: spins only). */
static void wait_for(struct word *w, uint64_t want, long spin) {
    for (;;) {
        for (long i = 0; spin < 0 || i <= spin; i++) {
            if (atomic_load_explicit(&w->v, memory_order_acquire) >= want) return;
            __builtin_ia32_pause();
        }
        if (!use_futex) {
            sched_yield();
            continue;
        }
        atomic_store_explicit(&w->sleeping, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&w->v, memory_order_seq_cst) < want)
            syscall(SYS_futex, &w->sleeping, FUTEX_WAIT, 1, NULL, NULL, 0);
        atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
    }
}

/* Publishes k in w and wakes its waiter if it sleeps. */
static void post(struct word *w, uint64_t k) {
    if (!use_futex) {
        atomic_store_explicit(&w->v, k, memory_order_release);
        return;
    }
    /* Seq-cst: the load of `sleeping` may not pass this store (the waiter's mirror image). */
    atomic_store_explicit(&w->v, k, memory_order_seq_cst);
    if (atomic_exchange_explicit(&w->sleeping, 0, memory_order_acq_rel))
        syscall(SYS_futex, &w->sleeping, FUTEX_WAKE, 1, NULL, NULL, 0);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: ring_floor flag ROUNDS | ring N ROUNDS SPIN [futex]\n");
        return 2;
    }
    int flag = !strcmp(argv[1], "flag");
    int n = flag ? 2 : atoi(argv[2]);
    long rounds = atol(argv[flag ? 2 : 3]);
    long spin = flag ? -1 : (argc > 4 ? atol(argv[4]) : 0);
    use_futex = !flag && argc > 5 && !strcmp(argv[5], "futex");
    if (n < 2 || n > MAXN || rounds < 1) {
        fprintf(stderr, "ring_floor: 2 <= N <= %d, ROUNDS >= 1\n", MAXN);
        return 2;
    }
    struct word *w = mmap(NULL, sizeof(struct word) * MAXN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    long total = (long)(TRIALS + WARMUP) * rounds;
    for (int r = 1; r < n; r++) {
        pid_t p = fork();
        if (p < 0) {
            perror("fork");
            return 1;
        }
        if (p == 0) {
            if (flag) pin(1);
            for (long k = 1; k <= total; k++) {
                wait_for(&w[r - 1], k, spin);
                post(&w[r], k);
            }
            _exit(0);
        }
    }
    if (flag) pin(0);
    double samples[TRIALS];
    long k = 0;
    for (int t = 0; t < TRIALS + WARMUP; t++) {
        double start = now_us();
        for (long i = 0; i < rounds; i++) {
            k++;
            post(&w[0], k);
            wait_for(&w[n - 1], k, spin);
        }
        if (t >= WARMUP) samples[t - WARMUP] = (now_us() - start) / rounds / n;
    }
    while (wait(NULL) > 0) {
    }
    qsort(samples, TRIALS, sizeof samples[0], cmp);
    printf("%s %.3f\n", flag ? "flag_oneway_us" : "ring_hop_us", samples[TRIALS / 2]);
    return 0;
}
