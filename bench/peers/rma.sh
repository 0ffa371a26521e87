#!/usr/bin/env bash
# bench/peers/rma.sh [RESULTS_DIR]: one-sided communication (bench/peers/rma.c) on Billboard
# (the MPICH-built binary run unchanged on our library), MPICH and Open MPI, interleaved:
# ROUNDS rounds, each running every implementation one after another for every test, so a
# busy neighbour hurts all alike; each round also measures the floor (`bb-bench floor`, 8 B
# one-way through shared memory: a store and a flag). Prints per (test, ranks, size) the
# median over rounds of each run's median, and billboard / min(MPICH, Open MPI).
#
# Environment: BBRUN (default dist/bin/bbrun), BBRUN_BEFORE (another build's bbrun: a
# "before" column, same rounds), TESTS (default "put_flush:2 fetch_op:2 cas:2 lock:2 lock:8
# fence:2"; busy_fop:2 times fetch_op while the target computes in 20 us slices with
# MPI_Iprobe between them), SIZES (fence, get_flush, put_bytes, acc_flush; default 8,8K,1M), WINDOW (allocate, the default;
# allocate_shared: MPI_Win_allocate_shared; create: MPI_Win_create on malloc'd memory; stack, file, shared: on main's stack, a file's or
# anonymous shared mapping; dynamic: MPI_Win_create_dynamic + MPI_Win_attach of malloc'd; dynamic_alloc: of MPI_Alloc_mem's), ORIGIN (the origin
# buffers: malloc, the default, or alloc_mem: MPI_Alloc_mem's), TRIALS (default 200), ROUNDS (default 5),
# CHRT (default "chrt -f 10" when root, for runs with no more ranks than cores: bench/README.md,
# "On a busy machine"), RUN_TIMEOUT
# (default 120 s per run).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
RESULTS=${1:-target/bench-results/rma}
mkdir -p "$RESULTS/bin"
BBRUN=${BBRUN:-dist/bin/bbrun}
TESTS=${TESTS:-put_flush:2 fetch_op:2 cas:2 lock:2 lock:8 fence:2}
SIZES=${SIZES:-8,8K,1M}
TRIALS=${TRIALS:-200}
ROUNDS=${ROUNDS:-5}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
WINDOW=${WINDOW:-allocate}
ORIGIN=${ORIGIN:-malloc}
FLAVOR="--window $WINDOW --origin $ORIGIN"
if [ -z "${CHRT+x}" ]; then CHRT=$([ "$(id -u)" = 0 ] && echo "chrt -f 10" || echo ""); fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log() { printf 'rma.sh: %s\n' "$*" >&2; }

mpicc.mpich -O2 -o "$RESULTS/bin/rma-mpich" bench/peers/rma.c || { log "mpicc.mpich failed"; exit 1; }
mpicc.openmpi -O2 -o "$RESULTS/bin/rma-openmpi" bench/peers/rma.c 2>/dev/null || log "no Open MPI build"

: >"$RESULTS/all.txt"
run() { # name test ranks command...
    local name=$1 test=$2 np=$3 chrt=$CHRT
    shift 3
    # More ranks than cores under SCHED_FIFO starve each other (a spinning rank never gives its
    # core to one of the same priority): MPICH's lock at 8 ranks then takes minutes.
    [ "$np" -gt "$(nproc)" ] && chrt=""
    # shellcheck disable=SC2086
    timeout -k 10 "$RUN_TIMEOUT" $chrt "$@" "$test" --trials "$TRIALS" --sizes "$SIZES" $FLAVOR </dev/null 2>"$RESULTS/$name.err" |
        awk -v name="$name" -v np="$np" '$2 ~ /^[0-9]+$/ { print name, $1, np, $2, $3 }' >>"$RESULTS/all.txt" ||
        log "$name $test -n $np failed: $(tail -n 1 "$RESULTS/$name.err")"
}
for round in $(seq "$ROUNDS"); do
    log "round $round, $WINDOW windows (load $(cut -d' ' -f1-3 /proc/loadavg))"
    # shellcheck disable=SC2086
    timeout 60 $CHRT "$(dirname "$BBRUN")/bb-bench" floor --sizes 8 --csv 2>/dev/null |
        awk -F, 'NR > 1 { print "floor", "store_flag", 2, $1, $3 }' >>"$RESULTS/all.txt"
    for t in $TESTS; do
        test=${t%%:*} np=${t##*:}
        run billboard "$test" "$np" "$BBRUN" -n "$np" "$RESULTS/bin/rma-mpich"
        [ -n "${BBRUN_BEFORE:-}" ] && run before "$test" "$np" "$BBRUN_BEFORE" -n "$np" "$RESULTS/bin/rma-mpich"
        run mpich "$test" "$np" mpirun.mpich -n "$np" "$RESULTS/bin/rma-mpich"
        [ -x "$RESULTS/bin/rma-openmpi" ] &&
            run openmpi "$test" "$np" mpirun.openmpi --oversubscribe -n "$np" "$RESULTS/bin/rma-openmpi"
    done
done

# Median over rounds of each run's median, per (implementation, test, ranks, size).
awk '
    function median(key,    n, i, j, v, t) {
        n = split(vals[key], v, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { k = $2 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; order[++m] = k }; vals[$1 " " k] = vals[$1 " " k] " " $5 }
    END {
        printf "%-10s %5s %8s %10s %10s %10s %10s %8s %8s\n", "test", "ranks", "size", "before", "billboard", "MPICH", "Open MPI", "bef/best", "bb/best"
        for (i = 1; i <= m; i++) {
            k = order[i]; split(k, f, " ")
            if (f[1] == "store_flag") { printf "floor: 8 B store + flag, one-way %s us (median of rounds)\n", median("floor " k); continue }
            b = ("billboard " k in vals) ? median("billboard " k) : ""
            x = ("before " k in vals) ? median("before " k) : ""
            p = ("mpich " k in vals) ? median("mpich " k) : ""
            o = ("openmpi " k in vals) ? median("openmpi " k) : ""
            best = p == "" ? o : (o == "" || p + 0 < o + 0 ? p : o)
            r = (b == "" || best == "") ? "-" : sprintf("%.2f", b / best)
            rx = (x == "" || best == "") ? "-" : sprintf("%.2f", x / best)
            printf "%-10s %5s %8s %10s %10s %10s %10s %8s %8s\n", f[1], f[2], f[3], x == "" ? "-" : x, b == "" ? "-" : b, p == "" ? "-" : p, o == "" ? "-" : o, rx, r
        }
    }' "$RESULTS/all.txt" | tee "$RESULTS/summary.txt"
