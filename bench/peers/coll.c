/* bench/peers/coll.c: completion time of collectives (seed 000's metric, OSU style), the same
 * program on every MPI (built with each one's mpicc; the MPICH-built binary also runs unchanged
 * on Billboard's library).
 *
 *   coll [--ops reduce,allreduce,bcast,barrier,gather,allgather,scatter,alltoall,reduce_scatter,scan,
 *              gatherv,scatterv,alltoallv]
 *        [--sizes 8K,64K,1M] [--trials N] [--csv]
 *        (also ibarrier, ibcast, iallreduce: the nonblocking form started and waited for at once)
 *
 * (barrier ignores the size: one row per size, all alike; for gather, allgather, scatter and
 * alltoall the size is each rank's part, so a buffer holds ranks x size; reduce_scatter is
 * MPI_Reduce_scatter_block with the size as each rank's block, so each sends ranks x size; scan
 * is MPI_Scan of the size; gatherv, scatterv and alltoallv are the v-forms with every count the
 * size, as their plain forms)
 *
 * A trial: barrier, then `batch` back-to-back calls (min(16, 64 KiB / size), at least one)
 * timed on every rank; the trial's time is the slowest rank's time / batch (so it runs from
 * the common start until the last rank is done). A tenth of the trials (at least 10) are an
 * untimed warm-up; trials are sorted, the top and bottom 10% dropped, and the median, min and
 * mean of the rest printed. Data are doubles summed with MPI_SUM (root 0 for the rooted ones);
 * the result of the last call is checked on every rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long parse_size(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'K' || *end == 'k') v <<= 10;
    if (*end == 'M' || *end == 'm') v <<= 20;
    return v;
}

enum op { REDUCE, ALLREDUCE, BCAST, BARRIER, GATHER, ALLGATHER, SCATTER, ALLTOALL, REDUCE_SCATTER, SCAN, GATHERV, SCATTERV, ALLTOALLV,
          IBARRIER, IBCAST, IALLREDUCE };
static const char *op_names[] = {"reduce",  "allreduce", "bcast",    "barrier",        "gather",
                                 "allgather", "scatter", "alltoall", "reduce_scatter", "scan",
                                 "gatherv",   "scatterv", "alltoallv", "ibarrier", "ibcast", "iallreduce"};

/* The collectives that move parts (a part per rank on one side or both). */
static int parted(enum op op) { return (op >= GATHER && op <= ALLTOALL) || (op >= GATHERV && op <= ALLTOALLV); }

/* The blocking form whose result a nonblocking form leaves. */
static enum op blocking_form(enum op op) { return op == IBARRIER ? BARRIER : op == IBCAST ? BCAST : op == IALLREDUCE ? ALLREDUCE : op; }

/* The plain form a v-form times (every count alike, displacements one after another). */
static enum op plain(enum op op) { return op == GATHERV ? GATHER : op == SCATTERV ? SCATTER : op == ALLTOALLV ? ALLTOALL : op; }

static int *counts, *displs; /* of the v-forms: count and r x count for every rank r */

static void call(enum op op, double *send, double *recv, int count) {
    MPI_Request r;
    switch (op) {
    case IBARRIER: MPI_Ibarrier(MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); break;
    case IBCAST: MPI_Ibcast(send, count, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); break;
    case IALLREDUCE:
        MPI_Iallreduce(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        break;
    case REDUCE: MPI_Reduce(send, recv, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(send, count, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case GATHER: MPI_Gather(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, MPI_COMM_WORLD); break;
    case SCATTER: MPI_Scatter(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, MPI_COMM_WORLD); break;
    case REDUCE_SCATTER: MPI_Reduce_scatter_block(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case SCAN: MPI_Scan(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case GATHERV: MPI_Gatherv(send, count, MPI_DOUBLE, recv, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case SCATTERV: MPI_Scatterv(send, counts, displs, MPI_DOUBLE, recv, count, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case ALLTOALLV:
        MPI_Alltoallv(send, counts, displs, MPI_DOUBLE, recv, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        break;
    }
}

/* The value of element i of the part rank `from` sends to rank `to` (gather, allgather: every
 * part is `from`'s own, to = 0; scatter: from the root). */
static double part_value(int from, int to, int n, int i) { return from * n + to + 1 + i % 7; }

/* Whether the last call of a data-moving collective left every part where it belongs. */
static int check_parts(enum op op, const double *recv, int count, int rank, int n) {
    op = plain(op);
    if (op == GATHER && rank != 0) return 1;
    int parts = op == SCATTER ? 1 : n;
    for (int p = 0; p < parts; p++)
        for (int i = 0; i < count; i++) {
            double want = op == SCATTER    ? part_value(0, rank, n, i)
                          : op == ALLTOALL ? part_value(p, rank, n, i)
                                           : part_value(p, 0, n, i);
            if (recv[(long)p * count + i] != want) {
                fprintf(stderr, "coll: %s rank %d part %d element %d: %g, expected %g\n", op_names[op], rank, p, i,
                        recv[(long)p * count + i], want);
                return 0;
            }
        }
    return 1;
}

/* Whether the last call left the expected values (rank r contributes r + 1 + i % 7). */
static int check(enum op op, const double *send, const double *recv, int count, int rank, int n) {
    if (parted(op)) return check_parts(op, recv, count, rank, n);
    op = blocking_form(op);
    for (int i = 0; i < count; i++) {
        double want, got;
        if (op == BARRIER) return 1; /* nothing to check: it returned */
        if (op == BCAST) {
            want = 1 + i % 7;
            got = send[i];
        } else if (op == REDUCE_SCATTER) {
            /* This rank's block of the whole vector (element rank x count + i). */
            want = (double)n * (n + 1) / 2 + (double)n * (((long)rank * count + i) % 7);
            got = recv[i];
        } else if (op == SCAN) {
            want = (double)(rank + 1) * (rank + 2) / 2 + (double)(rank + 1) * (i % 7);
            got = recv[i];
        } else {
            if (op == REDUCE && rank != 0) return 1;
            want = (double)n * (n + 1) / 2 + (double)n * (i % 7);
            got = recv[i];
        }
        if (got != want) {
            fprintf(stderr, "coll: %s rank %d element %d: %g, expected %g\n", op_names[op], rank, i, got, want);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *ops = "reduce,allreduce";
    const char *sizes = "8K,64K,1M";
    int trials = 200, csv = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ops") && i + 1 < argc) ops = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv")) csv = 1;
    }
    if (trials < 10) trials = 10;
    if (rank == 0) {
        if (csv) printf("op,ranks,size_bytes,us_median,us_min,us_mean\n");
        else printf("%-10s %5s %10s %12s %12s %12s\n", "op", "ranks", "size", "median us", "min us", "mean us");
    }
    double *times = malloc(sizeof(double) * trials);
    counts = malloc(sizeof(int) * n);
    displs = malloc(sizeof(int) * n);
    char opbuf[256];
    snprintf(opbuf, sizeof opbuf, "%s", ops);
    for (char *o = strtok(opbuf, ","); o; o = strtok(NULL, ",")) {
        enum op op;
        if (!strcmp(o, "reduce")) op = REDUCE;
        else if (!strcmp(o, "allreduce")) op = ALLREDUCE;
        else if (!strcmp(o, "bcast")) op = BCAST;
        else if (!strcmp(o, "barrier")) op = BARRIER;
        else if (!strcmp(o, "gather")) op = GATHER;
        else if (!strcmp(o, "allgather")) op = ALLGATHER;
        else if (!strcmp(o, "scatter")) op = SCATTER;
        else if (!strcmp(o, "alltoall")) op = ALLTOALL;
        else if (!strcmp(o, "reduce_scatter")) op = REDUCE_SCATTER;
        else if (!strcmp(o, "scan")) op = SCAN;
        else if (!strcmp(o, "gatherv")) op = GATHERV;
        else if (!strcmp(o, "scatterv")) op = SCATTERV;
        else if (!strcmp(o, "alltoallv")) op = ALLTOALLV;
        else if (!strcmp(o, "ibarrier")) op = IBARRIER;
        else if (!strcmp(o, "ibcast")) op = IBCAST;
        else if (!strcmp(o, "iallreduce")) op = IALLREDUCE;
        else {
            if (rank == 0) fprintf(stderr, "coll: unknown op %s\n", o);
            MPI_Abort(MPI_COMM_WORLD, 2);
            return 2;
        }
        char sizebuf[256];
        snprintf(sizebuf, sizeof sizebuf, "%s", sizes);
        char *save;
        for (char *s = strtok_r(sizebuf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
            long bytes = parse_size(s);
            int count = (int)(bytes / sizeof(double));
            if (count < 1) count = 1;
            /* Parted collectives hold a part per rank on one side or both. */
            long whole = parted(op) || op == REDUCE_SCATTER ? (long)count * n : count;
            double *send = malloc(sizeof(double) * whole), *recv = malloc(sizeof(double) * whole);
            for (long i = 0; i < whole; i++) recv[i] = -1;
            if (parted(op))
                for (long i = 0; i < whole; i++) {
                    int to = (int)(i / count), k = (int)(i % count);
                    send[i] = plain(op) == ALLTOALL ? part_value(rank, to, n, k)
                              : plain(op) == SCATTER ? part_value(0, to, n, k)
                                              : part_value(rank, 0, n, (int)i);
                }
            else
                for (long i = 0; i < whole; i++) send[i] = (blocking_form(op) == BCAST && rank != 0) ? 0 : rank + 1 + i % 7;
            for (int r = 0; r < n; r++) counts[r] = count, displs[r] = r * count;
            long per = 65536 / (count * (long)sizeof(double));
            int batch = per < 1 ? 1 : per > 16 ? 16 : (int)per;
            int warm = trials / 10 < 10 ? 10 : trials / 10;
            for (int t = -warm; t < trials; t++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int b = 0; b < batch; b++) call(op, send, recv, count);
                double mine = (MPI_Wtime() - t0) / batch * 1e6, slowest;
                MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (t >= 0) times[t] = slowest;
            }
            if (blocking_form(op) == BCAST)
                for (int i = 0; i < count; i++) send[i] = rank == 0 ? 1 + i % 7 : 0;
            call(op, send, recv, count);
            int ok = check(op, send, recv, count, rank, n), all_ok;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all_ok) MPI_Abort(MPI_COMM_WORLD, 1);
            if (rank == 0) {
                qsort(times, trials, sizeof(double), cmp_double);
                int lo = trials / 10, hi = trials - trials / 10;
                double sum = 0;
                for (int t = lo; t < hi; t++) sum += times[t];
                double median = times[(lo + hi) / 2], mean = sum / (hi - lo);
                if (csv) printf("%s,%d,%ld,%.3f,%.3f,%.3f\n", op_names[op], n, bytes, median, times[lo], mean);
                else printf("%-10s %5d %10ld %12.2f %12.2f %12.2f\n", op_names[op], n, bytes, median, times[lo], mean);
                fflush(stdout);
            }
            free(send);
            free(recv);
        }
    }
    free(times);
    MPI_Finalize();
    return 0;
}
