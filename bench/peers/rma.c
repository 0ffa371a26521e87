/*
 * rma.c: one-sided communication timed the same way on Billboard (the MPICH-built binary with
 * our library in its place), MPICH and Open MPI (ARCHITECTURE.md, "How we measure": warm-up,
 * at least 100 timed trials, top and bottom 10% dropped, median, min and mean reported):
 *
 *   put_flush   8 B MPI_Put + MPI_Win_flush under MPI_Win_lock_all, rank 0 to rank 1 (which
 *               waits in MPI_Barrier meanwhile); per operation.
 *   fetch_op    8 B MPI_Fetch_and_op (MPI_SUM on a long) + MPI_Win_flush, same setting.
 *   cas         8 B MPI_Compare_and_swap + MPI_Win_flush, same setting.
 *   lock        MPI_Win_lock(EXCLUSIVE, rank 0) + an 8 B MPI_Accumulate (MPI_SUM) +
 *               MPI_Win_unlock by every rank at once (an empty epoch may take no lock at all);
 *               per acquisition (trial time / acquisitions of all ranks).
 *   fence       MPI_Put of SIZE bytes to the right neighbour + MPI_Win_fence, every rank;
 *               per epoch; sizes 8 B, 8 KiB, 1 MiB unless --sizes.
 *   fence_one   the same, but only rank 0 puts (to rank 1): the others only fence, so a
 *               target waits in the fence while its origin's put completes.
 *   get_flush   MPI_Get of SIZE bytes + MPI_Win_flush under MPI_Win_lock_all, rank 0 from
 *               rank 1 (waiting in MPI_Barrier); per operation; sizes as for fence.
 *   put_bytes   the same with MPI_Put of SIZE bytes.
 *   acc_flush   the same with MPI_Accumulate (MPI_SUM) of SIZE / 8 longs.
 *   busy_fop    as fetch_op, but rank 1 computes meanwhile, in slices of --slice us (default
 *               20) with an MPI_Iprobe between them (NWChem's pattern: ARMCI-MPI's task
 *               counter taken by MPI_Fetch_and_op + MPI_Win_flush while the target runs
 *               DGEMMs); its size column is the slice. Per operation.
 * Windows (--window KIND) come from MPI_Win_allocate (allocate, the default) or
 * MPI_Win_allocate_shared (allocate_shared; the ranks must share a node), or are the
 * program's own memory given to MPI_Win_create: malloc'd (create; --create says the same),
 * on main's stack (stack), a shared mapping of a file (file) or anonymous shared memory
 * (shared); or malloc'd memory attached to MPI_Win_create_dynamic (dynamic: displacements are
 * the targets' addresses, gathered once), or MPI_Alloc_mem's memory attached (dynamic_alloc). A trial batches min(16, 64 KiB / size) operations
 * (at least 1). The origin buffers (puts' sources) are malloc'd, or MPI_Alloc_mem's with
 * --origin alloc_mem (memory the target may map: Billboard's arena, win/arena.rs).
 *
 * Usage: rma put_flush|fetch_op|cas|lock|fence|fence_one|get_flush|put_bytes|acc_flush|busy_fop [--trials N]
 *            [--sizes 8,8K,1M] [--window allocate|allocate_shared|create|stack|file|shared|dynamic|dynamic_alloc] [--slice US]
 *            [--origin malloc|alloc_mem]
 * Prints: test size_bytes median_us min_us mean_us
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

static long parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    return v;
}

static void report(const char *test, long size, double *t, int trials, int per_trial)
{
    qsort(t, (size_t)trials, sizeof *t, cmp_double);
    int lo = trials / 10, hi = trials - trials / 10;
    double sum = 0;
    for (int i = lo; i < hi; i++)
        sum += t[i];
    double scale = 1e6 / per_trial;
    printf("%-10s %8ld %10.3f %10.3f %10.3f\n", test, size, t[(lo + hi) / 2] * scale, t[lo] * scale,
           sum / (hi - lo) * scale);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *test = argc > 1 ? argv[1] : "put_flush";
    int trials = 200;
    long sizes[16] = {8, 8 << 10, 1 << 20};
    int nsizes = 3;
    const char *kind = "allocate";
    double slice_us = 20;
    int origin_alloc_mem = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--create"))
            kind = "create";
        else if (!strcmp(argv[i], "--window") && i + 1 < argc)
            kind = argv[++i];
        else if (!strcmp(argv[i], "--origin") && i + 1 < argc)
            origin_alloc_mem = !strcmp(argv[++i], "alloc_mem");
        else if (!strcmp(argv[i], "--slice") && i + 1 < argc)
            slice_us = atof(argv[++i]);
        else if (!strcmp(argv[i], "--trials") && i + 1 < argc)
            trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            nsizes = 0;
            for (char *p = strtok(argv[++i], ","); p && nsizes < 16; p = strtok(NULL, ","))
                sizes[nsizes++] = parse_size(p);
        }
    }
    if (trials < 100)
        trials = 100;
    int warm = trials / 10 < 10 ? 10 : trials / 10;
    double *t = malloc(sizeof(double) * (size_t)trials);
    long maxsize = 8;
    for (int s = 0; s < nsizes; s++)
        if (sizes[s] > maxsize)
            maxsize = sizes[s];
    char *mem = NULL, *src = NULL;
    if (origin_alloc_mem)
        MPI_Alloc_mem(maxsize, MPI_INFO_NULL, &src);
    else
        src = malloc((size_t)maxsize);
    memset(src, 0, (size_t)maxsize);
    /* Room on main's stack for --window stack (a byte otherwise). */
    char on_stack[!strcmp(kind, "stack") ? maxsize : 1];
    MPI_Aint *at = calloc((size_t)n, sizeof(MPI_Aint)); /* each target's displacement of byte 0 */
    MPI_Win win;
    if (!strcmp(kind, "allocate")) {
        MPI_Win_allocate(maxsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    } else if (!strcmp(kind, "allocate_shared")) {
        MPI_Win_allocate_shared(maxsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    } else if (!strcmp(kind, "dynamic") || !strcmp(kind, "dynamic_alloc")) {
        if (!strcmp(kind, "dynamic"))
            mem = malloc((size_t)maxsize);
        else
            MPI_Alloc_mem(maxsize, MPI_INFO_NULL, &mem);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, mem, maxsize);
        MPI_Aint mine;
        MPI_Get_address(mem, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, at, 1, MPI_AINT, MPI_COMM_WORLD);
    } else {
        if (!strcmp(kind, "create"))
            mem = malloc((size_t)maxsize);
        else if (!strcmp(kind, "stack"))
            mem = on_stack;
        else if (!strcmp(kind, "shared"))
            mem = mmap(NULL, (size_t)maxsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        else if (!strcmp(kind, "file")) {
            FILE *f = tmpfile();
            if (!f || ftruncate(fileno(f), maxsize) != 0) {
                fprintf(stderr, "rma: no temporary file for --window file\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            mem = mmap(NULL, (size_t)maxsize, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
        }
        if (!mem || mem == MAP_FAILED) {
            fprintf(stderr, "rma: unknown window kind %s, or no memory for it\n", kind);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Win_create(mem, maxsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    memset(mem, 0, (size_t)maxsize);
    if (me == 0)
        printf("%-10s %8s %10s %10s %10s   (%d ranks, %d trials)\n", "test", "bytes", "median_us", "min_us",
               "mean_us", n, trials);

    if (!strcmp(test, "put_flush") || !strcmp(test, "fetch_op") || !strcmp(test, "cas")) {
        int batch = 16;
        MPI_Win_lock_all(0, win);
        if (me == 0 && n > 1) {
            long one = 1, got, cmp = 0;
            for (int k = 0; k < warm + trials; k++) {
                double t0 = now_s();
                for (int b = 0; b < batch; b++) {
                    if (test[0] == 'p')
                        MPI_Put(src, 8, MPI_BYTE, 1, at[1], 8, MPI_BYTE, win);
                    else if (test[0] == 'f')
                        MPI_Fetch_and_op(&one, &got, MPI_LONG, 1, at[1], MPI_SUM, win);
                    else
                        MPI_Compare_and_swap(&one, &cmp, &got, MPI_LONG, 1, at[1], win);
                    MPI_Win_flush(1, win);
                }
                if (k >= warm)
                    t[k - warm] = now_s() - t0;
            }
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 0)
            report(test, 8, t, trials, batch);
    } else if (!strcmp(test, "busy_fop")) {
        int batch = 16;
        MPI_Win_lock_all(0, win);
        if (me == 0 && n > 1) {
            long one = 1, got;
            for (int k = 0; k < warm + trials; k++) {
                double t0 = now_s();
                for (int b = 0; b < batch; b++) {
                    MPI_Fetch_and_op(&one, &got, MPI_LONG, 1, at[1], MPI_SUM, win);
                    MPI_Win_flush(1, win);
                }
                if (k >= warm)
                    t[k - warm] = now_s() - t0;
            }
            MPI_Send(&one, 1, MPI_LONG, 1, 7, MPI_COMM_WORLD);
        } else if (me == 1) {
            /* Computes until rank 0 says it is done, looking with MPI_Iprobe between slices. */
            volatile double x = 1.0;
            int done = 0;
            long word;
            while (!done) {
                double end = now_s() + slice_us * 1e-6;
                while (now_s() < end)
                    for (int i = 0; i < 100; i++)
                        x = x * 1.0000001 + 1e-9;
                MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &done, MPI_STATUS_IGNORE);
            }
            MPI_Recv(&word, 1, MPI_LONG, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 0)
            report(test, (long)slice_us, t, trials, batch);
    } else if (!strcmp(test, "lock")) {
        int batch = 16;
        for (int k = 0; k < warm + trials; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now_s();
            long one = 1;
            for (int b = 0; b < batch; b++) {
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
                MPI_Accumulate(&one, 1, MPI_LONG, 0, at[0], 1, MPI_LONG, MPI_SUM, win);
                MPI_Win_unlock(0, win);
            }
            /* The trial ends when the last rank is through. */
            MPI_Barrier(MPI_COMM_WORLD);
            if (k >= warm)
                t[k - warm] = now_s() - t0;
        }
        if (me == 0)
            report(test, 0, t, trials, batch * n);
    } else if (!strcmp(test, "fence") || !strcmp(test, "fence_one")) {
        int right = (me + 1) % n, puts = !strcmp(test, "fence") || me == 0;
        for (int s = 0; s < nsizes; s++) {
            long size = sizes[s];
            int batch = size >= 65536 ? 1 : (int)(65536 / size > 16 ? 16 : 65536 / size);
            MPI_Win_fence(0, win);
            for (int k = 0; k < warm + trials; k++) {
                double t0 = now_s();
                for (int b = 0; b < batch; b++) {
                    if (puts)
                        MPI_Put(src, (int)size, MPI_BYTE, right, at[right], (int)size, MPI_BYTE, win);
                    MPI_Win_fence(0, win);
                }
                if (k >= warm)
                    t[k - warm] = now_s() - t0;
            }
            if (me == 0)
                report(test, size, t, trials, batch);
        }
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    } else if (!strcmp(test, "get_flush") || !strcmp(test, "put_bytes") || !strcmp(test, "acc_flush")) {
        char *dst = calloc(1, (size_t)maxsize);
        MPI_Win_lock_all(0, win);
        for (int s = 0; s < nsizes; s++) {
            long size = sizes[s];
            int batch = size >= 65536 ? 1 : (int)(65536 / size > 16 ? 16 : 65536 / size);
            if (me == 0 && n > 1) {
                for (int k = 0; k < warm + trials; k++) {
                    double t0 = now_s();
                    for (int b = 0; b < batch; b++) {
                        if (test[0] == 'g')
                            MPI_Get(dst, (int)size, MPI_BYTE, 1, at[1], (int)size, MPI_BYTE, win);
                        else if (test[0] == 'p')
                            MPI_Put(src, (int)size, MPI_BYTE, 1, at[1], (int)size, MPI_BYTE, win);
                        else
                            MPI_Accumulate(src, (int)(size / 8), MPI_LONG, 1, at[1], (int)(size / 8), MPI_LONG, MPI_SUM,
                                           win);
                        MPI_Win_flush(1, win);
                    }
                    if (k >= warm)
                        t[k - warm] = now_s() - t0;
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (me == 0)
                report(test, size, t, trials, batch);
        }
        MPI_Win_unlock_all(win);
        free(dst);
    } else if (me == 0) {
        fprintf(stderr, "unknown test %s\n", test);
    }
    if (!strcmp(kind, "dynamic") || !strcmp(kind, "dynamic_alloc"))
        MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    if (!strcmp(kind, "create") || !strcmp(kind, "dynamic"))
        free(mem);
    else if (!strcmp(kind, "dynamic_alloc"))
        MPI_Free_mem(mem);
    else if (!strcmp(kind, "shared") || !strcmp(kind, "file"))
        munmap(mem, (size_t)maxsize);
    free(at);
    if (origin_alloc_mem)
        MPI_Free_mem(src);
    else
        free(src);
    free(t);
    MPI_Finalize();
    return 0;
}
